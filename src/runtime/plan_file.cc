#include "runtime/plan_file.h"

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>

namespace kiln {

namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'P', 'L', 'A', 'N'};
constexpr uint32_t kFormat = 2;

void put_u32(std::string& s, uint32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); }
void put_str(std::string& s, const std::string& v) {
  uint64_t n = v.size();
  s.append(reinterpret_cast<const char*>(&n), 8);
  s += v;
}

// The length-prefixed field of buf[at, end) at `at` into `out`; false where it does not fit.
bool get_field(const std::string& buf, size_t& at, size_t end, std::string& out) {
  uint64_t n;
  if (end - at < 8) return false;
  std::memcpy(&n, buf.data() + at, 8);
  at += 8;
  if (n > end - at) return false;
  out.assign(buf.data() + at, n);
  at += n;
  return true;
}

uint32_t crc_of(const char* p, size_t n) {
  uLong c = crc32(0L, Z_NULL, 0);
  while (n > 0) {  // crc32 takes a uInt length
    uInt chunk = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    c = crc32(c, reinterpret_cast<const Bytef*>(p), chunk);
    p += chunk;
    n -= chunk;
  }
  return static_cast<uint32_t>(c);
}

// "1x3x224x224" ("" for a scalar).
std::string dims_text(const std::vector<int64_t>& dims) {
  std::string r;
  for (size_t d = 0; d < dims.size(); ++d) r += (d ? "x" : "") + std::to_string(dims[d]);
  return r;
}

std::string options_text(const EngineOptions& o) {
  std::ostringstream s;
  s << "precision=" << precision_name(o.precision) << "\n"
    << "cudnn_conv_path=" << cudnn_conv_path_name(o.cudnn_conv_path) << "\n"
    << "space_to_depth=" << space_to_depth_name(o.space_to_depth) << "\n"
    << "cuda_graph=" << (o.cuda_graph ? 1 : 0) << "\n"
    << "optimize=" << (o.optimize ? 1 : 0) << "\n"
    << "reuse_memory=" << (o.reuse_memory ? 1 : 0) << "\n"
    << "workspace_limit=" << o.workspace_limit << "\n";
  // precision_override=<precision>:<node name> (the name last: it may hold ':' or '=')
  for (const auto& [node, p] : o.precision_overrides)
    s << "precision_override=" << precision_name(p) << ":" << node << "\n";
  s << "time_tactics=" << (o.time_tactics ? 1 : 0) << "\n"
    << "max_tactics=" << o.max_tactics << "\n"
    << "max_tensor_bytes=" << o.max_tensor_bytes << "\n"
    << "only_profile_shapes=" << (o.only_profile_shapes ? 1 : 0) << "\n"
    << "input_format=" << input_format_name(o.input_format) << "\n";
  for (float m : o.input_mean) s << "input_mean=" << m << "\n";
  for (float d : o.input_std) s << "input_std=" << d << "\n";
  // shape_range=<min dims>:<opt dims>:<max dims>:<input name>
  for (const auto& [input, r] : o.shape_ranges)
    s << "shape_range=" << dims_text(r.min) << ":" << dims_text(r.opt) << ":" << dims_text(r.max)
      << ":" << input << "\n";
  // shape_profile=<profile index>:<dims, 1x3x224x224>:<input name>
  for (size_t k = 0; k < o.shape_profiles.size(); ++k)
    for (const auto& [input, dims] : o.shape_profiles[k])
      s << "shape_profile=" << k << ":" << dims_text(dims) << ":" << input << "\n";
  return s.str();
}

// "1x3x224x224" (or "" for a scalar) as dims.
Result<std::vector<int64_t>> parse_dims(const std::string& text) {
  std::vector<int64_t> dims;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t x = text.find('x', pos);
    if (x == std::string::npos) x = text.size();
    size_t used = 0;
    const int64_t d = std::stoll(text.substr(pos, x - pos), &used);
    if (used != x - pos || d < 0) return invalid_argument("bad dims '" + text + "'");
    dims.push_back(d);
    pos = x + 1;
  }
  return dims;
}

Status parse_options(const std::string& text, EngineOptions& o) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t eq = line.find('=');
    if (eq == std::string::npos) return invalid_argument("bad option line '" + line + "'");
    std::string k = line.substr(0, eq), v = line.substr(eq + 1);
    try {
      if (k == "precision") {
        KILN_ASSIGN_OR_RETURN(o.precision, parse_precision(v));
      } else if (k == "cudnn_conv_path") {
        KILN_ASSIGN_OR_RETURN(o.cudnn_conv_path, parse_cudnn_conv_path(v));
      } else if (k == "space_to_depth") {
        KILN_ASSIGN_OR_RETURN(o.space_to_depth, parse_space_to_depth(v));
      } else if (k == "cuda_graph")
        o.cuda_graph = v == "1";
      else if (k == "optimize")
        o.optimize = v == "1";
      else if (k == "reuse_memory")
        o.reuse_memory = v == "1";
      else if (k == "workspace_limit")
        o.workspace_limit = std::stoll(v);
      else if (k == "precision_override") {
        const size_t colon = v.find(':');
        if (colon == std::string::npos)
          return invalid_argument("bad precision_override '" + v + "'");
        KILN_ASSIGN_OR_RETURN(Precision p, parse_precision(v.substr(0, colon)));
        o.precision_overrides[v.substr(colon + 1)] = p;
      } else if (k == "time_tactics") {
        o.time_tactics = v == "1";
      } else if (k == "max_tactics") {
        o.max_tactics = std::stoi(v);
      } else if (k == "max_tensor_bytes") {
        o.max_tensor_bytes = std::stoll(v);
      } else if (k == "only_profile_shapes") {
        o.only_profile_shapes = v == "1";
      } else if (k == "input_format") {
        KILN_ASSIGN_OR_RETURN(o.input_format, parse_input_format(v));
      } else if (k == "input_mean") {
        o.input_mean.push_back(std::stof(v));
      } else if (k == "input_std") {
        o.input_std.push_back(std::stof(v));
      } else if (k == "shape_range") {
        // min:opt:max:name (the name last: it may hold ':')
        size_t at[3];
        size_t from = 0;
        for (size_t& a : at) {
          a = v.find(':', from);
          if (a == std::string::npos) return invalid_argument("bad shape_range '" + v + "'");
          from = a + 1;
        }
        ShapeRange r;
        KILN_ASSIGN_OR_RETURN(r.min, parse_dims(v.substr(0, at[0])));
        KILN_ASSIGN_OR_RETURN(r.opt, parse_dims(v.substr(at[0] + 1, at[1] - at[0] - 1)));
        KILN_ASSIGN_OR_RETURN(r.max, parse_dims(v.substr(at[1] + 1, at[2] - at[1] - 1)));
        o.shape_ranges[v.substr(at[2] + 1)] = r;
      } else if (k == "shape_profile") {
        const size_t a = v.find(':');
        const size_t b = a == std::string::npos ? a : v.find(':', a + 1);
        if (b == std::string::npos) return invalid_argument("bad shape_profile '" + v + "'");
        const size_t index = std::stoul(v.substr(0, a));
        if (index > 1024) return invalid_argument("bad shape_profile '" + v + "'");
        KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dims, parse_dims(v.substr(a + 1, b - a - 1)));
        if (o.shape_profiles.size() <= index) o.shape_profiles.resize(index + 1);
        o.shape_profiles[index][v.substr(b + 1)] = dims;
      } else
        return invalid_argument("unknown option '" + k + "'");
    } catch (const std::exception&) {
      return invalid_argument("bad value for option '" + k + "'");
    }
  }
  return Status::ok();
}

}  // namespace

const char* kiln_version() { return KILN_VERSION; }

bool looks_like_plan(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char head[8] = {};
  return f.read(head, 8) && std::memcmp(head, kMagic, 8) == 0;
}

std::string serialize_plan(const PlanFile& plan) {
  std::string s(kMagic, 8);
  put_u32(s, kFormat);
  put_str(s, plan.kiln_version);
  put_str(s, plan.device_tag);
  put_str(s, options_text(plan.options));
  std::string tactics;
  for (const auto& [k, v] : plan.tactics) tactics += k + "\t" + v + "\n";
  put_str(s, tactics);
  std::string plans;  // each one length-prefixed
  for (const std::string& text : plan.plans) put_str(plans, text);
  put_str(s, plans);
  put_str(s, plan.onnx_bytes);
  put_u32(s, crc_of(s.data(), s.size()));
  return s;
}

Result<PlanFile> parse_plan(const std::string& bytes, const std::string& path) {
  auto bad = [&](const std::string& why) {
    return invalid_argument("plan file '" + path + "' is damaged: " + why);
  };
  if (bytes.size() < 8 + 4 + 4 || std::memcmp(bytes.data(), kMagic, 8) != 0)
    return bad("not a kiln plan (no KILNPLAN header)");
  uint32_t stored;
  std::memcpy(&stored, bytes.data() + bytes.size() - 4, 4);
  if (crc_of(bytes.data(), bytes.size() - 4) != stored) return bad("checksum mismatch");
  size_t pos = 8;
  uint32_t format;
  std::memcpy(&format, bytes.data() + pos, 4);
  pos += 4;
  if (format != kFormat)
    return invalid_argument("plan file '" + path + "' has format " + std::to_string(format) +
                            "; this kiln reads format " + std::to_string(kFormat) +
                            ": rebuild it with `kiln build`");
  const size_t end = bytes.size() - 4;
  auto get = [&](std::string& out) { return get_field(bytes, pos, end, out); };
  PlanFile p;
  std::string options, tactics, plans;
  if (!get(p.kiln_version) || !get(p.device_tag) || !get(options) || !get(tactics) || !get(plans) ||
      !get(p.onnx_bytes) || pos != end)
    return bad("truncated or malformed fields");
  for (size_t at = 0; at < plans.size();) {
    p.plans.emplace_back();
    if (!get_field(plans, at, plans.size(), p.plans.back())) return bad("malformed plans");
  }
  if (p.kiln_version != kiln_version())
    return invalid_argument("plan file '" + path + "' was built by kiln " + p.kiln_version +
                            "; this is kiln " + kiln_version() + ": rebuild it with `kiln build`");
  KILN_RETURN_IF_ERROR(parse_options(options, p.options).with_context("plan file '" + path + "'"));
  std::istringstream in(tactics);
  std::string line;
  while (std::getline(in, line)) {
    size_t tab = line.find('\t');
    if (tab == std::string::npos) return bad("bad timing-cache line");
    p.tactics.emplace_back(line.substr(0, tab), line.substr(tab + 1));
  }
  return p;
}

}  // namespace kiln

#include "runtime/plan_file.h"

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "core/check.h"

namespace kiln {

namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'P', 'L', 'A', 'N'};
constexpr uint32_t kFormat = 4;  // 3: the options as options.def names them; 4: calibration

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

// A value on one line: '\\' and line breaks escaped.
std::string escape(const std::string& v) {
  std::string r;
  for (char c : v) {
    if (c == '\\')
      r += "\\\\";
    else if (c == '\n')
      r += "\\n";
    else
      r += c;
  }
  return r;
}

Result<std::string> unescape(const std::string& v) {
  std::string r;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] != '\\') {
      r += v[i];
      continue;
    }
    if (++i == v.size() || (v[i] != '\\' && v[i] != 'n'))
      return invalid_argument("bad escape in option value '" + v + "'");
    r += v[i] == 'n' ? '\n' : '\\';
  }
  return r;
}

// Every option options.def marks kPlan, one "name=text" line per text (kiln/options.h).
std::string options_text(const EngineOptions& o) {
  std::string s;
  for (const OptionInfo& info : option_list()) {
    if (info.kind != OptionInfo::Kind::kPlan) continue;
    Result<std::vector<std::string>> texts = option_texts(o, info.name);
    KILN_CHECK(texts.is_ok());  // every listed option has a text form
    for (const std::string& t : *texts) s += info.name + "=" + escape(t) + "\n";
  }
  return s;
}

// The lines options_text wrote, set on `o`. A list option's lines make its whole value; an
// option the file does not name keeps o's value.
Status parse_options(const std::string& text, EngineOptions& o) {
  std::map<std::string, std::vector<std::string>> texts;
  std::vector<std::string> order;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos) return invalid_argument("bad option line '" + line + "'");
    const std::string name = line.substr(0, eq);
    const OptionInfo* info = find_option(name);
    if (!info || info->kind != OptionInfo::Kind::kPlan)
      return invalid_argument("unknown option '" + name + "'");
    KILN_ASSIGN_OR_RETURN(std::string value, unescape(line.substr(eq + 1)));
    if (!texts.count(name)) order.push_back(name);
    texts[name].push_back(std::move(value));
  }
  for (const std::string& name : order) KILN_RETURN_IF_ERROR(set_option(o, name, texts[name]));
  return Status::ok();
}

}  // namespace

void take_plan_options(const EngineOptions& from, EngineOptions& to) {
#define KILN_OPTION(Type, name, default_value, flag, kind, check, requirement, help) \
  if (OptionInfo::Kind::kind == OptionInfo::Kind::kPlan) to.name = from.name;
#include "kiln/options.def"
#undef KILN_OPTION
}

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
  put_str(s, plan.calibration);
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
      !get(p.onnx_bytes) || !get(p.calibration) || pos != end)
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

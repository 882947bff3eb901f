#include "quant/calibration_cache.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace kiln::quant {

namespace {

constexpr const char* kKilnHeader = "kiln-calibration 1";
constexpr float kInt8Max = 127.0f;

std::string format_double(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

Status bad(const std::string& source, int line, const std::string& what) {
  return invalid_argument("calibration cache " + source + ", line " + std::to_string(line) + ": " +
                          what);
}

bool parse_amax(const std::string& text, double& out) {
  char* end = nullptr;
  out = std::strtod(text.c_str(), &end);
  return !text.empty() && *end == '\0' && std::isfinite(out) && out >= 0;
}

// Splits the text into lines, dropping a trailing '\r' (a file written on Windows).
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

Result<CalibrationTable> parse_kiln(const std::vector<std::string>& lines,
                                    const std::string& source) {
  CalibrationTable t;
  t.format = CacheFormat::kKiln;
  int64_t declared = -1;
  bool ended = false;
  for (size_t n = 1; n < lines.size(); ++n) {
    const std::string& line = lines[n];
    const int lineno = static_cast<int>(n) + 1;
    if (ended) {
      if (!line.empty()) return bad(source, lineno, "text after 'end'");
      continue;
    }
    if (line == "end") {
      ended = true;
      continue;
    }
    const size_t sp = line.find(' ');
    const std::string key = line.substr(0, sp);
    const std::string rest = sp == std::string::npos ? "" : line.substr(sp + 1);
    if (key == "method") {
      t.method = rest;
    } else if (key == "model") {
      t.model = rest;
    } else if (key == "inputs") {
      t.inputs = rest;
    } else if (key == "samples" || key == "values") {
      char* end = nullptr;
      const long long v = std::strtoll(rest.c_str(), &end, 10);
      if (rest.empty() || *end != '\0' || v < 0)
        return bad(source, lineno, "'" + key + "' needs a count, not '" + rest + "'");
      (key == "samples" ? t.samples : declared) = v;
    } else if (key == "value") {
      const size_t sp2 = rest.find(' ');
      double amax = 0;
      if (sp2 == std::string::npos || sp2 + 1 == rest.size() ||
          !parse_amax(rest.substr(0, sp2), amax))
        return bad(source, lineno, "expected 'value <amax> <name>', got '" + line + "'");
      if (!t.amax.emplace(rest.substr(sp2 + 1), amax).second)
        return bad(source, lineno, "value '" + rest.substr(sp2 + 1) + "' is given twice");
    } else {
      return bad(source, lineno, "unknown entry '" + key + "'");
    }
  }
  if (!ended) return invalid_argument("calibration cache " + source + " is truncated (no 'end')");
  if (declared != static_cast<int64_t>(t.amax.size()))
    return invalid_argument("calibration cache " + source + " declares " +
                            std::to_string(declared) + " values but holds " +
                            std::to_string(t.amax.size()));
  if (t.method.empty()) return invalid_argument("calibration cache " + source + " names no method");
  return t;
}

// TensorRT's calibrator names, as kiln names their methods.
const char* method_of_calibrator(const std::string& name) {
  if (name == "EntropyCalibration2" || name == "EntropyCalibration") return "entropy";
  if (name == "MinMaxCalibration") return "minmax";
  if (name == "LegacyCalibration") return "legacy";
  return nullptr;
}

Result<CalibrationTable> parse_tensorrt(const std::vector<std::string>& lines,
                                        const std::string& source) {
  CalibrationTable t;
  t.format = CacheFormat::kTensorRT;
  const std::string& header = lines[0];
  const size_t dash = header.rfind('-');
  const char* method =
      dash == std::string::npos ? nullptr : method_of_calibrator(header.substr(dash + 1));
  if (!method)
    return bad(source, 1,
               "unknown TensorRT calibrator in header '" + header +
                   "' (EntropyCalibration2, EntropyCalibration, MinMaxCalibration or "
                   "LegacyCalibration)");
  t.method = method;
  for (size_t n = 1; n < lines.size(); ++n) {
    const std::string& line = lines[n];
    const int lineno = static_cast<int>(n) + 1;
    if (line.empty()) continue;
    // Names may hold ':' themselves (PyTorch's "onnx::Conv_12"): the last one separates.
    const size_t colon = line.rfind(": ");
    const std::string hex = colon == std::string::npos ? "" : line.substr(colon + 2);
    char* end = nullptr;
    const unsigned long bits = std::strtoul(hex.c_str(), &end, 16);
    if (colon == std::string::npos || colon == 0 || hex.size() != 8 || *end != '\0')
      return bad(source, lineno, "expected 'tensor_name: <8 hex digits>', got '" + line + "'");
    const auto u = static_cast<uint32_t>(bits);
    float scale = 0;
    std::memcpy(&scale, &u, sizeof scale);
    if (!std::isfinite(scale) || scale < 0)
      return bad(source, lineno, "scale " + hex + " is not a finite, non-negative float");
    if (!t.amax.emplace(line.substr(0, colon), static_cast<double>(scale) * kInt8Max).second)
      return bad(source, lineno, "tensor '" + line.substr(0, colon) + "' is given twice");
  }
  return t;
}

std::string first_few(const std::vector<std::string>& names) {
  std::string s;
  const size_t shown = std::min<size_t>(names.size(), 5);
  for (size_t i = 0; i < shown; ++i) s += (i ? ", '" : "'") + names[i] + "'";
  if (names.size() > shown) s += " and " + std::to_string(names.size() - shown) + " more";
  return s;
}

}  // namespace

std::string to_kiln_text(const CalibrationTable& table) {
  std::string s = std::string(kKilnHeader) + "\n";
  s += "method " + table.method + "\n";
  s += "model " + table.model + "\n";
  s += "inputs " + table.inputs + "\n";
  s += "samples " + std::to_string(table.samples) + "\n";
  s += "values " + std::to_string(table.amax.size()) + "\n";
  for (const auto& [name, amax] : table.amax)
    s += "value " + format_double(amax) + " " + name + "\n";
  s += "end\n";
  return s;
}

std::string to_tensorrt_text(const CalibrationTable& table, int version) {
  const char* calibrator = table.method == "entropy"  ? "EntropyCalibration2"
                           : table.method == "minmax" ? "MinMaxCalibration"
                                                      : "LegacyCalibration";
  std::string s = "TRT-" + std::to_string(version) + "-" + calibrator + "\n";
  for (const auto& [name, amax] : table.amax) {
    const float scale = static_cast<float>(amax) / kInt8Max;
    uint32_t bits = 0;
    std::memcpy(&bits, &scale, sizeof bits);
    char hex[16];
    std::snprintf(hex, sizeof hex, "%08x", bits);
    s += name + ": " + hex + "\n";
  }
  return s;
}

Result<CalibrationTable> parse_calibration_cache(const std::string& text,
                                                 const std::string& source) {
  const std::vector<std::string> lines = lines_of(text);
  if (lines.empty()) return invalid_argument("calibration cache " + source + " is empty");
  if (lines[0] == kKilnHeader) return parse_kiln(lines, source);
  if (lines[0].compare(0, 4, "TRT-") == 0) return parse_tensorrt(lines, source);
  if (lines[0].compare(0, 16, "kiln-calibration") == 0)
    return bad(source, 1, "unsupported version '" + lines[0] + "' (this kiln reads version 1)");
  return invalid_argument("calibration cache " + source +
                          " is neither a kiln cache ('kiln-calibration 1') nor a TensorRT "
                          "one ('TRT-<version>-<calibrator>')");
}

Result<CalibrationTable> read_calibration_cache(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot open calibration cache " + path);
  std::ostringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  if (s.find('\0') != std::string::npos)
    return invalid_argument("calibration cache " + path + " is not text (holds a NUL byte)");
  return parse_calibration_cache(s, path);
}

Status write_calibration_cache(const std::string& path, const CalibrationTable& table,
                               CacheFormat format) {
  const std::string text =
      format == CacheFormat::kKiln ? to_kiln_text(table) : to_tensorrt_text(table);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return not_found("cannot write calibration cache " + tmp);
    out << text;
    out.flush();
    if (!out) return internal_error("writing calibration cache " + tmp + " failed");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return internal_error("renaming " + tmp + " to " + path + ": " + ec.message());
  return Status::ok();
}

Status check_cache_matches(const CalibrationTable& cache, const CalibrationTable& expected,
                           const std::vector<std::string>& values) {
  std::vector<std::string> differences;
  if (cache.method != expected.method)
    differences.push_back("it was made with method '" + cache.method + "', this build asks for '" +
                          expected.method + "'");
  if (cache.format == CacheFormat::kKiln) {
    if (cache.model != expected.model)
      differences.push_back("it was made for another model (fingerprint " + cache.model +
                            ", this model's is " + expected.model + ")");
    if (cache.inputs != expected.inputs)
      differences.push_back("it was made for inputs '" + cache.inputs + "', this build's are '" +
                            expected.inputs + "'");
  }
  std::vector<std::string> missing, unknown;
  for (const std::string& v : values)
    if (!cache.amax.count(v)) missing.push_back(v);
  if (cache.format == CacheFormat::kTensorRT) {
    std::map<std::string, bool> wanted;
    for (const std::string& v : values) wanted[v] = true;
    for (const auto& entry : cache.amax)
      if (!wanted.count(entry.first)) unknown.push_back(entry.first);
  }
  if (!missing.empty())
    differences.push_back("it has no scale for " + std::to_string(missing.size()) +
                          " value(s) of this graph: " + first_few(missing));
  if (!unknown.empty())
    differences.push_back("it names " + std::to_string(unknown.size()) +
                          " tensor(s) this graph lacks: " + first_few(unknown));
  if (differences.empty()) return Status::ok();
  std::string msg = "calibration cache refused: ";
  for (size_t i = 0; i < differences.size(); ++i) msg += (i ? "; " : "") + differences[i];
  return invalid_argument(msg);
}

}  // namespace kiln::quant

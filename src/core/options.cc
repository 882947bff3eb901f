// The engine options (kiln/options.h, options.def): the names of the enum switches, each option
// type's text form, and the list, setting by name, text forms and validation generated from
// options.def.
#include "kiln/options.h"

#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>

#include "quant/calibrator.h"

namespace kiln {

namespace {

template <typename E, size_t N>
const char* name_of(E e, const char* const (&names)[N]) {
  const size_t i = static_cast<size_t>(e);
  return i < N ? names[i] : "?";
}

// The enumerator whose name is `s` (names in enumerator order), else an error naming `what`
// and the accepted names.
template <typename E, size_t N>
Result<E> parse_name(const std::string& s, const char* what, const char* const (&names)[N]) {
  std::string accepted;
  for (size_t i = 0; i < N; ++i) {
    if (s == names[i]) return static_cast<E>(i);
    accepted += (i == 0 ? "" : i + 1 == N ? " or " : ", ") + std::string(names[i]);
  }
  return invalid_argument((*what ? std::string(what) + " '" : "'") + s + "': expected " + accepted);
}

const char* const kDevices[] = {"cpu", "cuda"};
const char* const kKernelChoices[] = {"auto", "reference"};
const char* const kPrecisions[] = {"fp32", "tf32", "fp16", "bf16", "int8", "fp8"};
const char* const kConvPaths[] = {"auto", "legacy", "graph"};
const char* const kSpaceToDepth[] = {"auto", "on", "off"};
const char* const kCpuConvAlgos[] = {"direct", "auto", "winograd"};
const char* const kCpuLayouts[] = {"auto", "nhwc", "blocked", "value", "alternate"};
const char* const kInputFormats[] = {"float32-nchw", "uint8-nchw", "uint8-nhwc"};

}  // namespace

Result<Device> parse_device(const std::string& s) {
  return parse_name<Device>(s, "device", kDevices);
}
const char* kernel_choice_name(KernelChoice k) { return name_of(k, kKernelChoices); }
Result<KernelChoice> parse_kernel_choice(const std::string& s) {
  return parse_name<KernelChoice>(s, "backend", kKernelChoices);
}
const char* precision_name(Precision p) { return name_of(p, kPrecisions); }
Result<Precision> parse_precision(const std::string& s) {
  return parse_name<Precision>(s, "precision", kPrecisions);
}
const char* cudnn_conv_path_name(CudnnConvPath p) { return name_of(p, kConvPaths); }
Result<CudnnConvPath> parse_cudnn_conv_path(const std::string& s) {
  return parse_name<CudnnConvPath>(s, "cuDNN conv path", kConvPaths);
}
const char* space_to_depth_name(SpaceToDepth m) { return name_of(m, kSpaceToDepth); }
Result<SpaceToDepth> parse_space_to_depth(const std::string& s) {
  return parse_name<SpaceToDepth>(s, "space-to-depth mode", kSpaceToDepth);
}
const char* cpu_conv_algo_name(CpuConvAlgo a) { return name_of(a, kCpuConvAlgos); }
Result<CpuConvAlgo> parse_cpu_conv_algo(const std::string& s) {
  return parse_name<CpuConvAlgo>(s, "CPU conv algorithm", kCpuConvAlgos);
}
const char* cpu_layout_name(CpuLayout l) { return name_of(l, kCpuLayouts); }
Result<CpuLayout> parse_cpu_layout(const std::string& s) {
  return parse_name<CpuLayout>(s, "CPU layout", kCpuLayouts);
}
const char* input_format_name(InputFormat f) { return name_of(f, kInputFormats); }
Result<InputFormat> parse_input_format(const std::string& s) {
  return parse_name<InputFormat>(s, "input format", kInputFormats);
}

namespace {

// ---- Each option type's text form: OptionText<T> gives its type name, whether it is a list
// (several texts), its enum names, parse (texts → value) and format (value → texts).

Status one_text(const std::vector<std::string>& texts) {
  if (texts.size() == 1) return Status::ok();
  return invalid_argument("takes one value, got " + std::to_string(texts.size()));
}

// What most text forms share: no enum names; one text (PlainText) or several (ListText).
struct PlainText {
  static constexpr bool kList = false;
  static std::vector<std::string> choices() { return {}; }
};
struct ListText {
  static constexpr bool kList = true;
  static std::vector<std::string> choices() { return {}; }
};

template <typename E, size_t N, const char* const (&kNames)[N]>
struct EnumText {
  static constexpr const char* kType = "enum";
  static constexpr bool kList = false;
  static std::vector<std::string> choices() { return {std::begin(kNames), std::end(kNames)}; }
  static Status parse(const std::vector<std::string>& t, E& v) {
    KILN_RETURN_IF_ERROR(one_text(t));
    KILN_ASSIGN_OR_RETURN(v, parse_name<E>(t[0], "", kNames));
    return Status::ok();
  }
  static std::vector<std::string> format(E v) { return {name_of(v, kNames)}; }
  static bool valid(E v) { return static_cast<size_t>(v) < N; }
};

template <typename T>
struct OptionText;

template <>
struct OptionText<Device> : EnumText<Device, 2, kDevices> {};
template <>
struct OptionText<KernelChoice> : EnumText<KernelChoice, 2, kKernelChoices> {};
template <>
struct OptionText<Precision> : EnumText<Precision, 6, kPrecisions> {};
template <>
struct OptionText<CudnnConvPath> : EnumText<CudnnConvPath, 3, kConvPaths> {};
template <>
struct OptionText<SpaceToDepth> : EnumText<SpaceToDepth, 3, kSpaceToDepth> {};
template <>
struct OptionText<CpuConvAlgo> : EnumText<CpuConvAlgo, 3, kCpuConvAlgos> {};
template <>
struct OptionText<CpuLayout> : EnumText<CpuLayout, 5, kCpuLayouts> {};
template <>
struct OptionText<InputFormat> : EnumText<InputFormat, 3, kInputFormats> {};

// Not an enum: every value is valid as far as its type goes.
template <typename T>
bool valid_value(const T&) {
  return true;
}
template <typename T>
requires requires(T v) { OptionText<T>::valid(v); }
bool valid_value(const T& v) { return OptionText<T>::valid(v); }

template <>
struct OptionText<bool> : PlainText {
  static constexpr const char* kType = "bool";
  static Status parse(const std::vector<std::string>& t, bool& v) {
    KILN_RETURN_IF_ERROR(one_text(t));
    const std::string& s = t[0];
    if (s == "1" || s == "true" || s == "on") {
      v = true;
    } else if (s == "0" || s == "false" || s == "off") {
      v = false;
    } else {
      return invalid_argument("'" + s + "': expected 1, 0, true, false, on or off");
    }
    return Status::ok();
  }
  static std::vector<std::string> format(bool v) { return {v ? "1" : "0"}; }
};

// A whole decimal integer, optionally with a binary size suffix (KiB, MiB, GiB, TiB) when
// `sizes`, within [lo, hi].
Status parse_integer(const std::string& s, bool sizes, int64_t lo, int64_t hi, int64_t& v) {
  size_t digits = 0;
  long long n = 0;
  try {
    n = std::stoll(s, &digits);
  } catch (const std::exception&) {
    return invalid_argument("'" + s + "' is not a whole number");
  }
  const std::string unit = s.substr(digits);
  int shift = 0;
  if (!unit.empty()) {
    const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
    for (int k = 0; k < 4; ++k)
      if (unit == kUnits[k]) shift = 10 * (k + 1);
    if (!sizes || shift == 0)
      return invalid_argument("'" + s + "' is not a whole number" +
                              (sizes ? std::string(" (with KiB, MiB, GiB or TiB)") : ""));
  }
  const long double scaled = static_cast<long double>(n) * std::ldexp(1.0L, shift);
  if (scaled < static_cast<long double>(lo) || scaled > static_cast<long double>(hi))
    return invalid_argument("'" + s + "' is out of range");
  v = static_cast<int64_t>(n) * (int64_t{1} << shift);
  return Status::ok();
}

template <>
struct OptionText<int> : PlainText {
  static constexpr const char* kType = "int";
  static Status parse(const std::vector<std::string>& t, int& v) {
    KILN_RETURN_IF_ERROR(one_text(t));
    int64_t n = 0;
    KILN_RETURN_IF_ERROR(parse_integer(t[0], false, INT32_MIN, INT32_MAX, n));
    v = static_cast<int>(n);
    return Status::ok();
  }
  static std::vector<std::string> format(int v) { return {std::to_string(v)}; }
};

// Every int64 option counts bytes.
template <>
struct OptionText<int64_t> : PlainText {
  static constexpr const char* kType = "bytes";
  static Status parse(const std::vector<std::string>& t, int64_t& v) {
    KILN_RETURN_IF_ERROR(one_text(t));
    return parse_integer(t[0], true, INT64_MIN, INT64_MAX, v);
  }
  static std::vector<std::string> format(int64_t v) { return {std::to_string(v)}; }
};

template <>
struct OptionText<std::string> : PlainText {
  static constexpr const char* kType = "string";
  static Status parse(const std::vector<std::string>& t, std::string& v) {
    KILN_RETURN_IF_ERROR(one_text(t));
    v = t[0];
    return Status::ok();
  }
  static std::vector<std::string> format(const std::string& v) { return {v}; }
};

// One text of comma-separated numbers ("0.485,0.456,0.406"); the empty text is no value.
template <>
struct OptionText<Floats> : PlainText {
  static constexpr const char* kType = "floats";
  static Status parse(const std::vector<std::string>& t, Floats& v) {
    KILN_RETURN_IF_ERROR(one_text(t));
    Floats r;
    std::stringstream list(t[0]);
    for (std::string item; !t[0].empty() && std::getline(list, item, ',');) {
      char* stop = nullptr;
      const float f = std::strtof(item.c_str(), &stop);
      if (item.empty() || stop != item.c_str() + item.size() || !std::isfinite(f))
        return invalid_argument("'" + t[0] + "' is not a number or a comma-separated list");
      r.push_back(f);
    }
    if (!t[0].empty() && t[0].back() == ',')
      return invalid_argument("'" + t[0] + "' is not a number or a comma-separated list");
    v = std::move(r);
    return Status::ok();
  }
  static std::vector<std::string> format(const Floats& v) {
    std::string s;
    char buf[32];
    for (float f : v) {
      std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(f));  // reads back exactly
      s += (s.empty() ? "" : ",") + std::string(buf);
    }
    return {s};
  }
};

// Names, one a text (a name may hold any character).
template <>
struct OptionText<Names> : ListText {
  static constexpr const char* kType = "names";
  static Status parse(const std::vector<std::string>& t, Names& v) {
    v = t;
    return Status::ok();
  }
  static std::vector<std::string> format(const Names& v) { return v; }
};

// "1x3x224x224" ("" is a scalar's shape) as dims.
Result<std::vector<int64_t>> parse_dims(const std::string& text) {
  std::vector<int64_t> dims;
  if (text.empty()) return dims;
  std::stringstream list(text);
  for (std::string item; std::getline(list, item, 'x');) {
    if (item.empty() || item.size() > 12 ||
        item.find_first_not_of("0123456789") != std::string::npos)
      return invalid_argument("'" + text + "' is not a shape like 1x3x224x224");
    dims.push_back(std::stoll(item));
  }
  if (text.back() == 'x') return invalid_argument("'" + text + "' is not a shape like 1x3x224x224");
  return dims;
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string r;
  for (size_t d = 0; d < dims.size(); ++d) r += (d ? "x" : "") + std::to_string(dims[d]);
  return r;
}

// Every field of `s` between `sep`s, empty ones included ("" is one empty field).
std::vector<std::string> split_all(const std::string& s, char sep) {
  std::vector<std::string> r(1);
  for (char c : s) {
    if (c == sep)
      r.emplace_back();
    else
      r.back() += c;
  }
  return r;
}

// "NAME=REST" split at the last '=' (names may hold '='; the rest never does).
bool split_name(const std::string& s, std::string& name, std::string& rest) {
  const size_t eq = s.rfind('=');
  if (eq == std::string::npos || eq == 0) return false;
  name = s.substr(0, eq);
  rest = s.substr(eq + 1);
  return true;
}

// One text per input: "NAME=DIMS[,DIMS...]", the k-th DIMS its shape in profile k; one DIMS
// stands for every profile, and "-" leaves the input out of profile k (its declared shape).
template <>
struct OptionText<ShapeProfiles> : ListText {
  static constexpr const char* kType = "shape profiles";
  static Status parse(const std::vector<std::string>& t, ShapeProfiles& v) {
    std::vector<std::pair<std::string, std::vector<std::string>>> per_input;
    size_t count = 1;
    for (const std::string& spec : t) {
      std::string name, rest;
      if (!split_name(spec, name, rest))
        return invalid_argument("'" + spec + "': expected NAME=DIMS[,DIMS...]");
      std::vector<std::string> items = split_all(rest, ',');
      for (const auto& [other, unused] : per_input)
        if (other == name) return invalid_argument("'" + spec + "': input '" + name + "' twice");
      if (items.size() > 1 && count > 1 && items.size() != count)
        return invalid_argument("'" + spec +
                                "': every input needs the same number of shapes (or one)");
      count = std::max(count, items.size());
      per_input.emplace_back(name, std::move(items));
    }
    ShapeProfiles r(t.empty() ? 0 : count);
    for (size_t k = 0; k < r.size(); ++k)
      for (const auto& [name, items] : per_input) {
        const std::string& item = items.size() == 1 ? items[0] : items[k];
        if (item == "-") continue;
        Result<std::vector<int64_t>> dims = parse_dims(item);
        if (!dims.is_ok()) return dims.status().with_context("input '" + name + "'");
        r[k][name] = std::move(*dims);
      }
    v = std::move(r);
    return Status::ok();
  }
  static std::vector<std::string> format(const ShapeProfiles& v) {
    std::set<std::string> names;
    for (const auto& profile : v)
      for (const auto& [name, dims] : profile) names.insert(name);
    std::vector<std::string> r;
    for (const std::string& name : names) {
      std::string s = name + "=";
      for (size_t k = 0; k < v.size(); ++k) {
        auto it = v[k].find(name);
        s += (k ? "," : "") + (it == v[k].end() ? std::string("-") : dims_text(it->second));
      }
      r.push_back(s);
    }
    return r;
  }
};

// One text per input: "NAME=MIN:OPT:MAX".
template <>
struct OptionText<ShapeRanges> : ListText {
  static constexpr const char* kType = "shape ranges";
  static Status parse(const std::vector<std::string>& t, ShapeRanges& v) {
    ShapeRanges r;
    for (const std::string& spec : t) {
      std::string name, rest;
      auto bad = [&](const std::string& why) { return invalid_argument("'" + spec + "': " + why); };
      if (!split_name(spec, name, rest)) return bad("expected NAME=MIN:OPT:MAX");
      const std::vector<std::string> items = split_all(rest, ':');
      if (items.size() != 3) return bad("expected NAME=MIN:OPT:MAX (three shapes)");
      std::vector<std::vector<int64_t>> shapes;
      for (const std::string& item : items) {
        Result<std::vector<int64_t>> dims = parse_dims(item);
        if (!dims.is_ok()) return bad(dims.status().message());
        shapes.push_back(std::move(*dims));
      }
      if (r.count(name)) return bad("input '" + name + "' has a range already");
      r[name] = ShapeRange{shapes[0], shapes[1], shapes[2]};
    }
    v = std::move(r);
    return Status::ok();
  }
  static std::vector<std::string> format(const ShapeRanges& v) {
    std::vector<std::string> r;
    for (const auto& [name, s] : v)
      r.push_back(name + "=" + dims_text(s.min) + ":" + dims_text(s.opt) + ":" + dims_text(s.max));
    return r;
  }
};

// Texts of "NODE=PRECISION[,NODE=PRECISION...]". A node name may hold ',' or '=': an item
// that does not end in "=<precision>" is the start of the next item's name.
template <>
struct OptionText<PrecisionMap> : ListText {
  static constexpr const char* kType = "node precisions";
  static Status parse(const std::vector<std::string>& t, PrecisionMap& v) {
    PrecisionMap r;
    for (const std::string& spec : t) {
      std::string pending;
      const std::vector<std::string> items = split_all(spec, ',');
      for (size_t i = 0; i < items.size(); ++i) {
        const std::string item = pending + items[i];
        std::string node, p;
        const bool last = i + 1 == items.size();
        if (!split_name(item, node, p) || !parse_precision(p).is_ok()) {
          if (!last) {
            pending = item + ",";
            continue;
          }
          if (!split_name(item, node, p))
            return invalid_argument("'" + item + "': expected NODE=PRECISION (such as conv1=fp32)");
          return parse_precision(p).status().with_context("'" + item + "'");
        }
        r[node] = *parse_precision(p);
        pending.clear();
      }
    }
    v = std::move(r);
    return Status::ok();
  }
  static std::vector<std::string> format(const PrecisionMap& v) {
    std::vector<std::string> r;
    for (const auto& [node, p] : v) r.push_back(node + "=" + precision_name(p));
    return r;
  }
};

// ---- The list, generated from options.def.

using Kind = OptionInfo::Kind;
constexpr Kind kPlan = Kind::kPlan;
constexpr Kind kRun = Kind::kRun;

// Setting, reading and checking one option, by name.
struct OptionOps {
  Status (*set)(EngineOptions&, const std::vector<std::string>&);
  std::vector<std::string> (*texts)(const EngineOptions&);
  Status (*check)(const EngineOptions&);
};

template <typename T>
std::string default_text_of(const T& v) {
  std::vector<std::string> t = OptionText<T>::format(v);
  return t.size() == 1 ? t[0] : "";
}

bool valid_calibration_method(const std::string& v) {
  return quant::parse_calibration_method(v).is_ok();
}

struct Entry {
  OptionInfo info;
  OptionOps ops;
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> list = [] {
    std::vector<Entry> r;
#define KILN_OPTION(Type, name, default_value, flag, kind, check_expr, requirement, help)        \
  {                                                                                              \
    const EngineOptions defaults;                                                                \
    OptionInfo info{#name,                                                                       \
                    OptionText<Type>::kType,                                                     \
                    flag,                                                                        \
                    kind,                                                                        \
                    default_text_of<Type>(defaults.name),                                        \
                    help,                                                                        \
                    OptionText<Type>::choices(),                                                 \
                    OptionText<Type>::kList};                                                    \
    OptionOps ops{[](EngineOptions& o, const std::vector<std::string>& t) {                      \
                    Type v{};                                                                    \
                    KILN_RETURN_IF_ERROR(OptionText<Type>::parse(t, v));                         \
                    o.name = std::move(v);                                                       \
                    return Status::ok();                                                         \
                  },                                                                             \
                  [](const EngineOptions& o) { return OptionText<Type>::format(o.name); },       \
                  [](const EngineOptions& o) {                                                   \
                    [[maybe_unused]] const Type& v = o.name;                                     \
                    if (!valid_value(v))                                                         \
                      return invalid_argument("option " #name ": not a valid value");            \
                    if (!(check_expr))                                                           \
                      return invalid_argument("option " #name " must be " requirement ", not " + \
                                              default_text_of<Type>(v));                         \
                    return Status::ok();                                                         \
                  }};                                                                            \
    r.push_back({std::move(info), ops});                                                         \
  }
#include "kiln/options.def"
#undef KILN_OPTION
    return r;
  }();
  return list;
}

const Entry* find_entry(const std::string& name) {
  for (const Entry& e : entries())
    if (e.info.name == name) return &e;
  return nullptr;
}

}  // namespace

const std::vector<OptionInfo>& option_list() {
  static const std::vector<OptionInfo> list = [] {
    std::vector<OptionInfo> r;
    for (const Entry& e : entries()) r.push_back(e.info);
    return r;
  }();
  return list;
}

const OptionInfo* find_option(const std::string& name) {
  for (const OptionInfo& info : option_list())
    if (info.name == name) return &info;
  return nullptr;
}

Status set_option(EngineOptions& o, const std::string& name, const std::vector<std::string>& texts,
                  const std::string& what) {
  const Entry* e = find_entry(name);
  if (!e) return invalid_argument("unknown option '" + name + "'");
  return e->ops.set(o, texts).with_context(what.empty() ? "option " + name : what);
}

Result<std::vector<std::string>> option_texts(const EngineOptions& o, const std::string& name) {
  const Entry* e = find_entry(name);
  if (!e) return invalid_argument("unknown option '" + name + "'");
  return e->ops.texts(o);
}

Status validate_options(const EngineOptions& o) {
  for (const Entry& e : entries()) KILN_RETURN_IF_ERROR(e.ops.check(o));
  return Status::ok();
}

}  // namespace kiln

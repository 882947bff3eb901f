#include "kiln/tensor_io.h"

#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <vector>

namespace kiln {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

// The header is a Python dict literal: {'descr': '<f4', 'fortran_order': False,
// 'shape': (2, 3), }. This parser accepts exactly the literal forms numpy writes (strings,
// True/False, tuples of ints) and reports anything else, e.g. the list descr of
// structured arrays, as unsupported.
class HeaderParser {
 public:
  explicit HeaderParser(const std::string& s) : s_(s) {}

  struct Header {
    std::string descr;
    bool fortran_order = false;
    Shape shape;
    bool has_descr = false, has_order = false, has_shape = false;
  };

  Result<Header> parse() {
    Header h;
    skip_space();
    if (!eat('{')) return error("expected '{'");
    while (true) {
      skip_space();
      if (eat('}')) break;
      KILN_ASSIGN_OR_RETURN(std::string key, parse_string());
      skip_space();
      if (!eat(':')) return error("expected ':' after '" + key + "'");
      skip_space();
      if (key == "descr") {
        if (peek() == '[')
          return unsupported("structured arrays (a list 'descr') are not supported");
        KILN_ASSIGN_OR_RETURN(h.descr, parse_string());
        h.has_descr = true;
      } else if (key == "fortran_order") {
        if (s_.compare(pos_, 4, "True") == 0) {
          h.fortran_order = true;
          pos_ += 4;
        } else if (s_.compare(pos_, 5, "False") == 0) {
          pos_ += 5;
        } else {
          return error("fortran_order must be True or False");
        }
        h.has_order = true;
      } else if (key == "shape") {
        KILN_ASSIGN_OR_RETURN(h.shape, parse_shape());
        h.has_shape = true;
      } else {
        return error("unexpected key '" + key + "'");
      }
      skip_space();
      if (eat(',')) continue;
      skip_space();
      if (eat('}')) break;
      return error("expected ',' or '}'");
    }
    if (!h.has_descr || !h.has_order || !h.has_shape)
      return invalid_argument("header lacks one of 'descr', 'fortran_order', 'shape'");
    return h;
  }

 private:
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  bool eat(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n')) ++pos_;
  }
  Status error(const std::string& what) const {
    return invalid_argument("malformed header at offset " + std::to_string(pos_) + ": " + what);
  }
  Result<std::string> parse_string() {
    char q = peek();
    if (q != '\'' && q != '"') return error("expected a quoted string");
    ++pos_;
    size_t end = s_.find(q, pos_);
    if (end == std::string::npos) return error("unterminated string");
    std::string r = s_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return r;
  }
  Result<Shape> parse_shape() {
    if (!eat('(')) return error("shape must be a tuple");
    Shape shape;
    while (true) {
      skip_space();
      if (eat(')')) break;
      if (peek() < '0' || peek() > '9') return error("shape entries must be non-negative ints");
      int64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (v > (std::numeric_limits<int64_t>::max() - 9) / 10) return error("dimension too big");
        v = v * 10 + (s_[pos_++] - '0');
      }
      if (peek() == 'L') ++pos_;  // Python 2 longs
      shape.push_back(v);
      skip_space();
      if (eat(',')) continue;
      skip_space();
      if (eat(')')) break;
      return error("expected ',' or ')' in shape");
    }
    return shape;
  }

  const std::string& s_;
  size_t pos_ = 0;
};

// descr → DataType. `>` is only acceptable for one-byte types, where order is moot.
Result<DataType> dtype_from_descr(const std::string& descr) {
  if (descr.size() < 2) return invalid_argument("bad dtype descr '" + descr + "'");
  char order = descr[0];
  std::string code = descr.substr(1);
  if (order != '<' && order != '>' && order != '|' && order != '=')
    return invalid_argument("bad dtype descr '" + descr + "'");
  struct Entry {
    const char* code;
    DataType dt;
  };
  static const Entry kTable[] = {
      {"f2", DataType::kFloat16}, {"f4", DataType::kFloat32}, {"f8", DataType::kFloat64},
      {"i1", DataType::kInt8},    {"i2", DataType::kInt16},   {"i4", DataType::kInt32},
      {"i8", DataType::kInt64},   {"u1", DataType::kUInt8},   {"u2", DataType::kUInt16},
      {"u4", DataType::kUInt32},  {"u8", DataType::kUInt64},  {"b1", DataType::kBool},
  };
  for (const Entry& e : kTable) {
    if (code != e.code) continue;
    if (order == '>' && dtype_size(e.dt) > 1)
      return unsupported("big-endian dtype '" + descr + "' is not supported (use '<" + code +
                         "', e.g. arr.astype('<" + code + "'))");
    return e.dt;
  }
  if (code[0] == 'O') return unsupported("object arrays (dtype 'O') are not supported");
  return unsupported("dtype '" + descr + "' is not supported");
}

Result<std::string> descr_of(DataType dt) {
  switch (dt) {
    case DataType::kFloat16: return std::string("<f2");
    case DataType::kFloat32: return std::string("<f4");
    case DataType::kFloat64: return std::string("<f8");
    case DataType::kInt8: return std::string("|i1");
    case DataType::kInt16: return std::string("<i2");
    case DataType::kInt32: return std::string("<i4");
    case DataType::kInt64: return std::string("<i8");
    case DataType::kUInt8: return std::string("|u1");
    case DataType::kUInt16: return std::string("<u2");
    case DataType::kUInt32: return std::string("<u4");
    case DataType::kUInt64: return std::string("<u8");
    case DataType::kBool: return std::string("|b1");
    default: return unsupported(std::string(".npy cannot hold dtype ") + dtype_name(dt));
  }
}

uint32_t read_le(const std::string& b, size_t pos, int nbytes) {
  uint32_t v = 0;
  for (int i = nbytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[pos + i]);
  return v;
}

}  // namespace

Result<Tensor> parse_npy(const std::string& bytes, const std::string& what) {
  auto fail = [&](Status s) { return std::move(s).with_context(what); };
  if (bytes.size() < kMagicLen + 2 || bytes.compare(0, kMagicLen, kMagic) != 0)
    return fail(invalid_argument("not a .npy file (bad magic)"));
  int major = static_cast<unsigned char>(bytes[6]);
  size_t len_bytes;
  if (major == 1)
    len_bytes = 2;
  else if (major == 2 || major == 3)
    len_bytes = 4;
  else
    return fail(unsupported(".npy format version " + std::to_string(major) + " is not supported"));
  size_t header_start = kMagicLen + 2 + len_bytes;
  if (bytes.size() < header_start) return fail(invalid_argument("truncated header"));
  size_t header_len = read_le(bytes, kMagicLen + 2, static_cast<int>(len_bytes));
  if (bytes.size() - header_start < header_len) return fail(invalid_argument("truncated header"));
  std::string header = bytes.substr(header_start, header_len);

  auto parsed = HeaderParser(header).parse();
  if (!parsed.is_ok()) return fail(parsed.status());
  const auto& h = *parsed;
  auto dt = dtype_from_descr(h.descr);
  if (!dt.is_ok()) return fail(dt.status());
  if (h.fortran_order)
    return fail(
        unsupported("Fortran-order arrays are not supported (save with "
                    "np.ascontiguousarray)"));

  size_t item = dtype_size(*dt);
  size_t data_start = header_start + header_len;
  size_t available = bytes.size() - data_start;
  // Multiply with an overflow guard: a corrupt header must not allocate absurd amounts.
  uint64_t numel = 1;
  bool overflow = false;
  for (int64_t d : h.shape) numel = d == 0 ? 0 : numel;
  for (int64_t d : h.shape) {
    if (numel == 0) break;
    if (d != 0 && numel > std::numeric_limits<uint64_t>::max() / item / static_cast<uint64_t>(d))
      overflow = true;
    numel *= static_cast<uint64_t>(d);
  }
  if (overflow || numel * item > available)
    return fail(invalid_argument("truncated data: shape " + shape_str(h.shape) + " of " +
                                 dtype_name(*dt) + " needs " +
                                 (overflow ? std::string("more") : std::to_string(numel * item)) +
                                 " bytes, file has " + std::to_string(available)));
  Tensor t(*dt, h.shape);
  if (t.nbytes()) std::memcpy(t.raw(), bytes.data() + data_start, t.nbytes());
  return t;
}

Result<Tensor> read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return not_found("cannot open '" + path + "'");
  std::ostringstream ss;
  ss << f.rdbuf();
  return parse_npy(ss.str(), path);
}

Result<std::string> encode_npy(const Tensor& t) {
  KILN_ASSIGN_OR_RETURN(std::string descr, descr_of(t.dtype()));
  std::string shape = "(";
  for (size_t i = 0; i < t.shape().size(); ++i) {
    shape += std::to_string(t.shape()[i]);
    if (i + 1 < t.shape().size() || t.shape().size() == 1) shape += ",";
    if (i + 1 < t.shape().size()) shape += " ";
  }
  shape += ")";
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces so the data starts on a 64-byte boundary; the header ends with '\n'.
  size_t prefix = kMagicLen + 2 + 2;
  bool v2 = false;
  size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  if (total - prefix > 0xffff) {
    v2 = true;
    prefix = kMagicLen + 2 + 4;
    total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  }
  size_t header_len = total - prefix;
  dict.append(header_len - dict.size() - 1, ' ');
  dict += '\n';

  std::string out(kMagic, kMagicLen);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  for (size_t i = 0; i < (v2 ? 4u : 2u); ++i)
    out += static_cast<char>((header_len >> (8 * i)) & 0xff);
  out += dict;
  out.append(static_cast<const char*>(t.raw()), t.nbytes());
  return out;
}

Status write_npy(const std::string& path, const Tensor& t) {
  auto bytes = encode_npy(t);
  if (!bytes.is_ok()) return bytes.status().with_context(path);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return not_found("cannot create '" + path + "'");
  f.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
  f.close();
  if (!f) return internal_error("writing '" + path + "' failed");
  return Status::ok();
}

}  // namespace kiln

#include "kiln/tensor.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "core/check.h"
#include "core/half.h"
#include "kiln/options.h"

namespace kiln {

const char* device_name(Device d) { return d == Device::kCuda ? "cuda" : "cpu"; }

const char* dtype_name(DataType dt) {
  switch (dt) {
    case DataType::kUndefined: return "undefined";
    case DataType::kFloat32: return "float32";
    case DataType::kUInt8: return "uint8";
    case DataType::kInt8: return "int8";
    case DataType::kUInt16: return "uint16";
    case DataType::kInt16: return "int16";
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
    case DataType::kString: return "string";
    case DataType::kBool: return "bool";
    case DataType::kFloat16: return "float16";
    case DataType::kFloat64: return "float64";
    case DataType::kUInt32: return "uint32";
    case DataType::kUInt64: return "uint64";
    case DataType::kBFloat16: return "bfloat16";
    case DataType::kFloat8E4M3: return "float8e4m3";
  }
  return "unknown";
}

size_t dtype_size(DataType dt) {
  switch (dt) {
    case DataType::kFloat32:
    case DataType::kInt32:
    case DataType::kUInt32: return 4;
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kFloat8E4M3:
    case DataType::kBool: return 1;
    case DataType::kUInt16:
    case DataType::kInt16:
    case DataType::kFloat16:
    case DataType::kBFloat16: return 2;
    case DataType::kInt64:
    case DataType::kFloat64:
    case DataType::kUInt64: return 8;
    default: return 0;
  }
}

bool dtype_is_float(DataType dt) {
  return dt == DataType::kFloat32 || dt == DataType::kFloat16 || dt == DataType::kBFloat16 ||
         dt == DataType::kFloat64;
}

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) r += ",";
    r += std::to_string(s[i]);
  }
  return r + "]";
}

Tensor::Tensor(DataType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  for (int64_t d : shape_) KILN_CHECK(d >= 0);
  size_t bytes = nbytes();
  // Always allocate at least one byte so raw() of an empty tensor is non-null.
  buf_ = std::shared_ptr<std::byte[]>(new std::byte[bytes ? bytes : 1]);
}

Tensor Tensor::zeros(DataType dtype, Shape shape) {
  Tensor t(dtype, std::move(shape));
  std::memset(t.raw(), 0, t.nbytes());
  return t;
}

Tensor Tensor::from_bytes(DataType dtype, Shape shape, std::string&& bytes) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  KILN_CHECK(bytes.size() == t.nbytes());
  auto holder = std::make_shared<std::string>(std::move(bytes));
  auto* data = reinterpret_cast<std::byte*>(holder->data());
  t.buf_ = std::shared_ptr<std::byte[]>(std::move(holder), data);
  return t;
}

Tensor Tensor::view_of(const Tensor& storage, size_t byte_offset, DataType dtype, Shape shape) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  for (int64_t d : t.shape_) KILN_CHECK(d >= 0);
  KILN_CHECK(storage.buf_ && byte_offset + t.nbytes() <= storage.nbytes());
  t.buf_ = std::shared_ptr<std::byte[]>(storage.buf_, storage.buf_.get() + byte_offset);
  t.gpu_ = storage.gpu_;
  return t;
}

Tensor Tensor::borrow(void* data, DataType dtype, Shape shape) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  for (int64_t d : t.shape_) KILN_CHECK(d >= 0);
  KILN_CHECK(data != nullptr || t.nbytes() == 0);
  // An empty owner: the aliasing constructor keeps the pointer and owns nothing.
  t.buf_ =
      std::shared_ptr<std::byte[]>(std::shared_ptr<std::byte[]>(), static_cast<std::byte*>(data));
  return t;
}

Tensor Tensor::adopt(void* data, DataType dtype, Shape shape, void (*release)(void*)) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  for (int64_t d : t.shape_) KILN_CHECK(d >= 0);
  KILN_CHECK(data != nullptr && release != nullptr);
  t.buf_ = std::shared_ptr<std::byte[]>(static_cast<std::byte*>(data),
                                        [release](std::byte* p) { release(p); });
  return t;
}

Tensor Tensor::on_gpu(void* data, DataType dtype, Shape shape, int gpu, void (*release)(void*)) {
  KILN_CHECK(gpu >= 0);
  Tensor t = release ? adopt(data, dtype, std::move(shape), release)
                     : borrow(data, dtype, std::move(shape));
  t.gpu_ = gpu;
  return t;
}

Tensor Tensor::from_floats(Shape shape, const std::vector<float>& values) {
  Tensor t(DataType::kFloat32, std::move(shape));
  KILN_CHECK(static_cast<int64_t>(values.size()) == t.numel());
  if (t.nbytes()) std::memcpy(t.raw(), values.data(), t.nbytes());  // data() may be null when empty
  return t;
}

Tensor Tensor::from_int64s(Shape shape, const std::vector<int64_t>& values) {
  Tensor t(DataType::kInt64, std::move(shape));
  KILN_CHECK(static_cast<int64_t>(values.size()) == t.numel());
  if (t.nbytes()) std::memcpy(t.raw(), values.data(), t.nbytes());
  return t;
}

Tensor Tensor::reshaped(Shape shape) const {
  KILN_CHECK(shape_numel(shape) == numel());
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::clone() const {
  if (!defined()) return {};
  KILN_CHECK(gpu_ < 0 && "clone() of a GPU tensor");
  Tensor t(dtype_, shape_);
  if (nbytes()) std::memcpy(t.raw(), raw(), nbytes());
  return t;
}

double Tensor::at_double(int64_t i) const {
  switch (dtype_) {
    case DataType::kFloat32: return data<float>()[i];
    case DataType::kFloat64: return data<double>()[i];
    case DataType::kFloat16: return half_bits_to_float(data<uint16_t>()[i]);
    case DataType::kBFloat16: return bf16_bits_to_float(data<uint16_t>()[i]);
    case DataType::kFloat8E4M3: return fp8e4m3_bits_to_float(data<uint8_t>()[i]);
    case DataType::kUInt8: return data<uint8_t>()[i];
    case DataType::kInt8: return data<int8_t>()[i];
    case DataType::kUInt16: return data<uint16_t>()[i];
    case DataType::kInt16: return data<int16_t>()[i];
    case DataType::kInt32: return data<int32_t>()[i];
    case DataType::kInt64: return static_cast<double>(data<int64_t>()[i]);
    case DataType::kUInt32: return data<uint32_t>()[i];
    case DataType::kUInt64: return static_cast<double>(data<uint64_t>()[i]);
    case DataType::kBool: return data<uint8_t>()[i] ? 1.0 : 0.0;
    default: KILN_CHECK(false && "at_double on a non-numeric tensor");
  }
  return 0;
}

void Tensor::set_double(int64_t i, double v) {
  // Integers: truncation toward zero, then modulo 2^64 down to the type (no undefined
  // conversion for values out of range or NaN, which becomes 0).
  const auto wrapped = [v]() -> uint64_t {
    if (!(std::fabs(v) < 9.2e18)) return 0;
    return static_cast<uint64_t>(static_cast<int64_t>(v));
  };
  switch (dtype_) {
    case DataType::kFloat32: data<float>()[i] = static_cast<float>(v); break;
    case DataType::kFloat64: data<double>()[i] = v; break;
    case DataType::kFloat16: data<uint16_t>()[i] = float_to_half_bits(static_cast<float>(v)); break;
    case DataType::kBFloat16:
      data<uint16_t>()[i] = float_to_bf16_bits(static_cast<float>(v));
      break;
    case DataType::kFloat8E4M3:
      data<uint8_t>()[i] = float_to_fp8e4m3_bits(static_cast<float>(v));
      break;
    case DataType::kUInt8: data<uint8_t>()[i] = static_cast<uint8_t>(wrapped()); break;
    case DataType::kInt8: data<int8_t>()[i] = static_cast<int8_t>(wrapped()); break;
    case DataType::kUInt16: data<uint16_t>()[i] = static_cast<uint16_t>(wrapped()); break;
    case DataType::kInt16: data<int16_t>()[i] = static_cast<int16_t>(wrapped()); break;
    case DataType::kInt32: data<int32_t>()[i] = static_cast<int32_t>(wrapped()); break;
    case DataType::kInt64: data<int64_t>()[i] = static_cast<int64_t>(wrapped()); break;
    case DataType::kUInt32: data<uint32_t>()[i] = static_cast<uint32_t>(wrapped()); break;
    case DataType::kUInt64: data<uint64_t>()[i] = wrapped(); break;
    case DataType::kBool: data<uint8_t>()[i] = v != 0 ? 1 : 0; break;
    default: KILN_CHECK(false && "set_double on a non-numeric tensor");
  }
}

std::vector<int64_t> Tensor::to_int64s() const {
  std::vector<int64_t> r(numel());
  if (dtype_ == DataType::kInt64) {
    if (!r.empty()) std::memcpy(r.data(), raw(), nbytes());
    return r;
  }
  for (int64_t i = 0; i < numel(); ++i) r[i] = static_cast<int64_t>(at_double(i));
  return r;
}

std::vector<float> Tensor::to_floats() const {
  std::vector<float> r(numel());
  for (int64_t i = 0; i < numel(); ++i) r[i] = static_cast<float>(at_double(i));
  return r;
}

}  // namespace kiln

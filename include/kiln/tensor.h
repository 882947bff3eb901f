// Host tensors and element types.
//
// A Tensor is a dtype, a shape and a reference-counted host buffer. Copies are shallow
// (they share the buffer, like a shared_ptr); clone() makes a deep copy. A Tensor is not
// synchronized: share it read-only across threads, or clone it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln {

// Values match ONNX TensorProto.DataType so conversion is a cast.
enum class DataType : int32_t {
  kUndefined = 0,
  kFloat32 = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,  // not supported by kiln's kernels; named so errors can say so
  kBool = 9,
  kFloat16 = 10,
  kFloat64 = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kBFloat16 = 16,
  // float8 e4m3 "fn" (ONNX FLOAT8E4M3FN): 1 sign, 4 exponent (bias 7), 3 mantissa bits; ±448 at
  // most, subnormals down to 2^-9, no infinity, NaN = 0x7f/0xff. kiln's fp8 codes.
  kFloat8E4M3 = 17,
};

const char* dtype_name(DataType dt);  // "float32", "int64", ...
size_t dtype_size(DataType dt);       // bytes per element; 0 for undefined/string
bool dtype_is_float(DataType dt);     // float16/bfloat16/float32/float64

using Shape = std::vector<int64_t>;
int64_t shape_numel(const Shape& s);
std::string shape_str(const Shape& s);  // "[1,3,224,224]"

class Tensor {
 public:
  Tensor() = default;
  // Allocates an uninitialized buffer for `shape`.
  Tensor(DataType dtype, Shape shape);

  static Tensor zeros(DataType dtype, Shape shape);
  // A float32 tensor holding `values` (size must equal the shape's element count).
  static Tensor from_floats(Shape shape, const std::vector<float>& values);
  static Tensor from_int64s(Shape shape, const std::vector<int64_t>& values);
  // A tensor whose buffer is `bytes` itself, taken without a copy (its size must be the
  // shape's byte count); e.g. an initializer's raw data from a parsed model.
  static Tensor from_bytes(DataType dtype, Shape shape, std::string&& bytes);
  // A tensor of `dtype` and `shape` over `storage`'s bytes from `byte_offset` on, sharing (and
  // keeping alive) its buffer without a copy or an allocation: the runtime's activation arena
  // hands out such views. The view must fit inside `storage`'s bytes.
  static Tensor view_of(const Tensor& storage, size_t byte_offset, DataType dtype, Shape shape);
  // A tensor of `dtype` and `shape` over `data`, memory the caller owns and keeps alive (and
  // unchanged in size) for as long as the tensor or a copy of it is used; no copy is made.
  static Tensor borrow(void* data, DataType dtype, Shape shape);
  // A tensor that owns `data` (holding `shape` elements of `dtype`) and gives it to
  // `release` when the last copy of it goes: memory from another allocator (pinned host
  // memory, see pinned_tensor in kiln/engine.h).
  static Tensor adopt(void* data, DataType dtype, Shape shape, void (*release)(void*));
  // A tensor over GPU memory of GPU `gpu` (a device pointer), given to `release` when the last
  // copy goes (null: the caller owns it and keeps it alive). A CUDA engine on that GPU takes it
  // as an input without a host copy; its bytes must not be read on the host (data(), clone(),
  // at_double... are for host tensors), and a CPU engine refuses it.
  static Tensor on_gpu(void* data, DataType dtype, Shape shape, int gpu,
                       void (*release)(void*) = nullptr);
  // The GPU whose memory holds the bytes, or -1 for host memory.
  int gpu() const { return gpu_; }
  // How many tensors share this one's buffer, views included (0 for an empty tensor): 1 when
  // this is the only one, so that its owner may reuse the bytes.
  long use_count() const { return buf_.use_count(); }

  bool defined() const { return dtype_ != DataType::kUndefined; }
  DataType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t i) const { return shape_[i < 0 ? i + rank() : i]; }
  int64_t numel() const { return shape_numel(shape_); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }

  void* raw() { return buf_.get(); }
  const void* raw() const { return buf_.get(); }
  template <class T>
  T* data() {
    return static_cast<T*>(raw());
  }
  template <class T>
  const T* data() const {
    return static_cast<const T*>(raw());
  }

  // Same buffer, new shape with the same element count.
  Tensor reshaped(Shape shape) const;
  Tensor clone() const;
  // Element i converted to double (any numeric dtype); for tests, printing and shape plumbing.
  double at_double(int64_t i) const;
  // Element i set from a double, converted to the dtype (floats rounded to nearest even, float8
  // e4m3 saturated, integers truncated toward zero and wrapped, bool: v != 0); for decoding
  // tensors written as numbers (a server's JSON requests). int64 beyond 2^53 is not exact.
  void set_double(int64_t i, double v);
  // All elements as int64 (integer or float dtypes); for shape-like inputs.
  std::vector<int64_t> to_int64s() const;
  std::vector<float> to_floats() const;

 private:
  DataType dtype_ = DataType::kUndefined;
  Shape shape_;
  std::shared_ptr<std::byte[]> buf_;
  int gpu_ = -1;
};

}  // namespace kiln

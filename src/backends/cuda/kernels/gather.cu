// Gather with constant indices (int32/int64, any rank, negative counting from the end), any
// element type, plain layout: out.shape = data[:axis] + indices + data[axis+1:]. Output row
// (o, j) is input row (o, index[j]) of `inner` bytes; the indices are resolved and checked
// at prepare (as the reference does before writing) and uploaded once. Each thread moves
// the widest unit (16..1 bytes) dividing the row and both pointers.

#include <memory>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/kernels/structured.cuh"
#include "ops/gather.h"
#include "ops/op_util.h"

namespace kiln {
namespace {

template <class U>
__global__ void gather_kernel(const U* __restrict__ x, U* __restrict__ y,
                              const int64_t* __restrict__ index, int64_t outer, int64_t count,
                              int64_t axis_len, int64_t row_units) {
  const int64_t total = outer * count * row_units;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t k = i % row_units;
    const int64_t r = i / row_units;
    const int64_t j = r % count, o = r / count;
    y[i] = x[(o * axis_len + index[j]) * row_units + k];
  }
}

template <class U>
Status launch_gather_as(const void* x, void* y, const int64_t* index, int64_t outer, int64_t count,
                        int64_t axis_len, int64_t row_bytes, cudaStream_t s) {
  constexpr int kThreads = 256;
  const int64_t units = row_bytes / int64_t{sizeof(U)};
  gather_kernel<U><<<cuda::grid_blocks(outer * count * units, kThreads), kThreads, 0, s>>>(
      static_cast<const U*>(x), static_cast<U*>(y), index, outer, count, axis_len, units);
  KILN_CUDA_LAUNCHED("gather_kernel");
  return Status::ok();
}

class GatherKernel final : public CudaKernel {
 public:
  GatherKernel(std::string name, int64_t axis) : name_(std::move(name)), axis_(axis) {}

  bool reads_on_host(int i) const override { return i == 1; }

  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                 CudaBuildContext& ctx) override {
    const TensorDesc& x = in[0];
    const Tensor* idx = in.size() > 1 ? in[1].value : nullptr;
    if (!idx) return unsupported("indices (input 1) is not a constant");
    if (idx->dtype() != DataType::kInt64 && idx->dtype() != DataType::kInt32)
      return invalid_argument(std::string("indices: expected int32 or int64, got ") +
                              dtype_name(idx->dtype()));
    const Shape& s = x.shape;
    KILN_ASSIGN_OR_RETURN(const int64_t axis,
                          normalize_axis(axis_, static_cast<int64_t>(s.size())));
    axis_len_ = s[axis];
    std::vector<int64_t> at(idx->numel());
    for (int64_t j = 0; j < idx->numel(); ++j) {
      const int64_t v =
          idx->dtype() == DataType::kInt64 ? idx->data<int64_t>()[j] : idx->data<int32_t>()[j];
      if (v < -axis_len_ || v >= axis_len_)
        return out_of_range("index " + std::to_string(v) + " out of range for axis " +
                            std::to_string(axis) + " of size " + std::to_string(axis_len_));
      at[j] = v < 0 ? v + axis_len_ : v;
    }
    count_ = static_cast<int64_t>(at.size());
    row_bytes_ = static_cast<int64_t>(dtype_size(x.dtype));
    for (size_t d = axis + 1; d < s.size(); ++d) row_bytes_ *= s[d];
    outer_ = 1;
    for (int64_t d = 0; d < axis; ++d) outer_ *= s[d];
    index_ = nullptr;
    if (count_ > 0) {
      const size_t bytes = at.size() * sizeof(int64_t);
      const std::string key =
          name_ + "/gather/index/" + std::to_string(cuda::content_hash(at.data(), bytes));
      KILN_ASSIGN_OR_RETURN(void* dev, ctx.weights->upload(key, at.data(), bytes));
      index_ = static_cast<const int64_t*>(dev);
    }
    Shape o(s.begin(), s.begin() + axis);
    o.insert(o.end(), idx->shape().begin(), idx->shape().end());
    o.insert(o.end(), s.begin() + axis + 1, s.end());
    out[0] = TensorDesc{x.dtype, o};
    return Status::ok();
  }

  std::string tactic() const override { return "kiln gather"; }

  Status enqueue(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const CudaRunContext& run) override {
    if (outer_ * count_ * row_bytes_ == 0) return Status::ok();
    const void* x = in[0]->data;
    void* y = out[0]->data;
    const uint64_t bits = static_cast<uint64_t>(row_bytes_) | reinterpret_cast<uintptr_t>(x) |
                          reinterpret_cast<uintptr_t>(y);
    const cudaStream_t s = run.stream;
    if (bits % 16 == 0)
      return launch_gather_as<uint4>(x, y, index_, outer_, count_, axis_len_, row_bytes_, s);
    if (bits % 8 == 0)
      return launch_gather_as<uint2>(x, y, index_, outer_, count_, axis_len_, row_bytes_, s);
    if (bits % 4 == 0)
      return launch_gather_as<uint32_t>(x, y, index_, outer_, count_, axis_len_, row_bytes_, s);
    if (bits % 2 == 0)
      return launch_gather_as<uint16_t>(x, y, index_, outer_, count_, axis_len_, row_bytes_, s);
    return launch_gather_as<uint8_t>(x, y, index_, outer_, count_, axis_len_, row_bytes_, s);
  }

 private:
  std::string name_;
  int64_t axis_;
  const int64_t* index_ = nullptr;
  int64_t outer_ = 0, count_ = 0, axis_len_ = 0, row_bytes_ = 0;
};

Result<std::unique_ptr<CudaKernel>> make_gather(const Node& node, Precision) {
  const Value* x = node.input(0);
  if (!x) return invalid_argument("input 0 is missing");
  if (dtype_size(x->dtype) == 0)
    return unsupported(std::string("Gather of ") + dtype_name(x->dtype));
  if (!node.input(1) || !node.input(1)->is_constant())
    return unsupported("indices (input 1) is not a constant");
  return std::unique_ptr<CudaKernel>(new GatherKernel(node.name, gather_attrs(node).axis));
}

}  // namespace

KILN_REGISTER_CUDA_KERNEL(Gather, make_gather);

}  // namespace kiln

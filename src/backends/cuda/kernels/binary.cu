// Add, Sub, Mul, Div, Pow with ONNX (numpy) multidirectional broadcasting. One family file:
// the ops differ only in their element function (binary.cuh).
//
// Dtypes: float32/float16 activations; int32/int64 for Add/Sub/Mul/Div (shape arithmetic,
// plain layout). Pow takes a float base and a float exponent, or any constant exponent.
//
// Layouts: rank-4 float inputs of equal shape meet in one layout: input 0 takes what it is
// offered and input 1 is asked for the same (the plan asks a node's inputs in order; NHWC
// when input 0 is a constant), so two plain tensors, such as the [N,H,W,C] activations of a
// ConvNeXt MLP, stay plain where asking both for NHWC converted both; a rank-4
// input with a scalar or per-channel partner takes whatever it is offered; an [N,C,1,1]
// tensor is the same bytes in both layouts and takes what it is offered too. The output
// keeps the layout of the input that has its shape. The strided kernel reads any mix of
// layouts, so every choice is correct; the rules only keep the common cases on the fast
// kernels. Constant operands are uploaded once (in the activation dtype) at prepare.
#include <cuda_fp16.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/kernels/binary.cuh"
#include "ops/op_util.h"

namespace kiln {

namespace {

using cuda::IndexedArgs;
using cuda::StridedArgs;

bool is_int(DataType dt) { return dt == DataType::kInt32 || dt == DataType::kInt64; }

// Equal static dims (known and equal, or the same symbolic name).
bool same_dims(const Value* a, const Value* b) {
  if (!a || !b || !a->has_shape || !b->has_shape || a->dims.size() != b->dims.size()) return false;
  for (size_t i = 0; i < a->dims.size(); ++i) {
    const Dim &x = a->dims[i], &y = b->dims[i];
    if (x.known() != y.known()) return false;
    if (x.known() ? x.value != y.value : (x.param.empty() || x.param != y.param)) return false;
  }
  return true;
}

// Value v broadcast against a rank-4 tensor reads one element per (n, c) at most: its
// right-aligned dims 2 and 3 are 1 (or absent).
bool is_channel_like(const Value* v) {
  if (!v || !v->has_shape || v->dims.size() > 4) return false;
  const int64_t r = static_cast<int64_t>(v->dims.size());
  for (int64_t k = 2; k < 4; ++k) {
    const int64_t j = k - (4 - r);
    if (j >= 0 && v->dims[j].value != 1) return false;
  }
  return true;
}

// Row-major strides of `shape` read as `layout`, padded to `rank`, 0 on broadcast dims.
std::vector<int64_t> logical_strides(const Shape& shape, Layout layout, const Shape& out) {
  const size_t rank = out.size(), off = rank - shape.size();
  std::vector<int64_t> s(rank, 0);
  std::vector<int64_t> own = strides_of(shape);
  if (layout == Layout::kNHWC)  // [N,C,H,W] stored as [N,H,W,C]
    own = {shape[1] * shape[2] * shape[3], 1, shape[3] * shape[1], shape[1]};
  for (size_t i = 0; i < shape.size(); ++i) s[off + i] = shape[i] == 1 ? 0 : own[i];
  return s;
}

class BinaryKernel final : public CudaKernel {
 public:
  // The layout rules and the in-place choice are taken from the graph's static shapes here,
  // so the kernel keeps no pointer into the graph.
  BinaryKernel(const Node& node, bool float_op) : op_(node.op), name_(node.name) {
    float_op_ = float_op;
    for (int i = 0; i < 2; ++i) {
      const Value* self = node.inputs[i];
      const Value* other = node.inputs[1 - i];
      constant_[i] = self->is_constant();
      if (!float_op_ || !self->has_shape || self->dims.size() != 4)
        rule_[i] = Rule::kPlain;
      else if (self->dims[2].value == 1 && self->dims[3].value == 1)
        rule_[i] = Rule::kOffered;  // [N,C,1,1]: the same bytes in both layouts
      else if (same_dims(self, other))
        rule_[i] = Rule::kMatch;
      else if (is_channel_like(other))
        rule_[i] = Rule::kOffered;
      else
        rule_[i] = Rule::kPlain;
    }
    inplace_ = !constant_[0] && same_dims(node.inputs[0], node.outputs[0]);
  }

  std::vector<Layout> input_layouts(const std::vector<Layout>& offered) const override {
    std::vector<Layout> want(offered.size(), Layout::kPlain);
    for (size_t i = 0; i < 2 && i < offered.size(); ++i) {
      switch (rule_[i]) {
        case Rule::kOffered: want[i] = offered[i]; break;
        case Rule::kMatch:
          // Input 0 takes its offer and input 1 follows it; a constant input 0 (uploaded by
          // this kernel) leaves input 1 in NHWC.
          want[i] = i == 0                                      ? offered[0]
                    : rule_[0] == Rule::kMatch && !constant_[0] ? offered[0]
                                                                : Layout::kNHWC;
          break;
        case Rule::kPlain: break;
      }
    }
    return want;
  }
  bool reads_on_host(int i) const override { return constant_[i]; }
  int inplace_input() const override { return inplace_ ? 0 : -1; }
  std::string tactic() const override { return tactic_; }

  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                 CudaBuildContext& ctx) override;
  Status enqueue(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const CudaRunContext& run) override;

 private:
  enum class Mode { kFlat, kIndexed, kStrided };

  Status upload_constant(int i, const TensorDesc& d, Layout layout, CudaBuildContext& ctx);
  template <class T>
  Status launch(const void* a, const void* b, void* y, cudaStream_t stream) const;
  template <class T, class F>
  Status launch_with(const T* a, const T* b, T* y, F f, cudaStream_t stream) const;

  // kMatch: an equal-shaped partner; input 0 takes its offer, input 1 follows it.
  enum class Rule { kPlain, kMatch, kOffered };

  OpKind op_;
  std::string name_;
  bool float_op_ = true;
  bool constant_[2] = {false, false};
  Rule rule_[2] = {Rule::kPlain, Rule::kPlain};
  bool inplace_ = false;

  // Set by prepare.
  DataType dtype_ = DataType::kUndefined;
  Layout layout_[2] = {Layout::kPlain, Layout::kPlain};
  const void* const_data_[2] = {nullptr, nullptr};
  int64_t numel_ = 0;
  Mode mode_ = Mode::kFlat;
  int big_ = 0;  // kIndexed: the operand with y's shape and layout
  IndexedArgs indexed_{};
  StridedArgs strided_{};
  std::string tactic_;
};

Status BinaryKernel::upload_constant(int i, const TensorDesc& d, Layout layout,
                                     CudaBuildContext& ctx) {
  const Tensor& t = *d.value;
  std::vector<uint8_t> bytes(static_cast<size_t>(t.numel()) * dtype_size(dtype_));
  std::vector<int64_t> order(t.numel());  // host element read for each device element
  for (int64_t k = 0; k < t.numel(); ++k) order[k] = k;
  if (layout == Layout::kNHWC) {
    const int64_t n = t.dim(0), c = t.dim(1), hw = t.dim(2) * t.dim(3);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t p = 0; p < hw; ++p)
        for (int64_t ch = 0; ch < c; ++ch) order[(b * hw + p) * c + ch] = (b * c + ch) * hw + p;
  }
  if (is_device_float(dtype_)) {
    const std::vector<float> v = t.to_floats();
    Fp16Saturation sat;  // an eps of 1e-12 must not become 0, nor a mask's -1e9 become -inf
    for (int64_t k = 0; k < t.numel(); ++k) {
      const float f = v[order[k]];
      if (dtype_ == DataType::kFloat16) {
        const uint16_t h = sat.convert(f);
        std::memcpy(&bytes[k * 2], &h, 2);
      } else {
        store_floats(&f, 1, dtype_, &bytes[k * dtype_size(dtype_)]);
      }
    }
    if (sat.changed && ctx.notes)
      ctx.notes->push_back(sat.note(name_ + "'s input " + std::to_string(i)));
  } else {
    const std::vector<int64_t> v = t.to_int64s();
    for (int64_t k = 0; k < t.numel(); ++k) {
      if (dtype_ == DataType::kInt32) {
        const auto x = static_cast<int32_t>(v[order[k]]);
        std::memcpy(&bytes[k * 4], &x, 4);
      } else {
        std::memcpy(&bytes[k * 8], &v[order[k]], 8);
      }
    }
  }
  // The key carries the bytes' hash: nodes of one name (tests, several graphs) with other
  // constants never share a buffer.
  uint64_t hash = 1469598103934665603ull;  // FNV-1a
  for (uint8_t byte : bytes) hash = (hash ^ byte) * 1099511628211ull;
  const std::string key = name_ + "/input" + std::to_string(i) + "/" + dtype_name(dtype_) + "/" +
                          layout_name(layout) + "/" + shape_str(t.shape()) + "/" +
                          std::to_string(hash);
  KILN_ASSIGN_OR_RETURN(const_data_[i], ctx.weights->upload(key, bytes.data(), bytes.size()));
  layout_[i] = layout;
  return Status::ok();
}

Status BinaryKernel::prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                             CudaBuildContext& ctx) {
  if (in.size() != 2 || !in[0].present() || !in[1].present())
    return invalid_argument("expected 2 inputs");
  // The element dtype is the non-constant inputs' (the activation dtype for constants).
  dtype_ = DataType::kUndefined;
  for (int i = 0; i < 2; ++i) {
    if (constant_[i]) continue;
    if (dtype_ != DataType::kUndefined && in[i].dtype != dtype_)
      return invalid_argument(std::string("input dtypes differ: ") + dtype_name(dtype_) + " and " +
                              dtype_name(in[i].dtype));
    dtype_ = in[i].dtype;
  }
  if (dtype_ == DataType::kUndefined) dtype_ = float_op_ ? ctx.act_dtype() : in[0].dtype;
  if (float_op_ ? !is_device_float(dtype_) : !is_int(dtype_))
    return unsupported(std::string(op_name(op_)) + " on " + dtype_name(dtype_));
  KILN_ASSIGN_OR_RETURN(Shape shape, broadcast_shapes({in[0].shape, in[1].shape}));
  numel_ = shape_numel(shape);

  // y takes the layout of a non-constant input of its shape.
  Layout out_layout = Layout::kPlain;
  for (int i = 1; i >= 0; --i)
    if (!constant_[i] && in[i].shape == shape) out_layout = in[i].layout;
  for (int i = 0; i < 2; ++i) {
    if (!constant_[i]) {
      layout_[i] = in[i].layout;
      continue;
    }
    const bool permute = out_layout == Layout::kNHWC && in[i].shape == shape;
    KILN_RETURN_IF_ERROR(upload_constant(i, in[i], permute ? Layout::kNHWC : Layout::kPlain, ctx));
  }
  out[0] = TensorDesc{dtype_, shape, nullptr, out_layout};

  auto full = [&](int i) { return in[i].shape == shape && layout_[i] == out_layout; };
  const size_t rank = shape.size();
  if (full(0) && full(1)) {
    mode_ = Mode::kFlat;
    tactic_ = "kiln flat";
    return Status::ok();
  }
  // kIndexed: the small operand, right-aligned to y, varies along dims 0 and 1 at most.
  for (int big = 0; big < 2; ++big) {
    const Shape& s = in[1 - big].shape;
    if (!full(big) || shape_numel(s) == 0) continue;
    Shape padded(rank - std::min(rank, s.size()), 1);
    padded.insert(padded.end(), s.begin(), s.end());
    if (padded.size() != rank) continue;
    bool ok = true;
    for (size_t d = 2; d < rank; ++d) ok = ok && padded[d] == 1;
    if (!ok) continue;
    const int64_t n = rank >= 1 ? shape[0] : 1, c = rank >= 2 ? shape[1] : 1;
    const int64_t pn = rank >= 1 ? padded[0] : 1, pc = rank >= 2 ? padded[1] : 1;
    indexed_.per_batch = n ? numel_ / n : 1;
    indexed_.channels = c ? c : 1;
    indexed_.inner = out_layout == Layout::kNHWC ? 1 : (c ? indexed_.per_batch / c : 1);
    indexed_.channel_stride = pc == 1 ? 0 : 1;
    indexed_.batch_stride = pn == 1 ? 0 : pc;
    indexed_.small_first = big == 1;
    if (indexed_.per_batch == 0 || indexed_.inner == 0) break;  // empty: nothing to index
    big_ = big;
    mode_ = Mode::kIndexed;
    tactic_ = "kiln broadcast per channel";
    return Status::ok();
  }
  if (rank > static_cast<size_t>(cuda::kMaxBinaryRank))
    return unsupported("broadcast of rank " + std::to_string(rank));
  // kStrided: y's physical order is its layout's; operands follow through their strides.
  std::vector<size_t> perm(rank);
  for (size_t d = 0; d < rank; ++d) perm[d] = d;
  if (out_layout == Layout::kNHWC) perm = {0, 2, 3, 1};
  const auto sa = logical_strides(in[0].shape, layout_[0], shape);
  const auto sb = logical_strides(in[1].shape, layout_[1], shape);
  strided_.rank = static_cast<int>(rank);
  for (size_t d = 0; d < rank; ++d) {
    strided_.dims[d] = shape[perm[d]];
    strided_.stride_a[d] = sa[perm[d]];
    strided_.stride_b[d] = sb[perm[d]];
  }
  mode_ = Mode::kStrided;
  tactic_ = "kiln strided broadcast";
  return Status::ok();
}

template <class T, class F>
Status BinaryKernel::launch_with(const T* a, const T* b, T* y, F f, cudaStream_t stream) const {
  constexpr int kThreads = 256;
  constexpr int kV = static_cast<int>(16 / sizeof(T));
  using cuda::aligned_to;
  using cuda::grid_for;
  if (numel_ == 0) return Status::ok();
  switch (mode_) {
    case Mode::kFlat:
      if (aligned_to(a, 16) && aligned_to(b, 16) && aligned_to(y, 16))
        cuda::binary_flat<T, F, kV>
            <<<grid_for(numel_ / kV + 1, kThreads), kThreads, 0, stream>>>(a, b, y, numel_, f);
      else
        cuda::binary_flat<T, F, 1>
            <<<grid_for(numel_, kThreads), kThreads, 0, stream>>>(a, b, y, numel_, f);
      KILN_CUDA_LAUNCHED("binary_flat");
      return Status::ok();
    case Mode::kIndexed: {
      const T* big = big_ == 0 ? a : b;
      const T* small = big_ == 0 ? b : a;
      const IndexedArgs& p = indexed_;
      const int64_t batches = numel_ / p.per_batch;
      if (p.inner == 1 && p.channel_stride == 1 && p.channels % kV == 0 && p.per_batch % kV == 0 &&
          p.per_batch / kV < (int64_t{1} << 31) && batches <= 65535 && aligned_to(big, 16) &&
          aligned_to(small, 16) && aligned_to(y, 16)) {
        const int64_t vecs = p.per_batch / kV;
        const dim3 grid(
            static_cast<unsigned>(std::min<int64_t>((vecs + kThreads - 1) / kThreads, 65535)),
            static_cast<unsigned>(batches));
        cuda::binary_channels_nhwc<T, F, kV><<<grid, kThreads, 0, stream>>>(
            big, small, y, static_cast<uint32_t>(vecs), static_cast<uint32_t>(p.channels / kV),
            p.per_batch, p.batch_stride, p.small_first, f);
        KILN_CUDA_LAUNCHED("binary_channels_nhwc");
        return Status::ok();
      }
      if (aligned_to(big, 16) && aligned_to(y, 16))
        cuda::binary_indexed<T, F, kV>
            <<<grid_for(numel_ / kV + 1, kThreads), kThreads, 0, stream>>>(big, small, y, numel_, f,
                                                                           indexed_);
      else
        cuda::binary_indexed<T, F, 1><<<grid_for(numel_, kThreads), kThreads, 0, stream>>>(
            big, small, y, numel_, f, indexed_);
      KILN_CUDA_LAUNCHED("binary_indexed");
      return Status::ok();
    }
    case Mode::kStrided:
      cuda::binary_strided<T, F>
          <<<grid_for(numel_, kThreads), kThreads, 0, stream>>>(a, b, y, numel_, f, strided_);
      KILN_CUDA_LAUNCHED("binary_strided");
      return Status::ok();
  }
  return internal_error("unknown binary mode");
}

template <class T>
Status BinaryKernel::launch(const void* a, const void* b, void* y, cudaStream_t stream) const {
  const T* pa = static_cast<const T*>(a);
  const T* pb = static_cast<const T*>(b);
  T* py = static_cast<T*>(y);
  switch (op_) {
    case OpKind::Add: return launch_with(pa, pb, py, cuda::AddFn{}, stream);
    case OpKind::Sub: return launch_with(pa, pb, py, cuda::SubFn{}, stream);
    case OpKind::Mul: return launch_with(pa, pb, py, cuda::MulFn{}, stream);
    case OpKind::Div: return launch_with(pa, pb, py, cuda::DivFn{}, stream);
    case OpKind::Pow:
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, __half> ||
                    std::is_same_v<T, __nv_bfloat16>)
        return launch_with(pa, pb, py, cuda::PowFn{}, stream);
      break;
    default: break;
  }
  return internal_error(std::string("binary kernel for ") + op_name(op_));
}

Status BinaryKernel::enqueue(const std::vector<const TensorRef*>& in,
                             const std::vector<TensorRef*>& out, const CudaRunContext& run) {
  const void* a = constant_[0] ? const_data_[0] : in[0]->data;
  const void* b = constant_[1] ? const_data_[1] : in[1]->data;
  void* y = out[0]->data;
  switch (dtype_) {
    case DataType::kFloat32: return launch<float>(a, b, y, run.stream);
    case DataType::kFloat16: return launch<__half>(a, b, y, run.stream);
    case DataType::kBFloat16: return launch<__nv_bfloat16>(a, b, y, run.stream);
    case DataType::kInt32: return launch<int32_t>(a, b, y, run.stream);
    case DataType::kInt64: return launch<int64_t>(a, b, y, run.stream);
    default: return internal_error(std::string("binary on ") + dtype_name(dtype_));
  }
}

Result<std::unique_ptr<CudaKernel>> make_binary(const Node& node, Precision) {
  if (node.inputs.size() != 2 || !node.input(0) || !node.input(1) || !node.output(0))
    return invalid_argument("expected 2 inputs and an output");
  if (!node.epilogue.empty()) return unsupported("a fused epilogue on a binary op");
  const DataType a = node.inputs[0]->dtype, b = node.inputs[1]->dtype;
  bool float_op = is_device_float(a);
  if (node.op == OpKind::Pow) {
    // A constant exponent of any numeric type is converted to the base's dtype on upload.
    if (!is_device_float(a) || (!is_device_float(b) && !node.inputs[1]->is_constant()))
      return unsupported(std::string("Pow with ") + dtype_name(a) + " base and " + dtype_name(b) +
                         " exponent");
  } else if (a != b || !(is_device_float(a) || is_int(a))) {
    return unsupported(std::string(op_name(node.op)) + " on " + dtype_name(a) + " and " +
                       dtype_name(b) + " (float32/float16/int32/int64, equal dtypes)");
  }
  return std::unique_ptr<CudaKernel>(std::make_unique<BinaryKernel>(node, float_op));
}

}  // namespace

KILN_REGISTER_CUDA_KERNEL(Add, make_binary);
KILN_REGISTER_CUDA_KERNEL(Sub, make_binary);
KILN_REGISTER_CUDA_KERNEL(Mul, make_binary);
KILN_REGISTER_CUDA_KERNEL(Div, make_binary);
KILN_REGISTER_CUDA_KERNEL(Pow, make_binary);

}  // namespace kiln

// MatMul (numpy semantics) through cuBLASLt: Y = act(A·B + residual) for float A/B.
//
// 1-D operands are promoted as numpy does ([K] → [1, K] for A, [K, 1] for B; the dimension
// is dropped from Y). Batch dimensions broadcast; what one strided-batched call can express
// runs here: an operand whose batch dims are all 1 is shared (stride 0), one whose batch dims
// equal the broadcast shape is strided. A batched A times an unbatched B is one plain GEMM
// with M' = batch·M. Partial broadcasts ([3, 1] × [1, 3]) are unsupported. B may be a
// constant (uploaded once at prepare) or an activation. A bias epilogue (a Linear layer's
// bias along the last axis) and ReLU are cuBLASLt's epilogue, the residual its C (in place
// allowed), other activations one launch_epilogue after.
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cublaslt/lt_matmul.h"
#include "backends/cuda/cudnn/conv_descs.h"
#include "backends/cuda/kernels/launch.h"

namespace kiln {
namespace {

class LtMatMulKernel final : public CudaKernel {
 public:
  LtMatMulKernel(const Node& node, bool b_const)
      : name_(node.name), epilogue_(node.epilogue), b_const_(b_const) {}

  bool reads_on_host(int i) const override {
    return (i == 1 && b_const_) || i == epilogue_.bias_input;
  }
  int inplace_input() const override { return epilogue_.residual_input; }
  size_t workspace_bytes() const override { return lt_.workspace_bytes(); }
  std::string tactic() const override {
    return lt_.tactic() +
           (separate_act_ ? std::string(" + ") + activation_name(epilogue_.act) : "");
  }

  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                 CudaBuildContext& ctx) override;
  Status enqueue(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const CudaRunContext& run) override {
    const int r = epilogue_.residual_input;
    KILN_RETURN_IF_ERROR(lt_.run(run.cublaslt, in[0]->data, b_const_ ? b_dev_ : in[1]->data,
                                 r >= 0 ? in[r]->data : nullptr, out[0]->data, run.workspace,
                                 lt_.workspace_bytes(), run.stream));
    if (!separate_act_) return Status::ok();
    return launch_epilogue(out_desc_, out[0]->data, nullptr, nullptr, epilogue_.act,
                           epilogue_.alpha, epilogue_.beta, run.stream);
  }

 private:
  std::string name_;
  Epilogue epilogue_;
  bool b_const_;
  TensorDesc out_desc_;
  const void* b_dev_ = nullptr;
  bool separate_act_ = false;
  LtMatmul lt_;
};

Status LtMatMulKernel::prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                               CudaBuildContext& ctx) {
  if (in.size() < 2 || !in[0].present() || !in[1].present())
    return invalid_argument("MatMul needs A and B");
  const DataType dt = in[0].dtype;
  if (!is_device_float(dt) || in[1].dtype != dt)
    return unsupported(std::string("MatMul on ") + dtype_name(dt) + " x " +
                       dtype_name(in[1].dtype) + " (cuBLASLt: float32, float16 or bfloat16)");
  if (in[0].layout != Layout::kPlain || in[1].layout != Layout::kPlain)
    return invalid_argument("MatMul operands must arrive in plain layout");
  Shape sa = in[0].shape, sb = in[1].shape;
  if (sa.empty() || sb.empty()) return invalid_argument("MatMul on a scalar");
  const bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
  if (a_vec) sa.insert(sa.begin(), 1);
  if (b_vec) sb.push_back(1);
  const int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  if (sb[sb.size() - 2] != k)
    return invalid_argument("MatMul inner dimensions differ: A " + shape_str(in[0].shape) + ", B " +
                            shape_str(in[1].shape));
  const Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  Shape batch(std::max(ba.size(), bb.size()), 1);
  for (size_t i = 0; i < batch.size(); ++i) {
    const int64_t da = i < batch.size() - ba.size() ? 1 : ba[i - (batch.size() - ba.size())];
    const int64_t db = i < batch.size() - bb.size() ? 1 : bb[i - (batch.size() - bb.size())];
    if (da != db && da != 1 && db != 1)
      return invalid_argument("MatMul batch dims of A " + shape_str(in[0].shape) + " and B " +
                              shape_str(in[1].shape) + " do not broadcast");
    batch[i] = da == 1 ? db : da;
  }
  Shape ys = batch;
  if (!a_vec) ys.push_back(m);
  if (!b_vec) ys.push_back(n);
  out_desc_ = TensorDesc{dt, ys};
  out[0] = out_desc_;
  const int r = epilogue_.residual_input;
  if (r >= 0 && (r >= static_cast<int>(in.size()) || in[r].shape != ys || in[r].dtype != dt ||
                 in[r].layout != Layout::kPlain))
    return invalid_argument("epilogue residual must match the output " + shape_str(ys));

  const int64_t nb = shape_numel(batch), na_b = shape_numel(ba), nb_b = shape_numel(bb);
  LtProblem p;
  p.dtype = dt;
  p.m = m;
  p.n = n;
  p.k = k;
  if (nb_b == 1) {
    p.m = m * na_b;  // A's batches stacked: one GEMM (A and Y are contiguous)
  } else {
    if ((na_b != 1 && na_b != nb) || nb_b != nb)
      return unsupported("MatMul broadcast of A " + shape_str(in[0].shape) + " with B " +
                         shape_str(in[1].shape) + " is not one strided batch");
    p.batch = nb;
    p.stride_a = na_b == 1 ? 0 : m * k;
    p.stride_b = k * n;
    p.stride_c = p.stride_d = m * n;
  }
  if (b_const_) {
    if (!in[1].value) return invalid_argument("MatMul B was declared constant");
    std::vector<uint8_t> bytes = encode_floats(in[1].value->to_floats(), dt);
    KILN_ASSIGN_OR_RETURN(
        void* bd, ctx.weights->upload(name_ + "/B/" + dtype_name(dt), bytes.data(), bytes.size()));
    b_dev_ = bd;
  }
  p.relu = epilogue_.act == Activation::kRelu;
  const int bi = epilogue_.bias_input;
  if (bi >= 0) {
    if (b_vec) return unsupported("MatMul bias epilogue with a 1-D B (no N axis)");
    if (bi >= static_cast<int>(in.size()) || !in[bi].value || in[bi].shape != Shape{n})
      return invalid_argument("MatMul bias epilogue must be a constant [" + std::to_string(n) +
                              "]");
    std::vector<uint8_t> bytes = encode_floats(in[bi].value->to_floats(), dt);
    KILN_ASSIGN_OR_RETURN(void* bd, ctx.weights->upload(name_ + "/bias/" + dtype_name(dt),
                                                        bytes.data(), bytes.size()));
    p.bias = bd;
  }
  if (r >= 0) {
    p.c_present = true;
    p.beta = 1.f;
  }
  separate_act_ = epilogue_.act != Activation::kNone && epilogue_.act != Activation::kRelu;
  return lt_.init(p, b_const_ ? b_dev_ : nullptr, ctx)
      .with_context(name_ + " (MatMul " + shape_str(in[0].shape) + " x " + shape_str(in[1].shape) +
                    ", " + dtype_name(dt) + ")");
}

Result<std::unique_ptr<CudaKernel>> make_lt_matmul(const Node& node, Precision precision) {
  if (node.epilogue.int8())
    return unsupported("MatMul with 8-bit operands (fuse_int8_conv): no 8-bit CUDA MatMul yet");
  if (node.inputs.size() < 2 || !node.inputs[0] || !node.inputs[1])
    return unsupported("MatMul without A or B");
  for (int i = 0; i < 2; ++i) {
    const Value* v = node.inputs[i];
    const DataType t = v->is_constant() ? v->constant.dtype() : v->dtype;
    if (!is_device_float(t))
      return unsupported(std::string("MatMul on ") + dtype_name(t) +
                         " (cuBLASLt: float32, float16 or bfloat16)");
  }
  if (node.inputs[0]->is_constant()) return unsupported("MatMul with a constant A");
  return std::unique_ptr<CudaKernel>(new LtMatMulKernel(node, node.inputs[1]->is_constant()));
}

}  // namespace

KILN_REGISTER_CUDA_KERNEL(MatMul, make_lt_matmul);

}  // namespace kiln

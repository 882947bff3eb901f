// oneDNN Add / Sub / Mul / Div in fp32 with ONNX (numpy) broadcasting, and an epilogue
// activation as an eltwise post-op.
//
// oneDNN's binary primitive broadcasts only its second source: src0 must have dst's shape,
// and each dim of src1 is either src0's or 1. The ranks are aligned by leading 1s. Where
// input 1 has the full shape and input 0 is the broadcast one, Add and Mul swap their
// inputs, and Sub runs as -(b - a) (a linear post-op scales by -1). Div with a broadcast
// dividend, or two inputs that both broadcast ([N,1] + [1,M]), run on the reference kernel.
//
// Rank-4 operands of the output's shape, and the output, are read and written in the layout
// their group is stored in (stored_desc: a squeeze-and-excitation Mul between two convs then
// needs no reorder); a [N, C, 1, 1] operand has the same bytes in every stored layout and is
// described in the output's. A full operand stored unlike the output is reordered into the
// output's layout first: oneDNN 2.6 runs mixed layouts on its reference kernel only, 10–30×
// slower.

#include "backends/cpu/dnnl_common.h"

namespace kiln::dnnl_cpu {

namespace {

using dnnl::memory;
using tag = memory::format_tag;

// `s` with leading 1s up to `rank` dims.
Shape aligned(const Shape& s, size_t rank) {
  Shape r(rank - std::min(rank, s.size()), 1);
  r.insert(r.end(), s.begin(), s.end());
  return r;
}

dnnl::algorithm binary_algorithm(OpKind op) {
  switch (op) {
    case OpKind::Add: return dnnl::algorithm::binary_add;
    case OpKind::Sub: return dnnl::algorithm::binary_sub;
    case OpKind::Mul: return dnnl::algorithm::binary_mul;
    default: return dnnl::algorithm::binary_div;
  }
}

class DnnlBinaryKernel final : public DnnlKernel {
 public:
  using DnnlKernel::DnnlKernel;

 protected:
  bool try_prepare(const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out) override {
    const Shape& ys = out[0].shape;
    if (!all_positive(ys) || !all_positive(in[0].shape) || !all_positive(in[1].shape)) return false;
    const size_t rank = std::max<size_t>(ys.size(), 1);
    const Shape a = aligned(in[0].shape, rank), b = aligned(in[1].shape, rank);
    const Shape y = aligned(ys, rank);
    const OpKind op = node_.op;
    swapped_ = false;
    bool negate = false;
    if (a != y) {
      if (b != y || op == OpKind::Div) return false;
      swapped_ = true;
      negate = op == OpKind::Sub;
    }
    dnnl::post_ops post;
    if (negate) post.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, -1.f, 0.f);
    if (!append_activation(node_.epilogue, post)) return false;
    dnnl::primitive_attr attr;
    attr.set_post_ops(post);
    // The primitive runs in the output's layout (stored, or plain), where oneDNN has its JIT
    // kernel; a full operand stored otherwise (one of the two operands stored plain, the
    // other in a group's layout) is reordered into it first.
    dst_md_ = rank == 4 ? stored_desc(shared_, node_.output(0), y) : plain_desc(y);
    const memory::format_tag y_tag =
        rank == 4 ? stored_format(shared_, node_.output(0), y[0]) : tag::nchw;
    for (int k = 0; k < 2; ++k) {
      const size_t i = swapped_ ? 1 - k : k;
      const Shape& s = (i == 0) ? a : b;
      Operand& o = ops_[k];
      o.input = i;
      o.reorder = false;
      if (rank == 4 && s == y) {
        o.ext_md = stored_desc(shared_, node_.input(i), s);
        o.md = dst_md_;
        o.reorder = o.ext_md != o.md;
      } else if (rank == 4 && y_tag != tag::nchw && s[1] == y[1] && s[2] == 1 && s[3] == 1) {
        // A [N or 1, C, 1, 1] operand has the same bytes in the output's stored layout (nhwc,
        // or blocks of C channels when C is a multiple of the block): described in it.
        o.md = o.ext_md = memory::desc(to_dims(s), memory::data_type::f32, y_tag);
      } else {
        o.md = o.ext_md = plain_desc(s);
      }
      if (o.reorder) {
        o.scratch = memory(o.md, cpu_engine());
        o.reorder_prim = dnnl::reorder(
            dnnl::reorder::primitive_desc(cpu_engine(), o.ext_md, cpu_engine(), o.md));
      }
    }
    dnnl::binary::desc desc(binary_algorithm(op), ops_[0].md, ops_[1].md, dst_md_);
    prim_ = dnnl::binary(dnnl::binary::primitive_desc(desc, attr, cpu_engine()));
    stream_ = dnnl::stream(cpu_engine());
    return true;
  }

  std::string impl_info() const override { return impl_info_of(prim_); }

  void run(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out) override {
    memory src[2];
    for (int k = 0; k < 2; ++k) {
      Operand& o = ops_[k];
      memory ext(o.ext_md, cpu_engine(), const_cast<void*>(in[o.input]->data));
      if (o.reorder) o.reorder_prim.execute(stream_, ext, o.scratch);
      src[k] = o.reorder ? o.scratch : ext;
    }
    memory d(dst_md_, cpu_engine(), out[0]->data);
    prim_.execute(stream_, {{DNNL_ARG_SRC_0, src[0]}, {DNNL_ARG_SRC_1, src[1]}, {DNNL_ARG_DST, d}});
    stream_.wait();
  }

 private:
  // oneDNN's src0 / src1: which input, as stored (ext_md) and as the primitive reads it.
  struct Operand {
    size_t input = 0;
    memory::desc ext_md, md;
    bool reorder = false;
    memory scratch;
    dnnl::reorder reorder_prim;
  };
  bool swapped_ = false;  // input 1 is oneDNN's src0
  Operand ops_[2];
  memory::desc dst_md_;
  dnnl::binary prim_;
  dnnl::stream stream_;
};

}  // namespace

bool is_binary_op(OpKind op) {
  return op == OpKind::Add || op == OpKind::Sub || op == OpKind::Mul || op == OpKind::Div;
}

static bool binary_supported(const Node& node) {
  if (!is_binary_op(node.op)) return false;
  if (node.inputs.size() != 2 || node.outputs.size() != 1) return false;
  if (!is_f32(node.inputs[0]) || !is_f32(node.inputs[1]) || !is_f32(node.outputs[0])) return false;
  // An activation may have been fused in; a residual belongs to Conv/Gemm only.
  return node.epilogue.residual_input < 0;
}

static std::unique_ptr<Kernel> make_binary_kernel(const Node& node, const DnnlShared& shared) {
  return std::make_unique<DnnlBinaryKernel>(node, shared);
}

KILN_REGISTER_DNNL_KERNEL(binary, binary_supported, make_binary_kernel, OpKind::Add, OpKind::Sub,
                          OpKind::Mul, OpKind::Div);

}  // namespace kiln::dnnl_cpu

// oneDNN Concat in fp32 along any axis of any rank. Rank-4 operands are read and written as
// stored (a YOLO neck's or an ASPP head's concat of conv outputs keeps their layout, see
// layout_operands); the rest plain. Empty inputs (oneDNN 2.6 takes none) send the node to
// the reference kernel.

#include "backends/cpu/dnnl_common.h"
#include "ops/op_util.h"

namespace kiln::dnnl_cpu {

namespace {

using dnnl::memory;

class DnnlConcatKernel final : public DnnlKernel {
 public:
  using DnnlKernel::DnnlKernel;

 protected:
  bool try_prepare(const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out) override {
    const Shape& ys = out[0].shape;
    if (ys.empty() || !all_positive(ys)) return false;
    auto axis = normalize_axis(node_.attrs.get_int("axis", 0), static_cast<int64_t>(ys.size()));
    if (!axis.is_ok()) return false;
    // Rank-4 operands as stored (a group's layout where the concat joins one; plain else).
    src_mds_.clear();
    for (size_t i = 0; i < in.size(); ++i) {
      if (!all_positive(in[i].shape)) return false;
      src_mds_.push_back(in[i].shape.size() == 4 ? stored_desc(shared_, node_.input(i), in[i].shape)
                                                 : plain_desc(in[i].shape));
    }
    dst_md_ = ys.size() == 4 ? stored_desc(shared_, node_.output(0), ys) : plain_desc(ys);
    prim_ = dnnl::concat(
        dnnl::concat::primitive_desc(dst_md_, static_cast<int>(*axis), src_mds_, cpu_engine()));
    stream_ = dnnl::stream(cpu_engine());
    return true;
  }

  std::string impl_info() const override { return impl_info_of(prim_); }

  void run(const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out) override {
    std::unordered_map<int, memory> args;
    for (size_t i = 0; i < in.size(); ++i)
      args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i)] =
          memory(src_mds_[i], cpu_engine(), const_cast<void*>(in[i]->raw()));
    args[DNNL_ARG_DST] = memory(dst_md_, cpu_engine(), out[0]->raw());
    prim_.execute(stream_, args);
    stream_.wait();
  }

 private:
  std::vector<memory::desc> src_mds_;
  memory::desc dst_md_;
  dnnl::concat prim_;
  dnnl::stream stream_;
};

}  // namespace

static bool concat_supported(const Node& node) {
  if (node.inputs.empty() || node.outputs.size() != 1 || !node.epilogue.empty()) return false;
  for (const Value* v : node.inputs)
    if (!is_f32(v)) return false;
  return is_f32(node.outputs[0]);
}

static std::unique_ptr<Kernel> make_concat_kernel(const Node& node, const DnnlShared& shared) {
  return std::make_unique<DnnlConcatKernel>(node, shared);
}

KILN_REGISTER_DNNL_KERNEL(concat, concat_supported, make_concat_kernel, OpKind::Concat);

}  // namespace kiln::dnnl_cpu

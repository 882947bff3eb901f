// oneDNN Concat in fp32 along any axis of any rank. Rank-4 operands are read and written as
// stored (a YOLO neck's or an ASPP head's concat of conv outputs keeps their layout, see
// layout_operands); the rest plain. Empty inputs (oneDNN 2.6 takes none) send the node to
// the reference kernel. Where every operand is plain (row-major), the kernel copies each
// input's contiguous runs itself: oneDNN 2.6's `simple:any` concat took 0.12 ms for two
// 1×58×28×28 halves of a ShuffleNetV2 block, several times a memcpy's time.

#include <cstring>

#include "backends/cpu/dnnl_common.h"
#include "ops/concat.h"
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
    auto axis = normalize_axis(concat_attrs(node_).axis, static_cast<int64_t>(ys.size()));
    if (!axis.is_ok()) return false;
    // Rank-4 operands as stored (a group's layout where the concat joins one; plain else).
    src_mds_.clear();
    for (size_t i = 0; i < in.size(); ++i) {
      if (!all_positive(in[i].shape)) return false;
      src_mds_.push_back(in[i].shape.size() == 4 ? stored_desc(shared_, node_.input(i), in[i].shape)
                                                 : plain_desc(in[i].shape));
    }
    dst_md_ = ys.size() == 4 ? stored_desc(shared_, node_.output(0), ys) : plain_desc(ys);
    plain_ = dst_md_ == plain_desc(ys);
    for (size_t i = 0; i < in.size(); ++i)
      plain_ = plain_ && src_mds_[i] == plain_desc(in[i].shape);
    if (plain_) {
      // Row-major: `outer` runs along the axes before `axis`, each input's run of its axis and
      // the ones after it, one after another in the output's run.
      outer_ = 1;
      for (int64_t d = 0; d < *axis; ++d) outer_ *= ys[d];
      run_bytes_.clear();
      out_run_bytes_ = 0;
      for (const TensorDesc& t : in) {
        int64_t n = 1;
        for (size_t d = static_cast<size_t>(*axis); d < t.shape.size(); ++d) n *= t.shape[d];
        run_bytes_.push_back(static_cast<size_t>(n) * sizeof(float));
        out_run_bytes_ += run_bytes_.back();
      }
      return true;
    }
    prim_ = dnnl::concat(
        dnnl::concat::primitive_desc(dst_md_, static_cast<int>(*axis), src_mds_, cpu_engine()));
    stream_ = dnnl::stream(cpu_engine());
    return true;
  }

  std::string impl_info() const override {
    return plain_ ? "kiln row copies (plain operands)" : impl_info_of(prim_);
  }

  void run(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out) override {
    if (plain_) {
      auto* y = static_cast<std::byte*>(out[0]->data);
      for (int64_t o = 0; o < outer_; ++o) {
        size_t at = static_cast<size_t>(o) * out_run_bytes_;
        for (size_t i = 0; i < in.size(); ++i) {
          std::memcpy(y + at, static_cast<const std::byte*>(in[i]->data) + o * run_bytes_[i],
                      run_bytes_[i]);
          at += run_bytes_[i];
        }
      }
      return;
    }
    std::unordered_map<int, memory> args;
    for (size_t i = 0; i < in.size(); ++i)
      args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i)] =
          memory(src_mds_[i], cpu_engine(), const_cast<void*>(in[i]->data));
    args[DNNL_ARG_DST] = memory(dst_md_, cpu_engine(), out[0]->data);
    prim_.execute(stream_, args);
    stream_.wait();
  }

 private:
  std::vector<memory::desc> src_mds_;
  memory::desc dst_md_;
  bool plain_ = false;  // every operand row-major: copied by run() itself
  int64_t outer_ = 1;
  std::vector<size_t> run_bytes_;
  size_t out_run_bytes_ = 0;
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

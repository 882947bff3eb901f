// Pad (opset 13 form plus the opset-18 axes input): modes constant, edge and reflect, any
// element type, constant pads/value/axes. Output coordinate o of an axis reads input
// coordinate o − begin; outside the input it takes the constant (default 0), the nearest
// edge or the mirror image, as ops/pad.cc. Layout-agnostic: rank-4 NHWC input is padded in
// place of its logical axes (axis_map.cuh walks the storage order).

#include <cstring>
#include <memory>

#include "backends/cuda/kernels/axis_map.cuh"
#include "core/half.h"
#include "ops/op_util.h"
#include "ops/pad.h"

namespace kiln {
namespace {

using cuda::OutsideRule;

OutsideRule rule_of(PadMode m) {
  return m == PadMode::kReflect ? OutsideRule::kReflect
         : m == PadMode::kEdge  ? OutsideRule::kEdge
                                : OutsideRule::kConstant;
}

class PadKernel final : public CudaKernel {
 public:
  explicit PadKernel(PadMode mode) : mode_(mode), rule_(rule_of(mode)) {}

  Layout input_layout(int i, Layout offered) const override {
    return i == 0 ? offered : Layout::kPlain;
  }
  bool reads_on_host(int i) const override { return i >= 1; }

  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                 CudaBuildContext&) override {
    const TensorDesc& x = in[0];
    if (in.size() < 2 || !in[1].present()) return invalid_argument("input 1 (pads) is missing");
    std::vector<TensorDesc> descs;
    for (const TensorDesc& d : in) descs.push_back(cuda::desc_of(d));
    KILN_ASSIGN_OR_RETURN(PadAmounts pads, read_pads(descs, mode_));
    const std::vector<int64_t>& begin = pads.begin;
    const std::vector<int64_t>& end = pads.end;
    elem_ = dtype_size(x.dtype);
    value_bits_ = 0;
    const Tensor* value = in.size() > 2 && in[2].present() ? in[2].value : nullptr;
    if (in.size() > 2 && in[2].present() && !value)
      return unsupported("constant_value (input 2) is not a constant");
    if (value && value->numel() > 1)
      return invalid_argument("constant_value must be a scalar, got shape " +
                              shape_str(value->shape()));
    if (value && value->numel() == 1) {
      if (x.dtype != value->dtype() && is_device_float(x.dtype) &&
          value->dtype() == DataType::kFloat32) {
        store_floats(value->data<float>(), 1, x.dtype, &value_bits_);
      } else if (value->dtype() == x.dtype) {
        std::memcpy(&value_bits_, value->raw(), elem_);
      } else {
        return invalid_argument(std::string("constant_value: expected ") + dtype_name(x.dtype) +
                                ", got " + dtype_name(value->dtype()));
      }
    }
    Shape shape = x.shape;
    std::vector<int64_t> offset(shape.size()), step(shape.size(), 1);
    for (size_t a = 0; a < shape.size(); ++a) {
      shape[a] += begin[a] + end[a];
      offset[a] = -begin[a];
    }
    KILN_RETURN_IF_ERROR(cuda::make_axis_map(x.shape, shape, x.layout, offset, step, map_));
    numel_ = shape_numel(shape);
    out[0] = TensorDesc{x.dtype, shape, nullptr, x.layout};
    return Status::ok();
  }

  std::string tactic() const override { return "kiln pad"; }

  Status enqueue(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const CudaRunContext& run) override {
    return cuda::launch_axis_map(elem_, in[0]->data, out[0]->data, numel_, map_, rule_, value_bits_,
                                 run.stream);
  }

 private:
  PadMode mode_;
  OutsideRule rule_;
  cuda::AxisMap map_;
  size_t elem_ = 0;
  int64_t numel_ = 0;
  uint64_t value_bits_ = 0;
};

Result<std::unique_ptr<CudaKernel>> make_pad(const Node& node, Precision) {
  KILN_ASSIGN_OR_RETURN(PadMode mode, parse_pad_mode(node.attrs));
  const Value* x = node.input(0);
  if (!x) return invalid_argument("input 0 is missing");
  const size_t es = dtype_size(x->dtype);
  if (es != 1 && es != 2 && es != 4 && es != 8)
    return unsupported(std::string("Pad of ") + dtype_name(x->dtype));
  if (cuda::known_rank(node, 0) > cuda::kMaxMapAxes) return unsupported("Pad of rank > 6");
  KILN_RETURN_IF_ERROR(cuda::inputs_constant_from(node, 1));
  return std::unique_ptr<CudaKernel>(new PadKernel(mode));
}

}  // namespace

KILN_REGISTER_CUDA_KERNEL(Pad, make_pad);

}  // namespace kiln

// Dropout, inference only: Y = X, and the optional mask output is all true. Inputs are
// (data, ratio, training_mode) (the importer moves opset < 12 attributes there); ratio is
// ignored, and training_mode = true is unsupported (kiln runs inference, and random
// dropping has no reference result to test against) unless ratio is 0: then training mode
// drops nothing and scales by 1, the identity too. PyTorch exports functional dropout that way
// (Swin's attention, p = 0).

#include "ops/dropout.h"

#include <cstring>

#include "ops/elementwise.h"

namespace kiln {

Status check_dropout_is_identity(const Tensor* ratio, const Tensor* training_mode) {
  if (!training_mode || training_mode->numel() == 0 || training_mode->at_double(0) == 0)
    return Status::ok();
  if (ratio && ratio->numel() == 1 && ratio->at_double(0) == 0) return Status::ok();
  return unsupported("training-mode Dropout (training_mode input is true, ratio not 0)");
}

namespace {

Status infer_dropout(const Node& node, const std::vector<TensorDesc>& in,
                     std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(check_input_count(in, 1, 3));
  KILN_RETURN_IF_ERROR(expect_dtype(in, 0, kFloatTypes));
  if (in.size() > 2 && in[2].present()) {
    if (in[2].dtype != DataType::kBool)
      return invalid_argument(std::string("input 2 (training_mode): expected bool, got ") +
                              dtype_name(in[2].dtype));
    const Tensor* ratio = in[1].present() ? in[1].value : nullptr;
    if (in[2].value && !ratio && in[1].present())
      return unsupported("training-mode Dropout with a ratio computed at run time");
    KILN_RETURN_IF_ERROR(check_dropout_is_identity(ratio, in[2].value));
  }
  out[0] = {in[0].dtype, in[0].shape, in[0].value};
  if (out.size() > 1) out[1] = {DataType::kBool, in[0].shape};
  return Status::ok();
}

Status run_dropout(const Node& node, const std::vector<const Tensor*>& in,
                   const std::vector<Tensor*>& out) {
  // Checked again here: training_mode may be computed at run time.
  KILN_RETURN_IF_ERROR(
      check_dropout_is_identity(in.size() > 1 ? in[1] : nullptr, in.size() > 2 ? in[2] : nullptr));
  if (out[0]) std::memcpy(out[0]->raw(), in[0]->raw(), in[0]->nbytes());
  if (out.size() > 1 && out[1]) std::memset(out[1]->raw(), 1, out[1]->nbytes());
  return Status::ok();
}

}  // namespace

KILN_REGISTER_OP(Dropout, infer_dropout, run_dropout);

}  // namespace kiln

#include "ir/op_kind.h"

#include <string>

namespace kiln {

namespace {
constexpr const char* kOpNames[] = {
#define KILN_OP(name) #name,
#include "ir/ops.def"
#undef KILN_OP
};
}  // namespace

const char* op_name(OpKind op) {
  auto i = static_cast<size_t>(op);
  return i < static_cast<size_t>(OpKind::kCount) ? kOpNames[i] : "?";
}

bool is_onnx_op(OpKind op) { return op < OpKind::ChannelShuffle; }

std::optional<OpKind> op_from_name(std::string_view name) {
  for (size_t i = 0; i < static_cast<size_t>(OpKind::kCount); ++i)
    if (name == kOpNames[i]) return static_cast<OpKind>(i);
  return std::nullopt;
}

}  // namespace kiln

// OpKind: one enumerator per line of ops.def.
#pragma once

#include <optional>
#include <string_view>

namespace kiln {

enum class OpKind {
#define KILN_OP(name) name,
#include "ir/ops.def"
#undef KILN_OP
  kCount
};

const char* op_name(OpKind op);
std::optional<OpKind> op_from_name(std::string_view name);
// False for kiln's own ops (the end of ops.def), which passes make and no model may name.
bool is_onnx_op(OpKind op);

}  // namespace kiln

// Mod: C = A mod B with numpy broadcasting, A and B of one numeric dtype (not bool).
// fmod = 0 (integers only): the remainder takes the divisor's sign (Python's %); fmod = 1:
// C's fmod, the dividend's sign (required for floats). An integer division by zero is an
// error naming it, not undefined behaviour.

#include <cmath>
#include <type_traits>

#include "ops/elementwise.h"

namespace kiln {

namespace {

constexpr DataType kModTypes[] = {DataType::kFloat32,  DataType::kFloat64, DataType::kFloat16,
                                  DataType::kBFloat16, DataType::kInt8,    DataType::kUInt8,
                                  DataType::kInt16,    DataType::kUInt16,  DataType::kInt32,
                                  DataType::kUInt32,   DataType::kInt64,   DataType::kUInt64};

bool is_float_type(DataType dt) {
  return dt == DataType::kFloat32 || dt == DataType::kFloat64 || dt == DataType::kFloat16 ||
         dt == DataType::kBFloat16;
}

Status infer_mod(const Node& node, const std::vector<TensorDesc>& in,
                 std::vector<TensorDesc>& out) {
  const int64_t fmod = node.attrs.get_int("fmod", 0);
  if (fmod != 0 && fmod != 1)
    return invalid_argument("attribute 'fmod' must be 0 or 1, got " + std::to_string(fmod));
  KILN_RETURN_IF_ERROR(infer_binary_broadcast(in, out, kModTypes));
  if (fmod == 0 && is_float_type(in[0].dtype))
    return invalid_argument(std::string("Mod of ") + dtype_name(in[0].dtype) +
                            " needs fmod = 1 (fmod = 0 is for integers)");
  return Status::ok();
}

Status run_mod(const Node& node, const std::vector<const Tensor*>& in,
               const std::vector<Tensor*>& out) {
  const bool fmod = node.attrs.get_int("fmod", 0) == 1;
  return dispatch_numeric(in[0]->dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      return invalid_argument("Mod of bool");
    } else if constexpr (std::is_integral_v<T>) {
      const T* b = in[1]->data<T>();
      for (int64_t i = 0; i < in[1]->numel(); ++i)
        if (b[i] == 0)
          return invalid_argument("integer Mod by zero (input 1, element " + std::to_string(i) +
                                  ")");
      map_binary<T, T, T>(*in[0], *in[1], *out[0], [&](T x, T y) -> T {
        if constexpr (std::is_signed_v<T>) {
          if (y == T(-1)) return T(0);  // INT_MIN % -1 overflows in C++; the remainder is 0
          T r = static_cast<T>(x % y);  // truncated: the dividend's sign (fmod)
          if (!fmod && r != 0 && ((r < 0) != (y < 0))) r = static_cast<T>(r + y);
          return r;
        } else {
          return static_cast<T>(x % y);
        }
      });
      return Status::ok();
    } else {
      map_binary<T, T, T>(*in[0], *in[1], *out[0], [](auto x, auto y) { return std::fmod(x, y); });
      return Status::ok();
    }
  });
}

}  // namespace

KILN_REGISTER_OP(Mod, infer_mod, run_mod);

}  // namespace kiln

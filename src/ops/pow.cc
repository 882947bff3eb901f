// Pow: Z = X ^ Y with numpy broadcasting. X (the base) is int32, int64 or a float type;
// Y (the exponent) may be any arithmetic type, independently of X; Z has X's dtype.
//
// Float bases compute in double and round to X's type. Integer bases with an integer
// exponent use exact integer power (wrapping like integer Mul); a negative exponent gives
// the truncated 1 / X^-Y (so 0 unless |X| == 1), and 0 to a negative power is an error
// ("integer division by zero", as in Div). Integer bases with a float exponent compute in
// double and convert like Cast (truncation toward zero), as numpy's pow(...).astype does.

#include "ops/elementwise.h"

namespace kiln {

namespace {

constexpr DataType kBaseTypes[] = {DataType::kInt32,   DataType::kInt64,   DataType::kFloat32,
                                   DataType::kFloat64, DataType::kFloat16, DataType::kBFloat16};

// base^e by squaring, modulo 2^bits.
template <class C>
C integer_pow(C base, uint64_t e) {
  uint64_t r = 1;
  uint64_t b = static_cast<uint64_t>(base);
  for (; e; e >>= 1) {
    if (e & 1) r *= b;
    b *= b;
  }
  return static_cast<C>(r);
}

Status infer_pow(const Node& node, const std::vector<TensorDesc>& in,
                 std::vector<TensorDesc>& out) {
  KILN_RETURN_IF_ERROR(infer_binary_broadcast(in, out, kBaseTypes, DataType::kUndefined,
                                              /*same_dtype=*/false));
  return expect_dtype(in, 1, kArithmeticTypes);
}

Status run_pow(const Node& node, const std::vector<const Tensor*>& in,
               const std::vector<Tensor*>& out) {
  bool zero_to_negative = false;
  auto pow = [&](auto x, auto y) {
    using CB = decltype(x);
    using CE = decltype(y);
    if constexpr (kIsFloatType<CB>) {
      return static_cast<CB>(std::pow(static_cast<double>(x), static_cast<double>(y)));
    } else if constexpr (kIsFloatType<CE>) {
      return convert_value<CB>(std::pow(static_cast<double>(x), static_cast<double>(y)));
    } else {
      if constexpr (std::is_unsigned_v<CE>) {
        return integer_pow(x, static_cast<uint64_t>(y));
      } else {
        if (y >= CE(0)) return integer_pow(x, static_cast<uint64_t>(y));
        if (x == CB(0)) zero_to_negative = true;
        if (x == CB(-1)) return (y % 2 == 0) ? CB(1) : CB(-1);
        return x == CB(1) ? CB(1) : CB(0);
      }
    }
  };
  KILN_RETURN_IF_ERROR(dispatch_numeric(in[0]->dtype(), [&](auto base_tag) -> Status {
    using TB = decltype(base_tag);
    return dispatch_numeric(in[1]->dtype(), [&](auto exp_tag) -> Status {
      using TE = decltype(exp_tag);
      // Never reached for other types (infer rejects them); kept out of the instantiation.
      if constexpr (std::is_same_v<TB, bool> || std::is_same_v<TE, bool> ||
                    (kIsIntType<TB> && !std::is_same_v<TB, int32_t> &&
                     !std::is_same_v<TB, int64_t>)) {
        return unsupported(std::string("Pow with ") + dtype_name(dtype_of<TB>()) + " base");
      } else {
        map_binary<TB, TE, TB>(*in[0], *in[1], *out[0], pow);
        return Status::ok();
      }
    });
  }));
  if (zero_to_negative) return invalid_argument("integer division by zero (0 to a negative power)");
  return Status::ok();
}

}  // namespace

KILN_REGISTER_OP(Pow, infer_pow, run_pow);

}  // namespace kiln

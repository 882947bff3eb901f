// Add, Sub, Mul, Div with numpy broadcasting: equal shapes, per channel, per (batch, channel)
// (squeeze-excite; channel counts that whole vectors divide and odd ones), per batch, scalar,
// the small operand first, general broadcasts, rank 5, constant operands.
#include <string>

#include "ops/cases/op_cases.h"
#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

struct Pair {
  const char* name;
  Shape a, b;
  bool b_constant;
  const char* onednn_reference;  // see OpCase
};

constexpr const char* kBoth = "both operands broadcast";

const Pair kPairs[] = {
    {"same", {2, 17, 9, 11}, {2, 17, 9, 11}, false, nullptr},
    {"same_wide", {4, 64, 14, 14}, {4, 64, 14, 14}, false, nullptr},
    {"per_channel", {2, 17, 9, 11}, {1, 17, 1, 1}, false, nullptr},
    {"per_channel_rank3", {2, 24, 5, 7}, {24, 1, 1}, false, nullptr},
    {"squeeze_excite", {3, 24, 5, 7}, {3, 24, 1, 1}, false, nullptr},
    {"squeeze_excite_odd", {2, 17, 9, 11}, {2, 17, 1, 1}, false, nullptr},
    {"small_first", {3, 24, 1, 1}, {3, 24, 5, 7}, false, nullptr},
    {"per_batch", {2, 17, 9, 11}, {2, 1, 1, 1}, false, nullptr},
    {"scalar", {2, 17, 9, 11}, {}, false, nullptr},
    {"rows_bias", {3, 1000}, {1000}, false, nullptr},
    {"general", {2, 1, 9, 11}, {2, 17, 1, 11}, false, kBoth},
    {"rank5", {2, 3, 1, 4, 5}, {3, 4, 1}, false, kBoth},
    {"rank1_last", {4, 3, 10}, {10}, false, nullptr},
    {"first_broadcasts", {1, 4, 1, 1}, {3, 4, 5, 6}, false, nullptr},
    // Over a million elements (oneDNN's JIT kernels have failed only at such sizes).
    {"large_squeeze_excite", {4, 21, 112, 112}, {4, 21, 1, 1}, false, nullptr},
    {"constant_per_channel", {2, 17, 9, 11}, {17, 1, 1}, true, nullptr},
    {"constant_same", {1, 3, 7, 5}, {1, 3, 7, 5}, true, nullptr},
};

}  // namespace

KILN_OP_CASES(binary) {
  std::vector<OpCase> r;
  uint32_t seed = 500;
  for (OpKind op : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div})
    for (const Pair& p : kPairs) {
      OpCase c;
      c.name = p.name;
      c.op = op;
      c.inputs.push_back({random_tensor(p.a, seed++, -2.f, 2.f)});
      // Divisors away from zero.
      c.inputs.push_back({random_tensor(p.b, seed++, 0.5f, 2.f), p.b_constant});
      c.onednn_reference = p.onednn_reference;
      const std::string name = p.name;
      if (op == OpKind::Div && (name == "small_first" || name == "first_broadcasts"))
        c.onednn_reference = "the dividend broadcasts";
      r.push_back(std::move(c));
    }
  return r;
}

}  // namespace kiln::test

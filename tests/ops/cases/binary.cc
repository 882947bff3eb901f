// Add, Sub, Mul, Div with numpy broadcasting: equal shapes, per channel, per (batch, channel)
// (squeeze-excite; channel counts that whole vectors divide and odd ones), per batch, scalar,
// the small operand first, general broadcasts, rank 5, constant operands.
#include "ops/cases/op_cases.h"
#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

struct Pair {
  const char* name;
  Shape a, b;
  bool b_constant = false;
};

const Pair kPairs[] = {
    {"same", {2, 17, 9, 11}, {2, 17, 9, 11}},
    {"same_wide", {4, 64, 14, 14}, {4, 64, 14, 14}},
    {"per_channel", {2, 17, 9, 11}, {1, 17, 1, 1}},
    {"per_channel_rank3", {2, 24, 5, 7}, {24, 1, 1}},
    {"squeeze_excite", {3, 24, 5, 7}, {3, 24, 1, 1}},
    {"squeeze_excite_odd", {2, 17, 9, 11}, {2, 17, 1, 1}},
    {"small_first", {3, 24, 1, 1}, {3, 24, 5, 7}},
    {"per_batch", {2, 17, 9, 11}, {2, 1, 1, 1}},
    {"scalar", {2, 17, 9, 11}, {}},
    {"rows_bias", {3, 1000}, {1000}},
    {"general", {2, 1, 9, 11}, {2, 17, 1, 11}},
    {"rank5", {2, 3, 1, 4, 5}, {3, 4, 1}},
    {"constant_per_channel", {2, 17, 9, 11}, {17, 1, 1}, true},
    {"constant_same", {1, 3, 7, 5}, {1, 3, 7, 5}, true},
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
      r.push_back(std::move(c));
    }
  return r;
}

}  // namespace kiln::test

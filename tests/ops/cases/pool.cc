// MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool: odd shapes and channel counts, every
// padding mode, asymmetric pads, ceil mode, dilations (MaxPool), count_include_pad
// (AveragePool), ResNet- and MobileNet-sized global pools.
#include <string>

#include "ops/cases/op_cases.h"
#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

struct Window {
  const char* name;
  Shape x;
  std::vector<int64_t> kernel, strides, pads;  // empty: attribute absent
  const char* auto_pad;                        // nullptr: absent
  bool ceil_mode;
  bool count_include_pad;  // AveragePool only
};

const Window kWindows[] = {
    {"k2s2", {2, 3, 8, 8}, {2, 2}, {2, 2}, {}, nullptr, false, false},
    {"k3s2_pad1", {1, 16, 15, 14}, {3, 3}, {2, 2}, {1, 1, 1, 1}, nullptr, false, false},
    {"k3s2_pad1_incl", {1, 16, 15, 14}, {3, 3}, {2, 2}, {1, 1, 1, 1}, nullptr, false, true},
    {"asym_pad", {1, 4, 9, 11}, {3, 2}, {1, 2}, {0, 1, 2, 0}, nullptr, false, false},
    {"asym_pad_incl", {1, 4, 9, 11}, {3, 2}, {1, 2}, {0, 1, 2, 0}, nullptr, false, true},
    {"ceil", {1, 3, 10, 10}, {3, 3}, {2, 2}, {}, nullptr, true, false},
    {"ceil_pad", {1, 3, 9, 12}, {2, 3}, {2, 2}, {1, 0, 0, 1}, nullptr, true, false},
    {"ceil_incl", {1, 3, 10, 10}, {3, 3}, {2, 2}, {}, nullptr, true, true},
    {"odd_channels", {2, 17, 9, 11}, {3, 3}, {2, 2}, {1, 1, 1, 1}, nullptr, true, false},
    {"same_upper", {1, 5, 7, 8}, {3, 2}, {2, 3}, {}, "SAME_UPPER", false, false},
    {"same_lower_incl", {1, 5, 7, 8}, {3, 3}, {2, 2}, {}, "SAME_LOWER", false, true},
    {"valid", {1, 2, 9, 7}, {4, 2}, {3, 1}, {}, "VALID", false, false},
    {"resnet_stem", {2, 32, 15, 15}, {3, 3}, {2, 2}, {1, 1, 1, 1}, nullptr, false, false},
    {"whole_7x7", {2, 32, 7, 7}, {7, 7}, {}, {}, nullptr, false, false},
};

OpCase pool(OpKind op, const Window& w, std::vector<int64_t> dilations, uint32_t seed) {
  OpCase c;
  c.name = w.name;
  if (!dilations.empty()) c.name += "_dilated";
  c.op = op;
  c.attrs.set("kernel_shape", w.kernel);
  if (!w.strides.empty()) c.attrs.set("strides", w.strides);
  if (!w.pads.empty()) c.attrs.set("pads", w.pads);
  if (!dilations.empty()) c.attrs.set("dilations", dilations);
  if (w.auto_pad) c.attrs.set("auto_pad", std::string(w.auto_pad));
  if (w.ceil_mode) c.attrs.set("ceil_mode", int64_t{1});
  if (op == OpKind::AveragePool && w.count_include_pad)
    c.attrs.set("count_include_pad", int64_t{1});
  if (op == OpKind::AveragePool && w.count_include_pad && w.ceil_mode)
    c.onednn_reference = "padding counted over ceil mode's overflow";
  c.inputs.push_back({random_tensor(w.x, seed, -3.f, 3.f)});
  return c;
}

OpCase global(OpKind op, std::string name, const Shape& x, uint32_t seed) {
  OpCase c;
  c.name = std::move(name);
  c.op = op;
  c.inputs.push_back({random_tensor(x, seed, -3.f, 3.f)});
  return c;
}

}  // namespace

KILN_OP_CASES(pool) {
  std::vector<OpCase> r;
  uint32_t seed = 400;
  for (const Window& w : kWindows) {
    if (!w.count_include_pad) r.push_back(pool(OpKind::MaxPool, w, {}, seed++));
    r.push_back(pool(OpKind::AveragePool, w, {}, seed++));
    // Dilated windows that stay inside X.
    if (!w.auto_pad && !w.count_include_pad && w.kernel[0] != 7)
      r.push_back(pool(OpKind::MaxPool, w, {2, 2}, seed++));
  }
  for (OpKind op : {OpKind::GlobalAveragePool, OpKind::GlobalMaxPool}) {
    r.push_back(global(op, "resnet", {2, 32, 7, 7}, seed++));
    r.push_back(global(op, "odd", {1, 3, 5, 9}, seed++));
    r.push_back(global(op, "one_pixel", {3, 17, 1, 1}, seed++));
    r.push_back(global(op, "mobilenet", {1, 1280, 7, 7}, seed++));
    r.push_back(global(op, "squeeze_excite", {2, 24, 28, 28}, seed++));
  }
  return r;
}

}  // namespace kiln::test

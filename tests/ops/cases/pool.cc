// MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool: odd shapes and channel counts, every
// padding mode, ceil mode, dilations (MaxPool), count_include_pad (AveragePool), a ResNet-sized
// global pool.
#include "ops/cases/op_cases.h"
#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

struct Window {
  std::vector<int64_t> kernel, strides, pads, dilations;  // empty: attribute absent
  std::string auto_pad;                                   // empty: absent
  int64_t ceil_mode = 0;
};

Window win(std::vector<int64_t> kernel, std::vector<int64_t> strides,
           std::vector<int64_t> pads = {}, std::vector<int64_t> dilations = {},
           std::string auto_pad = "", int64_t ceil_mode = 0) {
  Window w;
  w.kernel = std::move(kernel);
  w.strides = std::move(strides);
  w.pads = std::move(pads);
  w.dilations = std::move(dilations);
  w.auto_pad = std::move(auto_pad);
  w.ceil_mode = ceil_mode;
  return w;
}

OpCase pool(OpKind op, std::string name, const Shape& x, const Window& w, uint32_t seed,
            int64_t count_include_pad = 0) {
  OpCase c;
  c.name = std::move(name);
  c.op = op;
  c.attrs.set("kernel_shape", w.kernel);
  if (!w.strides.empty()) c.attrs.set("strides", w.strides);
  if (!w.pads.empty()) c.attrs.set("pads", w.pads);
  if (!w.dilations.empty()) c.attrs.set("dilations", w.dilations);
  if (!w.auto_pad.empty()) c.attrs.set("auto_pad", w.auto_pad);
  if (w.ceil_mode) c.attrs.set("ceil_mode", w.ceil_mode);
  if (count_include_pad) c.attrs.set("count_include_pad", count_include_pad);
  c.inputs.push_back({random_tensor(x, seed, -3.f, 3.f)});
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
  for (OpKind op : {OpKind::MaxPool, OpKind::AveragePool}) {
    r.push_back(pool(op, "k2s2", {1, 3, 7, 5}, win({2, 2}, {2, 2}), seed++));
    r.push_back(pool(op, "k3s2_pad_ceil", {2, 17, 9, 11},
                     win({3, 3}, {2, 2}, {1, 1, 1, 1}, {}, "", 1), seed++));
    r.push_back(pool(op, "uneven_pads", {2, 17, 9, 11}, win({3, 2}, {1, 2}, {1, 0, 0, 1}), seed++));
    r.push_back(
        pool(op, "same_upper", {1, 8, 10, 10}, win({3, 3}, {2, 2}, {}, {}, "SAME_UPPER"), seed++));
    r.push_back(
        pool(op, "same_lower", {1, 16, 6, 7}, win({2, 3}, {2, 2}, {}, {}, "SAME_LOWER"), seed++));
    r.push_back(pool(op, "valid", {2, 24, 8, 8}, win({3, 3}, {1, 1}, {}, {}, "VALID"), seed++));
    r.push_back(
        pool(op, "resnet_stem", {2, 32, 15, 15}, win({3, 3}, {2, 2}, {1, 1, 1, 1}), seed++));
  }
  r.push_back(pool(OpKind::MaxPool, "dilated", {2, 17, 9, 11},
                   win({3, 2}, {1, 1}, {2, 1, 1, 0}, {2, 3}), seed++));
  r.push_back(pool(OpKind::AveragePool, "count_include_pad", {2, 17, 9, 11},
                   win({3, 3}, {2, 2}, {1, 1, 1, 1}), seed++, 1));
  for (OpKind op : {OpKind::GlobalAveragePool, OpKind::GlobalMaxPool}) {
    r.push_back(global(op, "odd", {2, 17, 9, 11}, seed++));
    r.push_back(global(op, "resnet", {4, 64, 7, 7}, seed++));
    r.push_back(global(op, "squeeze_excite", {2, 24, 28, 28}, seed++));
  }
  return r;
}

}  // namespace kiln::test

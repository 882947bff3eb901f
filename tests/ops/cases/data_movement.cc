// Pad (constant with and without a value, edge, reflect, pads wider than the input, negative
// pads, the axes input), Split (channel splits, other axes and ranks, the split input, equal
// pieces, num_outputs with a short last piece, int64 data) and Gather (constant indices of any
// rank, negative and repeated ones, int32 and int64, every axis, int64 data).
#include <string>

#include "ops/cases/op_cases.h"
#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

// Gather's indices in `dt` (int32 or int64).
Tensor indices(DataType dt, const Shape& shape, const std::vector<int64_t>& v) {
  if (dt == DataType::kInt64) return Tensor::from_int64s(shape, v);
  Tensor t(dt, shape);
  for (size_t i = 0; i < v.size(); ++i) t.data<int32_t>()[i] = static_cast<int32_t>(v[i]);
  return t;
}

// axes empty: the input omitted; with_value: constant_value 0.75.
OpCase pad(std::string name, const Shape& x, std::vector<int64_t> pads, const std::string& mode,
           bool with_value, std::vector<int64_t> axes, uint32_t seed) {
  OpCase c;
  c.name = std::move(name);
  c.op = OpKind::Pad;
  c.attrs.set("mode", mode);
  c.inputs.push_back({random_tensor(x, seed)});
  c.inputs.push_back({int64s(pads), true});
  if (with_value || !axes.empty()) c.inputs.push_back({Tensor::from_floats({}, {0.75f}), true});
  if (!axes.empty()) c.inputs.push_back({int64s(axes), true});
  return c;
}

// split empty: the input omitted; num_outputs 0: the attribute absent.
OpCase split(std::string name, const Shape& x, int64_t axis, size_t outputs,
             std::vector<int64_t> sizes, int64_t num_outputs, uint32_t seed) {
  OpCase c;
  c.name = std::move(name);
  c.op = OpKind::Split;
  c.outputs = outputs;
  c.attrs.set("axis", axis);
  if (num_outputs) c.attrs.set("num_outputs", num_outputs);
  c.inputs.push_back({random_tensor(x, seed)});
  if (!sizes.empty()) c.inputs.push_back({int64s(sizes), true});
  return c;
}

OpCase gather(std::string name, const Shape& x, int64_t axis, const Shape& idx_shape,
              std::vector<int64_t> idx, DataType dt, uint32_t seed) {
  OpCase c;
  c.name = std::move(name);
  c.name += dt == DataType::kInt32 ? "_int32" : "_int64";
  c.op = OpKind::Gather;
  c.attrs.set("axis", axis);
  c.inputs.push_back({random_tensor(x, seed)});
  c.inputs.push_back({indices(dt, idx_shape, idx), true});
  return c;
}

// Split of int64 data: {6} into two halves.
OpCase split_int64(uint32_t seed) {
  OpCase c = split("int64_data", {6}, 0, 2, {}, 0, seed);
  std::vector<int64_t> v;
  for (int64_t i = 0; i < 6; ++i) v.push_back(i * 1001 - 3000);
  c.inputs[0].t = Tensor::from_int64s({6}, v);
  return c;
}

// Gather from int64 data: {4} at {3, 0}.
OpCase gather_int64(uint32_t seed) {
  OpCase c = gather("int64_data", {4}, 0, {2}, {3, 0}, DataType::kInt64, seed);
  c.name = "int64_data";  // int64 indices too
  c.inputs[0].t = Tensor::from_int64s({4}, {11, -22, 33, 123456789});
  return c;
}

}  // namespace

KILN_OP_CASES(data_movement) {
  uint32_t seed = 1100;
  std::vector<OpCase> r = {
      pad("constant", {1, 3, 7, 5}, {0, 0, 1, 2, 0, 0, 3, 1}, "constant", false, {}, seed++),
      pad("constant_value_small", {1, 3, 7, 5}, {0, 0, 1, 2, 0, 0, 3, 1}, "constant", true, {},
          seed++),
      pad("constant_value", {2, 17, 9, 11}, {0, 1, 1, 1, 0, 2, 1, 1}, "constant", true, {}, seed++),
      pad("edge", {2, 17, 9, 11}, {0, 0, 2, 3, 0, 0, 3, 2}, "edge", false, {}, seed++),
      pad("reflect", {2, 17, 9, 11}, {0, 0, 2, 3, 0, 0, 3, 2}, "reflect", false, {}, seed++),
      pad("crop", {2, 17, 9, 11}, {0, 0, -1, 2, 0, 0, 1, -3}, "constant", false, {}, seed++),
      pad("reflect_crop", {2, 17, 9, 11}, {0, 0, -2, 1, 0, 0, 2, -1}, "reflect", false, {}, seed++),
      pad("reflect_wide", {1, 2, 1, 4}, {0, 0, 1, 4, 0, 0, 1, 4}, "reflect", false, {}, seed++),
      pad("edge_wide", {1, 2, 1, 4}, {0, 0, 1, 2, 0, 0, 1, 3}, "edge", false, {}, seed++),
      pad("reflect_rank2", {3, 5}, {1, 2, 2, 1}, "reflect", false, {}, seed++),
      pad("edge_rank5", {2, 3, 4, 5, 6}, {0, 1, 0, 2, 1, 1, 0, 1, 1, 0}, "edge", false, {}, seed++),
      pad("axes", {2, 8, 6, 6}, {1, 1, 1, 1}, "constant", true, {2, 3}, seed++),
      pad("axes_negative", {2, 8, 6, 6}, {2, 2}, "reflect", false, {-1}, seed++),
      split("channels_sizes", {2, 17, 9, 11}, 1, 3, {3, 5, 9}, 0, seed++),
      split("channels_equal", {2, 18, 9, 11}, 1, 3, {}, 0, seed++),
      split("channel_halves", {1, 64, 7, 5}, -3, 2, {}, 0, seed++),
      split("height", {2, 17, 9, 11}, 2, 2, {4, 5}, 0, seed++),
      split("num_outputs", {2, 17, 9, 11}, 3, 3, {}, 3, seed++),
      split("batch", {2, 17, 9, 11}, 0, 2, {}, 0, seed++),
      split("yolo_rows", {6, 255}, 1, 3, {85, 85, 85}, 0, seed++),
      split("empty_piece", {5, 7}, -1, 2, {0, 7}, 0, seed++),
      split("rank1", {33}, 0, 3, {}, 0, seed++),
      split("rank5_num_outputs", {2, 3, 4, 5, 6}, 4, 4, {}, 4, seed++),
      split_int64(seed++),
  };
  for (DataType dt : {DataType::kInt64, DataType::kInt32}) {
    r.push_back(gather("channels", {2, 17, 9, 11}, 1, {3}, {0, 16, -2}, dt, seed++));
    r.push_back(gather("scalar_index", {2, 17, 9, 11}, 0, {}, {1}, dt, seed++));
    r.push_back(gather("matrix_index", {2, 17, 9, 11}, -1, {2, 2}, {10, 0, 3, 3}, dt, seed++));
    r.push_back(gather("rows", {10, 7}, 0, {2, 3}, {9, 0, 1, -10, 4, 4}, dt, seed++));
    r.push_back(gather("empty_index", {4, 3, 2}, 1, {0}, {}, dt, seed++));
    r.push_back(gather("last_axis_scalar", {2, 17, 9, 11}, 3, {}, {-1}, dt, seed++));
    r.push_back(gather("repeated", {1, 3, 7, 5}, 2, {4}, {6, 5, 0, 6}, dt, seed++));
    r.push_back(gather("rank1", {33}, 0, {5}, {32, 0, 7, 7, -1}, dt, seed++));
  }
  r.push_back(gather_int64(seed++));
  return r;
}

}  // namespace kiln::test

// Concat: every axis, several inputs, odd sizes that force narrow copies, an empty input, a
// constant input, int64 shape vectors; channel concats of rank-4 activations (NHWC on the GPU),
// and fuse_concat_affine's channel-affine epilogue (one input, an empty one, 70: more than one
// CUDA launch takes).
#include "ops/cases/op_cases.h"
#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

OpCase concat(std::string name, const std::vector<Shape>& shapes, int64_t axis, uint32_t seed,
              int constant = -1) {
  OpCase c;
  c.name = std::move(name);
  c.op = OpKind::Concat;
  c.attrs.set("axis", axis);
  for (size_t i = 0; i < shapes.size(); ++i)
    c.inputs.push_back({random_tensor(shapes[i], seed + static_cast<uint32_t>(i), -2.f, 2.f),
                        static_cast<int>(i) == constant});
  return c;
}

// Concat on channels, then y·a[c] + shift[c] and `act` (DenseNet's norm → relu).
OpCase affine(std::string name, const std::vector<Shape>& shapes, Activation act, uint32_t seed) {
  OpCase c = concat(std::move(name), shapes, 1, seed);
  int64_t ch = 0;
  for (const Shape& s : shapes) ch += s[1];
  c.epilogue.affine_input = static_cast<int>(shapes.size());
  c.epilogue.act = act;
  c.inputs.push_back({random_tensor({ch}, seed + 100, 0.5f, 1.5f), true});
  c.inputs.push_back({random_tensor({ch}, seed + 101, -1.f, 1.f), true});
  return c;
}

// Concat of int64 vectors (shape tensors): {2}, {1}, {3}, values spread far apart.
OpCase int64_vectors() {
  OpCase c;
  c.name = "int64_vectors";
  c.op = OpKind::Concat;
  c.attrs.set("axis", int64_t{0});
  int64_t next = -5;
  for (int64_t n : {2, 1, 3}) {
    std::vector<int64_t> v;
    for (int64_t i = 0; i < n; ++i) v.push_back(next++ * 1000003);
    c.inputs.push_back({int64s(v)});
  }
  return c;
}

// 70 inputs: more than one launch takes (64).
OpCase affine_many_inputs() {
  std::vector<Shape> shapes(70, Shape{2, 8, 3, 4});
  shapes[0] = {2, 16, 3, 4};
  return affine("affine_relu_70_inputs", shapes, Activation::kRelu, 200);
}

OpCase empty_input() {
  OpCase c = concat("empty_input", {{2, 0, 6, 6}, {2, 8, 6, 6}}, 1, 24);
  c.onednn_reference = "an empty input";
  return c;
}

}  // namespace

KILN_OP_CASES(concat) {
  return {
      concat("channels", {{1, 3, 7, 5}, {1, 5, 7, 5}}, 1, 1),
      concat("channels_odd", {{2, 17, 9, 11}, {2, 8, 9, 11}, {2, 1, 9, 11}}, 1, 3),
      concat("channels_wide", {{2, 64, 14, 14}, {2, 32, 14, 14}, {2, 128, 14, 14}}, -3, 6),
      concat("height", {{2, 3, 4, 5}, {2, 3, 2, 5}}, 2, 9),
      concat("width", {{2, 3, 4, 5}, {2, 3, 4, 7}}, -1, 11),
      concat("batch", {{1, 3, 4, 5}, {2, 3, 4, 5}}, 0, 13),
      concat("rank2", {{3, 5}, {3, 7}, {3, 1}}, 1, 15),
      concat("rank2_rows", {{4, 6}, {2, 6}}, 0, 35),
      concat("rank3", {{2, 3, 5}, {2, 4, 5}}, 1, 37),
      concat("rank1", {{7}, {9}, {16}}, 0, 18),
      concat("rank5", {{1, 2, 3, 4, 5}, {1, 2, 3, 1, 5}}, 3, 21),
      int64_vectors(),
      concat("one_input", {{2, 8, 6, 6}}, 1, 23),
      empty_input(),
      concat("constant_input", {{1, 3, 5, 6}, {1, 4, 5, 6}}, 1, 26, 1),
      concat("large_channels", {{4, 21, 112, 112}, {4, 11, 112, 112}}, 1, 28),
      affine("affine_relu", {{2, 64, 7, 5}, {2, 32, 7, 5}, {2, 32, 7, 5}}, Activation::kRelu, 30),
      affine("affine_odd_channels", {{1, 3, 4, 6}, {1, 5, 4, 6}}, Activation::kNone, 33),
      affine("affine_relu_empty_input", {{3, 12, 5, 5}, {3, 4, 5, 5}, {3, 0, 5, 5}},
             Activation::kRelu, 39),
      affine("affine_one_input", {{1, 16, 3, 3}}, Activation::kNone, 42),
      affine_many_inputs(),
  };
}

}  // namespace kiln::test

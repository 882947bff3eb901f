// The activations with attributes and without, on shapes every vector width divides and on
// odd ones; rank 4 (a layout to offer on the GPU) and others.
#include "ops/cases/op_cases.h"
#include "ops/op_test_util.h"

namespace kiln::test {
namespace {

OpCase unary(OpKind op, std::string name, const Shape& s, uint32_t seed, Attributes a = {}) {
  OpCase c;
  c.name = std::move(name);
  c.op = op;
  c.attrs = std::move(a);
  c.inputs.push_back({random_tensor(s, seed, -4.f, 4.f)});
  return c;
}

Attributes floats(std::initializer_list<std::pair<const char*, float>> kv) {
  Attributes a;
  for (const auto& [k, v] : kv) a.set(k, v);
  return a;
}

}  // namespace

KILN_OP_CASES(activations) {
  std::vector<OpCase> r;
  uint32_t seed = 200;
  for (OpKind op : {OpKind::Relu, OpKind::Sigmoid, OpKind::Tanh, OpKind::HardSwish}) {
    r.push_back(unary(op, "nchw", {2, 16, 5, 7}, seed++));
    r.push_back(unary(op, "odd", {3, 5, 7}, seed++));
  }
  for (OpKind op : {OpKind::Softplus, OpKind::Exp, OpKind::Neg, OpKind::Abs}) {
    r.push_back(unary(op, "nchw", {2, 16, 5, 7}, seed++));
    r.push_back(unary(op, "rank1", {17}, seed++));
  }
  r.push_back(unary(OpKind::Relu, "scalar", {}, seed++));
  r.push_back(unary(OpKind::HardSwish, "large", {4, 21, 112, 112}, seed++));
  r.push_back(unary(OpKind::Sigmoid, "rows", {3, 1000}, seed++));
  {  // of positive values
    OpCase c;
    c.name = "positive";
    c.op = OpKind::Sqrt;
    c.inputs.push_back({random_tensor({4, 9, 9}, seed++, 0.01f, 5.f)});
    r.push_back(std::move(c));
    for (OpKind op : {OpKind::Log, OpKind::Reciprocal}) {
      c.op = op;
      c.inputs = {{random_tensor({4, 9, 9}, seed++, 0.01f, 5.f)}};
      r.push_back(c);
    }
  }
  // Floor and Ceil step at integers: values on a grid of eighths between them, which fp16 and
  // bf16 hold exactly, so that rounding the input never moves it across one.
  for (OpKind op : {OpKind::Floor, OpKind::Ceil}) {
    OpCase c = unary(op, "eighths", {2, 16, 5, 7}, seed++);
    Tensor& x = c.inputs[0].t;
    for (int64_t i = 0; i < x.numel(); ++i)
      x.data<float>()[i] = std::floor(x.data<float>()[i] * 4.f) / 4.f + 0.125f;
    r.push_back(std::move(c));
  }
  r.push_back(unary(OpKind::LeakyRelu, "default_alpha", {2, 16, 5, 7}, seed++));
  r.push_back(unary(OpKind::LeakyRelu, "alpha", {3, 5, 7}, seed++, floats({{"alpha", 0.3f}})));
  r.push_back(unary(OpKind::HardSigmoid, "default", {2, 16, 5, 7}, seed++));
  r.push_back(unary(OpKind::HardSigmoid, "alpha_beta", {2, 16, 5, 7}, seed++,
                    floats({{"alpha", 0.5f}, {"beta", 0.25f}})));
  // Paddle's hardsigmoid (slope 0.2, offset 0.5), as converted models carry it.
  r.push_back(unary(OpKind::HardSigmoid, "paddle", {3, 5, 7}, seed++,
                    floats({{"alpha", 0.2f}, {"beta", 0.5f}})));
  return r;
}

}  // namespace kiln::test

// fold_batch_norm: inference BatchNormalization is a per-channel affine map, so it folds
// into the weights of a preceding Conv or Gemm, or becomes Mul + Add when it stands alone.
#include <cmath>

#include "ops/batch_normalization.h"
#include "ops/gemm.h"
#include "passes/pass.h"

namespace kiln {

namespace {

bool float_constant(const Value* v, int64_t numel) {
  return v && v->is_constant() && v->constant.dtype() == DataType::kFloat32 &&
         v->constant.numel() == numel;
}

}  // namespace

bool batch_norm_params(const Node& bn, int64_t c, BatchNormParams* p) {
  for (size_t i = 1; i <= 4; ++i)
    if (!float_constant(bn.input(i), c)) return false;
  if (bn.outputs.size() > 1)
    for (size_t i = 1; i < bn.outputs.size(); ++i)
      if (bn.outputs[i] && !bn.outputs[i]->consumers.empty()) return false;
  const float eps = batch_norm_attrs(bn).epsilon;
  std::vector<float> gamma = bn.input(1)->constant.to_floats();
  p->beta = bn.input(2)->constant.to_floats();
  p->mean = bn.input(3)->constant.to_floats();
  std::vector<float> var = bn.input(4)->constant.to_floats();
  p->scale.resize(c);
  p->shift.resize(c);
  for (int64_t i = 0; i < c; ++i) {
    p->scale[i] = gamma[i] / std::sqrt(var[i] + eps);
    p->shift[i] = p->beta[i] - p->mean[i] * p->scale[i];
  }
  return true;
}

namespace {

// bn's output replaces op's: op now writes the value bn wrote (which keeps its name, even
// when it is a graph output), and bn goes away.
void take_over_output(Graph& g, Node* op, Node* bn) {
  Value* y = bn->output(0);
  Value* old = op->outputs[0];
  g.remove_node(bn);
  old->producer = nullptr;
  op->outputs[0] = y;
  y->producer = op;
}

// Folds bn into the Conv/Gemm producing its input; false when a precondition fails.
bool fold_into_producer(Graph& g, Node* bn) {
  Value* x = bn->input(0);
  Node* op = x ? x->producer : nullptr;
  if (!op || op->outputs.size() != 1 || sole_consumer(g, x) != bn || !op->epilogue.empty())
    return false;
  Value* w = op->input(1);
  if (!w || !w->is_constant() || w->constant.dtype() != DataType::kFloat32) return false;
  const Tensor& wt = w->constant;
  // c output channels, each owning `inner` consecutive weights.
  int64_t c = 0, inner = 0;
  Value* bias = nullptr;
  float bias_scale = 1.f;
  if (op->op == OpKind::Conv) {
    if (wt.rank() < 3) return false;
    c = wt.dim(0);
    inner = wt.numel() / c;
    bias = op->input(2);
    if (bias && !float_constant(bias, c)) return false;
  } else if (op->op == OpKind::Gemm) {
    // Y = alpha·A·Bᵀ + beta·C with B [N, K]: row n of B makes output column n.
    if (!gemm_attrs(*op).trans_b || gemm_attrs(*op).trans_a || wt.rank() != 2) return false;
    c = wt.dim(0);
    inner = wt.dim(1);
    bias = op->input(2);
    // Only a C that is one value per output column (or a scalar) folds per channel.
    if (bias &&
        !(bias->is_constant() && bias->constant.dtype() == DataType::kFloat32 &&
          (bias->constant.numel() == c || bias->constant.numel() == 1) &&
          bias->constant.rank() <= 2 && (bias->constant.rank() < 2 || bias->constant.dim(0) == 1)))
      return false;
    bias_scale = gemm_attrs(*op).beta;
  } else {
    return false;
  }
  BatchNormParams p;
  if (c <= 0 || !batch_norm_params(*bn, c, &p)) return false;

  // BN(y) = (y − mean)·s + beta with s = gamma / sqrt(var + eps), per output channel k.
  // With y = W·x + b (Conv; Gemm's b = beta_gemm·C):
  //   BN(y) = (W·s)·x + (b − mean)·s + beta
  // so W'[k, ...] = W[k, ...]·s[k] and b'[k] = (b[k] − mean[k])·s[k] + beta[k].
  Tensor w2 = wt.clone();
  float* wd = w2.data<float>();
  for (int64_t k = 0; k < c; ++k)
    for (int64_t j = 0; j < inner; ++j) wd[k * inner + j] *= p.scale[k];
  std::vector<float> b(c, 0.f);
  if (bias) {
    std::vector<float> old = bias->constant.to_floats();
    for (int64_t k = 0; k < c; ++k) b[k] = bias_scale * old[old.size() == 1 ? 0 : k];
  }
  for (int64_t k = 0; k < c; ++k) b[k] = (b[k] - p.mean[k]) * p.scale[k] + p.beta[k];
  // New constants: the old ones may be shared with other nodes.
  g.set_input(op, 1, g.add_constant(w->name + "_bn", std::move(w2)));
  g.set_input(op, 2, g.add_constant(op->name + "_bias_bn", Tensor::from_floats({c}, b)));
  if (op->op == OpKind::Gemm) op->attrs.set("beta", 1.f);
  take_over_output(g, op, bn);
  return true;
}

// y = x·s + shift as Mul + Add with [C, 1, 1...] constants that broadcast over NC....
bool to_mul_add(Graph& g, Node* bn) {
  Value* x = bn->input(0);
  Value* y = bn->output(0);
  if (!x || !y || x->dtype != DataType::kFloat32 || !x->has_shape || x->dims.size() < 2 ||
      !x->dims[1].known())
    return false;
  const int64_t c = x->dims[1].value;
  BatchNormParams p;
  if (!batch_norm_params(*bn, c, &p)) return false;
  Shape s{c};
  for (size_t i = 2; i < x->dims.size(); ++i) s.push_back(1);
  const std::string name = bn->name;
  Value* scale = g.add_constant(name + "_scale", Tensor::from_floats(s, p.scale));
  Value* shift = g.add_constant(name + "_shift", Tensor::from_floats(s, p.shift));
  Value* t = g.add_value(name + "_scaled");
  t->dtype = y->dtype;
  t->has_shape = y->has_shape;
  t->dims = y->dims;
  g.remove_node(bn);
  g.add_node(OpKind::Mul, name + "_mul", {x, scale}, {t});
  g.add_node(OpKind::Add, name + "_add", {t, shift}, {y});
  return true;
}

}  // namespace

Result<bool> fold_batch_norm(Graph& g, std::vector<std::vector<std::string>>* groups) {
  std::vector<Node*> bns;
  for (const auto& n : g.nodes())
    if (n->op == OpKind::BatchNormalization) bns.push_back(n.get());
  bool changed = false, appended = false;
  for (Node* bn : bns) {
    Node* op = bn->input(0) ? bn->input(0)->producer : nullptr;
    const std::string bn_name = bn->name;
    if (fold_into_producer(g, bn)) {
      if (groups) groups->push_back({op->name, bn_name});
      changed = true;
    } else if (to_mul_add(g, bn)) {
      changed = appended = true;
    }
  }
  if (appended) KILN_RETURN_IF_ERROR(g.topo_sort());
  if (changed) g.remove_unused_values();
  return changed;
}

}  // namespace kiln

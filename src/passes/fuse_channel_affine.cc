// fuse_channel_affine: x·s + b with per-channel constants, as fold_batch_norm leaves a
// BatchNormalization that stands alone (DenseNet's pre-activation norms: Mul + Add + Relu
// on every concatenation), becomes one BatchNormalization node with scale s, B b, mean 0,
// var 1 and epsilon 0 (so its per-channel factor is s exactly), a following Relu fused as its
// epilogue. Both the CUDA and the oneDNN BatchNormalization kernels make one pass over the
// tensor (in the layout its neighbours use) where Mul, Add and Relu made three.
#include "passes/pass.h"

namespace kiln {

namespace {

// The per-channel float32 vector of constant `v` broadcast over x ([N, C, ...]): shape
// [C, 1...] (rank − 1) or [1, C, 1...] (rank). Empty when `v` is not one.
std::vector<float> per_channel(const Value* v, const Value* x) {
  if (!v || !v->is_constant() || v->constant.dtype() != DataType::kFloat32) return {};
  if (!x || !x->has_shape || x->dims.size() < 2 || !x->dims[1].known()) return {};
  const Shape& s = v->constant.shape();
  const size_t rank = x->dims.size();
  const int64_t c = x->dims[1].value;
  size_t lead = 0;
  if (s.size() == rank) {
    if (s[0] != 1) return {};
    lead = 1;
  } else if (s.size() != rank - 1) {
    return {};
  }
  for (size_t i = lead; i < s.size(); ++i)
    if (s[i] != (i == lead ? c : 1)) return {};
  return v->constant.to_floats();
}

bool fuse_at(Graph& g, Node* mul, std::vector<std::vector<std::string>>* groups) {
  if (mul->op != OpKind::Mul || mul->inputs.size() != 2 || !mul->epilogue.empty()) return false;
  int xi = mul->input(0) && mul->input(0)->is_constant() ? 1 : 0;
  Value* x = mul->input(xi);
  if (!x || x->is_constant() || x->dtype != DataType::kFloat32) return false;
  std::vector<float> scale = per_channel(mul->input(1 - xi), x);
  if (scale.empty()) return false;
  Node* add = sole_consumer(g, mul->output(0));
  if (!add || add->op != OpKind::Add || add->inputs.size() != 2 || !add->epilogue.empty())
    return false;
  const int ti = add->input(0) == mul->output(0) ? 0 : 1;
  if (add->input(ti) != mul->output(0) || add->input(1 - ti) == mul->output(0)) return false;
  std::vector<float> shift = per_channel(add->input(1 - ti), x);
  if (shift.size() != scale.size()) return false;
  Node* relu = sole_consumer(g, add->output(0));
  if (relu && relu->op != OpKind::Relu) relu = nullptr;
  Value* y = relu ? relu->output(0) : add->output(0);
  if (!y) return false;

  const int64_t c = static_cast<int64_t>(scale.size());
  const std::string name = mul->name + "_affine";
  std::vector<Value*> in{
      x, g.add_constant(name + "_scale", Tensor::from_floats({c}, scale)),
      g.add_constant(name + "_shift", Tensor::from_floats({c}, shift)),
      g.add_constant(name + "_mean", Tensor::from_floats({c}, std::vector<float>(c, 0.f))),
      g.add_constant(name + "_var", Tensor::from_floats({c}, std::vector<float>(c, 1.f)))};
  Attributes a;
  a.set("epsilon", 0.f);
  if (groups) {
    groups->push_back({name, mul->name, add->name});
    if (relu) groups->back().push_back(relu->name);
  }
  g.remove_node(mul);
  g.remove_node(add);
  if (relu) g.remove_node(relu);
  Node* bn = g.add_node(OpKind::BatchNormalization, name, in, {y}, a);
  if (relu) bn->epilogue.act = Activation::kRelu;
  return true;
}

}  // namespace

Result<bool> fuse_channel_affine(Graph& g, std::vector<std::vector<std::string>>* groups) {
  return fuse_each(g, OpKind::Mul, [&](Node* n) { return fuse_at(g, n, groups); });
}

}  // namespace kiln

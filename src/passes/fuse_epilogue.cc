// fuse_epilogue: the element-wise work right after a Conv/ConvTranspose/Gemm/MatMul (a
// constant bias Add, a residual Add, then an activation, SiLU and GELU included) becomes the
// node's epilogue (ir/epilogue.h), so a backend does it while the result is still in registers
// instead of in another pass over memory. Only act(op + bias + residual) is expressible, so
// Add-then-activation order only.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/activation_attrs.h"
#include "passes/pass.h"

namespace kiln {

namespace {

bool same_shape(const Value* a, const Value* b) {
  if (!a->has_shape || !b->has_shape || a->dims.size() != b->dims.size()) return false;
  for (size_t i = 0; i < a->dims.size(); ++i) {
    const Dim &x = a->dims[i], &y = b->dims[i];
    if (x.known() != y.known()) return false;
    if (x.known() ? x.value != y.value : (x.param.empty() || x.param != y.param)) return false;
  }
  return true;
}

// `consumer` goes away and `op` writes the value it wrote (keeping that value's name).
void take_over_output(Graph& g, Node* op, Node* consumer, Value* y) {
  Value* old = op->outputs[0];
  g.remove_node(consumer);
  old->producer = nullptr;
  op->outputs[0] = y;
  y->producer = op;
}

bool scalar_constant(const Value* v, float* out) {
  if (!v->is_constant() || v->constant.numel() != 1) return false;
  *out = static_cast<float>(v->constant.at_double(0));
  return true;
}

// Conv followed by Add of a constant [C,1,1] (or [1,C,1,1]): that is Conv's own bias.
bool fold_bias_add(Graph& g, Node* op, Node* add) {
  Value* out = op->outputs[0];
  Value* c = add->input(0) == out ? add->input(1) : add->input(0);
  if (!c || c == out || !c->is_constant() || c->constant.dtype() != DataType::kFloat32 ||
      !out->has_shape || out->dims.size() < 3 || !out->dims[1].known())
    return false;
  const int64_t ch = out->dims[1].value;
  const Shape& s = c->constant.shape();
  if (s.size() != out->dims.size() && s.size() != out->dims.size() - 1) return false;
  const size_t lead = s.size() == out->dims.size() ? 1 : 0;
  if (lead && s[0] != 1) return false;
  if (s[lead] != ch) return false;
  for (size_t i = lead + 1; i < s.size(); ++i)
    if (s[i] != 1) return false;
  std::vector<float> b(ch, 0.f);
  if (Value* old = op->input(2)) {
    if (!old->is_constant() || old->constant.dtype() != DataType::kFloat32 ||
        old->constant.numel() != ch)
      return false;
    b = old->constant.to_floats();
  }
  std::vector<float> add_values = c->constant.to_floats();
  for (int64_t k = 0; k < ch; ++k) b[k] += add_values[k];
  g.set_input(op, 2, g.add_constant(op->name + "_bias", Tensor::from_floats({ch}, b)));
  take_over_output(g, op, add, add->output(0));
  return true;
}

// MatMul followed by Add of a float32 constant [N] (or [1, ..., 1, N]) along the output's last
// axis: a Linear layer's bias, carried as the bias epilogue. B must be a matrix (a 1-D B drops
// N from the output, whose last axis is then A's rows).
bool fuse_matmul_bias(Graph& g, Node* op, Node* add) {
  Value* out = op->outputs[0];
  const Value* b = op->input(1);
  if (!b || !b->has_shape || b->dims.size() < 2) return false;
  Value* c = add->input(0) == out ? add->input(1) : add->input(0);
  if (!c || c == out || !c->is_constant() || c->constant.dtype() != DataType::kFloat32 ||
      !out->has_shape || out->dims.empty() || !out->dims.back().known())
    return false;
  const int64_t n = out->dims.back().value;
  const Shape& s = c->constant.shape();
  if (s.empty() || s.back() != n || s.size() > out->dims.size()) return false;
  for (size_t i = 0; i + 1 < s.size(); ++i)
    if (s[i] != 1) return false;
  op->epilogue.bias_input = static_cast<int>(op->inputs.size());
  g.set_input(op, op->inputs.size(), g.add_constant(op->name + "_bias", c->constant.reshaped({n})));
  take_over_output(g, op, add, add->output(0));
  return true;
}

// The activation `n` computes as an epilogue, if any.
bool activation_of(const Node& n, Epilogue* e) {
  switch (n.op) {
    case OpKind::Relu: e->act = Activation::kRelu; return true;
    case OpKind::Sigmoid: e->act = Activation::kSigmoid; return true;
    case OpKind::Tanh: e->act = Activation::kTanh; return true;
    case OpKind::HardSwish: e->act = Activation::kHardSwish; return true;
    case OpKind::LeakyRelu:
      e->act = Activation::kLeakyRelu;
      e->alpha = leaky_relu_attrs(n).alpha;
      return true;
    case OpKind::HardSigmoid:
      e->act = Activation::kHardSigmoid;
      e->alpha = hard_sigmoid_attrs(n).alpha;
      e->beta = hard_sigmoid_attrs(n).beta;
      return true;
    case OpKind::Clip: {
      float lo = -std::numeric_limits<float>::infinity();
      float hi = std::numeric_limits<float>::infinity();
      if (n.input(1) && !scalar_constant(n.input(1), &lo)) return false;
      if (n.input(2) && !scalar_constant(n.input(2), &hi)) return false;
      e->act = Activation::kClip;
      e->alpha = lo;
      e->beta = hi;
      return true;
    }
    default: return false;
  }
}

// Whether `v` is a constant scalar (any rank, one element) within 1e-5 relative of `want`.
bool constant_near(const Value* v, double want) {
  float x = 0.f;
  return v && scalar_constant(v, &x) && std::abs(x - want) <= 1e-5 * std::abs(want);
}

// The other input of binary node `n` when one of its inputs is `v`, else nullptr.
const Value* other_input(const Node* n, const Value* v) {
  if (!n || n->inputs.size() != 2) return nullptr;
  if (n->input(0) == v) return n->input(1);
  if (n->input(1) == v) return n->input(0);
  return nullptr;
}

// The exact GELU as exporters write it on x: d = x / √2 (or x · 1/√2), t = Erf(d) + 1, then
// y = (x · t) · 0.5 or (x · 0.5) · t. x must be read by exactly the first node of each branch.
// Returns the nodes after x, in order, the last writing y; empty when it is not that.
std::vector<Node*> match_gelu(const Graph& g, const Value* x) {
  if (x->consumers.size() != 2 || is_graph_output(g, x)) return {};
  for (int first = 0; first < 2; ++first) {
    Node* scale = x->consumers[first];
    Node* mul = x->consumers[1 - first];
    const bool div = scale->op == OpKind::Div && scale->input(0) == x &&
                     constant_near(scale->input(1), std::sqrt(2.0));
    const bool mul_inv =
        scale->op == OpKind::Mul && constant_near(other_input(scale, x), std::sqrt(0.5));
    if (!(div || mul_inv) || mul->op != OpKind::Mul || !scale->output(0)) continue;
    Node* erf = sole_consumer(g, scale->output(0));
    if (!erf || erf->op != OpKind::Erf || !erf->output(0)) continue;
    Node* add = sole_consumer(g, erf->output(0));
    if (!add || add->op != OpKind::Add || !constant_near(other_input(add, erf->output(0)), 1.0) ||
        !add->output(0))
      continue;
    const Value* t = add->output(0);
    Node* next = sole_consumer(g, t);
    if (!next || next->op != OpKind::Mul || !mul->output(0)) continue;
    if (next == mul && other_input(mul, x) == t) {
      // (x · t) · 0.5
      Node* half = sole_consumer(g, mul->output(0));
      if (half && half->op == OpKind::Mul && half->output(0) &&
          constant_near(other_input(half, mul->output(0)), 0.5))
        return {scale, erf, add, mul, half};
    } else if (constant_near(other_input(mul, x), 0.5) &&
               sole_consumer(g, mul->output(0)) == next && other_input(next, mul->output(0)) == t &&
               next->output(0)) {
      // (x · 0.5) · t
      return {scale, erf, add, mul, next};
    }
  }
  return {};
}

// Fuses what follows `op`; appends the names of the absorbed nodes to `names`.
bool fuse_after(Graph& g, Node* op, std::vector<std::string>* names) {
  bool changed = false;
  Node* next = sole_consumer(g, op->outputs[0]);
  // A constant Add after Conv (per channel) or MatMul (along the last axis) is a bias.
  if (next && next->op == OpKind::Add && next->inputs.size() == 2 && next->output(0) &&
      (op->op == OpKind::Conv || op->op == OpKind::MatMul)) {
    std::string name = next->name;
    if (op->op == OpKind::Conv ? fold_bias_add(g, op, next) : fuse_matmul_bias(g, op, next)) {
      names->push_back(name);
      changed = true;
      next = sole_consumer(g, op->outputs[0]);
    }
  }
  if (next && next->op == OpKind::Add && next->inputs.size() == 2 && next->output(0)) {
    Value* out = op->outputs[0];
    Value* r = next->input(0) == out ? next->input(1) : next->input(0);
    if (r && r != out && !r->is_constant() && same_shape(r, out) && r->dtype == out->dtype &&
        same_shape(next->output(0), out)) {
      names->push_back(next->name);
      op->epilogue.residual_input = static_cast<int>(op->inputs.size());
      g.set_input(op, op->inputs.size(), r);
      take_over_output(g, op, next, next->output(0));
      changed = true;
      next = sole_consumer(g, op->outputs[0]);
    }
  }
  Value* out = op->outputs[0];
  Epilogue e;
  if (next && next->output(0) && next->outputs.size() == 1 && activation_of(*next, &e)) {
    op->epilogue.act = e.act;
    op->epilogue.alpha = e.alpha;
    op->epilogue.beta = e.beta;
    names->push_back(next->name);
    take_over_output(g, op, next, next->output(0));
    return true;
  }
  // GELU as exporters write it (match_gelu).
  if (std::vector<Node*> gelu = match_gelu(g, out); !gelu.empty()) {
    op->epilogue.act = Activation::kGelu;
    Value* y = gelu.back()->output(0);
    for (Node* n : gelu) names->push_back(n->name);
    for (size_t i = 0; i + 1 < gelu.size(); ++i) g.remove_node(gelu[i]);
    take_over_output(g, op, gelu.back(), y);
    return true;
  }
  // SiLU as exporters write it: Mul(x, Sigmoid(x)), x read by exactly those two nodes.
  if (out->consumers.size() == 2 && !is_graph_output(g, out)) {
    Node* sig = nullptr;
    Node* mul = nullptr;
    for (Node* c : out->consumers) {
      if (c->op == OpKind::Sigmoid) sig = c;
      if (c->op == OpKind::Mul) mul = c;
    }
    if (sig && mul && sig->output(0) && mul->output(0) && mul->inputs.size() == 2 &&
        sole_consumer(g, sig->output(0)) == mul &&
        ((mul->input(0) == out && mul->input(1) == sig->output(0)) ||
         (mul->input(1) == out && mul->input(0) == sig->output(0)))) {
      op->epilogue.act = Activation::kSilu;
      names->push_back(sig->name);
      names->push_back(mul->name);
      g.remove_node(sig);
      take_over_output(g, op, mul, mul->output(0));
      return true;
    }
  }
  return changed;
}

}  // namespace

Result<bool> fuse_epilogue(Graph& g, std::vector<std::vector<std::string>>* groups) {
  std::vector<Node*> ops;
  for (const auto& n : g.nodes())
    if ((n->op == OpKind::Conv || n->op == OpKind::ConvTranspose || n->op == OpKind::Gemm ||
         n->op == OpKind::MatMul) &&
        n->epilogue.empty() && n->outputs.size() == 1 && n->outputs[0] &&
        dtype_is_float(n->outputs[0]->dtype))
      ops.push_back(n.get());
  bool changed = false;
  for (Node* op : ops) {
    std::vector<std::string> names{op->name};
    if (!fuse_after(g, op, &names)) continue;
    changed = true;
    if (groups) groups->push_back(names);
  }
  if (changed) {
    // A residual may be produced after the op in the old order.
    KILN_RETURN_IF_ERROR(g.topo_sort());
    g.remove_unused_values();
  }
  return changed;
}

}  // namespace kiln

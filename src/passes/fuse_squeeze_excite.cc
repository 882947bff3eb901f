// fuse_squeeze_excite: the squeeze-and-excitation block as fuse_epilogue leaves it,
//
//   s = GlobalAveragePool(x) → Conv 1×1 [act1] → Conv 1×1 [act2];  y = Mul(x, s)
//
// becomes one SqueezeExcite(x, W1, B1, W2, B2) node (ops/squeeze_excite.h). For CUDA engines:
// the two convolutions run on a [N, C, 1, 1] tensor, where a library convolution costs more
// in launch and setup than the work itself, and the pooled vector and the gate then stay in the
// kernel's float scratch.
#include "ops/conv.h"
#include "ops/squeeze_excite.h"
#include "passes/pass.h"

namespace kiln {

namespace {

bool all_equal(const std::vector<int64_t>& v, int64_t x) {
  for (int64_t k : v)
    if (k != x) return false;
  return true;
}

// A Conv of 1×1 constant weights [out, in, 1, 1] (stride 1, no padding, one group) whose
// epilogue is at most an activation, reading `x` and read only by the next node.
bool pointwise_conv(const Node* n, const Value* x, int64_t in_ch, int64_t* out_ch) {
  if (!n || n->op != OpKind::Conv || n->input(0) != x || n->outputs.size() != 1 || !n->output(0) ||
      n->inputs.size() > 3 || n->epilogue.residual_input >= 0 || n->epilogue.affine_input >= 0)
    return false;
  const auto a = parse_conv_attrs(n->attrs);
  if (!a.is_ok() || a->group != 1 || !all_equal(a->strides, 1) || !all_equal(a->dilations, 1) ||
      !all_equal(a->pads, 0) || !all_equal(a->kernel_shape, 1) ||
      (a->auto_pad != AutoPad::kNotSet && a->auto_pad != AutoPad::kValid))
    return false;
  const Value* w = n->input(1);
  if (!w || !w->is_constant() || w->constant.dtype() != DataType::kFloat32) return false;
  const Shape& ws = w->constant.shape();
  if (ws.size() != 4 || ws[1] != in_ch || ws[2] != 1 || ws[3] != 1) return false;
  const Value* b = n->input(2);
  if (b && (!b->is_constant() || b->constant.dtype() != DataType::kFloat32 ||
            b->constant.shape() != Shape{ws[0]}))
    return false;
  *out_ch = ws[0];
  return true;
}

bool fuse_at(Graph& g, Node* pool, std::vector<std::vector<std::string>>* groups) {
  if (pool->op != OpKind::GlobalAveragePool || pool->outputs.size() != 1) return false;
  Value* x = pool->input(0);
  if (!x || x->dtype != DataType::kFloat32 || !x->has_shape || x->dims.size() != 4 ||
      !x->dims[1].known())
    return false;
  const int64_t c = x->dims[1].value;
  int64_t r = 0, c2 = 0;
  Node* conv1 = sole_consumer(g, pool->output(0));
  if (!pointwise_conv(conv1, pool->output(0), c, &r) || r == 0) return false;
  Node* conv2 = sole_consumer(g, conv1->output(0));
  if (!pointwise_conv(conv2, conv1->output(0), r, &c2) || c2 != c) return false;
  Node* mul = sole_consumer(g, conv2->output(0));
  if (!mul || mul->op != OpKind::Mul || mul->inputs.size() != 2 || mul->outputs.size() != 1 ||
      !mul->output(0) || !mul->epilogue.empty())
    return false;
  const int k = mul->input(0) == conv2->output(0) ? 0 : 1;
  if (mul->input(k) != conv2->output(0) || mul->input(1 - k) != x) return false;

  SqueezeExciteAttrs a;
  a.squeeze = conv1->epilogue.act;
  a.squeeze_alpha = conv1->epilogue.alpha;
  a.squeeze_beta = conv1->epilogue.beta;
  a.excite = conv2->epilogue.act;
  a.excite_alpha = conv2->epilogue.alpha;
  a.excite_beta = conv2->epilogue.beta;
  Attributes attrs;
  set_squeeze_excite_attrs(a, &attrs);
  std::vector<Value*> ins = {x, conv1->input(1), conv1->input(2), conv2->input(1), conv2->input(2)};
  Value* y = mul->output(0);
  const std::vector<std::string> names = {mul->name, pool->name, conv1->name, conv2->name};
  g.remove_node(mul);
  g.remove_node(conv2);
  g.remove_node(conv1);
  g.remove_node(pool);
  g.add_node(OpKind::SqueezeExcite, names[0], std::move(ins), {y}, std::move(attrs));
  if (groups) groups->push_back(names);
  return true;
}

}  // namespace

Result<bool> fuse_squeeze_excite(Graph& g, std::vector<std::vector<std::string>>* groups) {
  return fuse_each(g, OpKind::GlobalAveragePool, [&](Node* n) { return fuse_at(g, n, groups); });
}

}  // namespace kiln

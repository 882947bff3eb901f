// fuse_concat_affine: a Concat on channels whose only reader is a standalone
// BatchNormalization (optionally with its Relu epilogue) becomes one Concat carrying the
// normalization as a channel-affine epilogue (ir/epilogue.h):
//
//   y = act(concat(x_0..x_k)·a[c] + shift[c]),  a = scale / sqrt(var + ε),  shift = B − mean·a
//
// DenseNet is the case: every dense layer reads Concat(all earlier features) through
// norm → relu, so the concatenated tensor was written by the Concat, read and written again
// by the norm, and read by the conv. Fused, it is written once. For CUDA engines, after
// fuse_channel_affine (which turns fold_batch_norm's Mul + Add + Relu back into a
// BatchNormalization); the CUDA Concat kernel applies the epilogue as it copies.
#include "ops/batch_normalization.h"
#include "ops/concat.h"
#include "passes/pass.h"

namespace kiln {

namespace {

bool fuse_at(Graph& g, Node* cat, std::vector<std::vector<std::string>>* groups) {
  if (cat->op != OpKind::Concat || !cat->epilogue.empty() || cat->outputs.size() != 1) return false;
  Value* y = cat->output(0);
  if (!y || !y->has_shape || y->dims.size() != 4 || !y->dims[1].known() ||
      y->dtype != DataType::kFloat32)
    return false;
  const int64_t axis = concat_attrs(*cat).axis;
  if (axis != 1 && axis != -3) return false;
  for (const Value* v : cat->inputs)
    if (!v || v->is_constant() || v->dtype != DataType::kFloat32) return false;
  Node* bn = sole_consumer(g, y);
  if (!bn || bn->op != OpKind::BatchNormalization || bn->inputs.size() != 5 || bn->input(0) != y ||
      bn->outputs.empty() || !bn->output(0))
    return false;
  if (batch_norm_attrs(*bn).training_mode) return false;
  const Epilogue& be = bn->epilogue;
  if (be.residual_input >= 0 || be.affine_input >= 0 ||
      (be.act != Activation::kNone && be.act != Activation::kRelu))
    return false;
  // a = scale / sqrt(var + ε), shift = B − mean·a (fold_batch_norm's parameters).
  const int64_t c = y->dims[1].value;
  BatchNormParams bp;
  if (!batch_norm_params(*bn, c, &bp)) return false;
  Value* out = bn->output(0);
  const std::string bn_name = bn->name;
  const Activation act = be.act;
  const std::string name = cat->name + "_affine";
  Value* a_v = g.add_constant(name + "_scale", Tensor::from_floats({c}, bp.scale));
  Value* s_v = g.add_constant(name + "_shift", Tensor::from_floats({c}, bp.shift));
  g.remove_node(bn);
  cat->epilogue.affine_input = static_cast<int>(cat->inputs.size());
  cat->epilogue.act = act;
  g.set_input(cat, cat->inputs.size(), a_v);
  g.set_input(cat, cat->inputs.size(), s_v);
  // The Concat now writes the norm's output (keeping that value's name).
  y->producer = nullptr;
  cat->outputs[0] = out;
  out->producer = cat;
  if (groups) groups->push_back({cat->name, bn_name});
  return true;
}

}  // namespace

Result<bool> fuse_concat_affine(Graph& g, std::vector<std::vector<std::string>>* groups) {
  return fuse_each(g, OpKind::Concat, [&](Node* n) { return fuse_at(g, n, groups); });
}

}  // namespace kiln

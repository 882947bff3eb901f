// Engine::stats(): op counts, parameters and FLOPs per image, from the IR's value shapes.
//
// FLOPs count the multiply-adds of Conv, ConvTranspose, Gemm and MatMul as 2 FLOPs each
// (the usual convention: ResNet-50 is ~8.2 GFLOP); elementwise ops, pooling and bias adds
// are left out, they are a few percent of a CNN. A dimension of unknown size (a symbolic
// batch) counts as 1; when the first input's batch dimension is fixed, the total is
// divided by it so the figure is always per image.
#include "ir/graph.h"
#include "ops/gemm.h"
#include "runtime/engine_impl.h"

namespace kiln {

namespace {

// Element count of `v` with unknown dimensions taken as 1; -1 when the rank is unknown.
int64_t numel_of(const Value* v) {
  if (!v || !v->has_shape) return -1;
  int64_t n = 1;
  for (const Dim& d : v->dims) n *= d.known() ? d.value : 1;
  return n;
}

// Dimension i (negative counts from the end) with unknown taken as 1; -1 if absent.
int64_t dim_of(const Value* v, int64_t i) {
  if (!v || !v->has_shape) return -1;
  int64_t rank = static_cast<int64_t>(v->dims.size());
  if (i < 0) i += rank;
  if (i < 0 || i >= rank) return -1;
  return v->dims[i].known() ? v->dims[i].value : 1;
}

// Product of the weight's dimensions after the first: Cin/group·prod(kernel) for Conv,
// Cout/group·prod(kernel) for ConvTranspose.
int64_t per_output_macs(const Value* w) {
  if (!w || !w->has_shape || w->dims.size() < 2) return -1;
  int64_t n = 1;
  for (size_t i = 1; i < w->dims.size(); ++i) n *= w->dims[i].known() ? w->dims[i].value : 1;
  return n;
}

double node_flops(const Node& n) {
  switch (n.op) {
    case OpKind::Conv: {
      // 2·N·Cout·spatial_out·(Cin/group)·prod(kernel) = 2·numel(Y)·prod(W.shape[1:])
      int64_t y = numel_of(n.output(0)), k = per_output_macs(n.input(1));
      return y < 0 || k < 0 ? 0 : 2.0 * y * k;
    }
    case OpKind::ConvTranspose: {
      // Each input element scatters into (Cout/group)·prod(kernel) outputs.
      int64_t x = numel_of(n.input(0)), k = per_output_macs(n.input(1));
      return x < 0 || k < 0 ? 0 : 2.0 * x * k;
    }
    case OpKind::Gemm: {
      // Y[M,N] = A'[M,K]·B'[K,N]; K is A's second dim, or its first when transA.
      int64_t y = numel_of(n.output(0));
      int64_t k = dim_of(n.input(0), gemm_attrs(n).trans_a ? 0 : 1);
      return y < 0 || k < 0 ? 0 : 2.0 * y * k;
    }
    case OpKind::MatMul: {
      // numpy matmul: K is A's last dim (also for a 1-D A); every output element is a
      // K-long dot product.
      int64_t y = numel_of(n.output(0)), k = dim_of(n.input(0), -1);
      return y < 0 || k < 0 ? 0 : 2.0 * y * k;
    }
    default: return 0;
  }
}

}  // namespace

ModelStats Engine::stats() const { return model_stats(*impl_->graph); }

ModelStats model_stats(const Graph& g) {
  ModelStats s;
  for (const auto& n : g.nodes()) {
    ++s.op_counts[op_name(n->op)];
    ++s.num_nodes;
    s.flops_per_image += node_flops(*n);
  }
  for (const auto& v : g.values()) {
    if (!v->is_constant() || (v->consumers.empty() && !v->producer)) continue;
    s.num_parameters += v->constant.numel();
    s.parameter_bytes += static_cast<int64_t>(v->constant.nbytes());
  }
  // Weights given as Constant nodes (converted models often hold them so) count as
  // initializers do: their outputs' shapes are known from the value attribute.
  for (const auto& n : g.nodes()) {
    if (n->op != OpKind::Constant || n->outputs.empty()) continue;
    const Value* v = n->output(0);
    const int64_t count = numel_of(v);
    if (!v || v->is_constant() || count < 0) continue;
    s.num_parameters += count;
    s.parameter_bytes += count * static_cast<int64_t>(dtype_size(v->dtype));
  }
  if (!g.inputs().empty()) {
    const Value* in = g.inputs()[0];
    if (in->has_shape && in->dims.size() >= 2 && in->dims[0].known() && in->dims[0].value > 1)
      s.flops_per_image /= static_cast<double>(in->dims[0].value);
  }
  return s;
}

}  // namespace kiln

// Which values oneDNN kernels may keep in a layout of their own between them (storable in
// dnnl_common.h; which layout is dnnl_layout_plan.cc's decision), and the conversions the
// reference fallback needs around such operands.

#include <algorithm>

#include "backends/cpu/dnnl_common.h"

namespace kiln::dnnl_cpu {

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

// Whether `reader` reads `v` only where a stored activation is accepted.
bool reads_as_activation(const Node& reader, const Value* v) {
  if (!claims(reader)) return false;
  const std::vector<const Value*> ops = layout_operands(reader);
  for (size_t i = 0; i < reader.inputs.size(); ++i)
    if (reader.inputs[i] == v && std::find(ops.begin(), ops.end(), v) == ops.end()) return false;
  return true;
}

bool same_dim(const Dim& a, const Dim& b) {
  return a.known() ? a.value == b.value : !b.known() && !a.param.empty() && a.param == b.param;
}

// A rank-4 Concat joins the groups when every input's channel count is a multiple of 16 (the
// largest block): each input then starts on a block boundary of a blocked output, where
// oneDNN's concat writes it with one reorder into a view of the output.
std::vector<const Value*> concat_operands(const Node& n) {
  const Value* y = n.output(0);
  if (!y || !y->has_shape || y->dims.size() != 4) return {};
  std::vector<const Value*> ops{y};
  for (const Value* x : n.inputs) {
    if (!x || !x->has_shape || x->dims.size() != 4 || !x->dims[1].known() ||
        x->dims[1].value % 16 != 0)
      return {};
    ops.push_back(x);
  }
  return ops;
}

bool broadcasts_channels(const Value* v) {
  return v && v->has_shape && v->dims.size() == 4 && v->dims[2].value == 1 && v->dims[3].value == 1;
}

}  // namespace

std::vector<const Value*> layout_operands(const Node& n) {
  switch (n.op) {
    case OpKind::Conv: {
      std::vector<const Value*> ops{n.input(0), n.output(0)};
      if (n.epilogue.residual_input >= 0)
        ops.push_back(n.input(static_cast<size_t>(n.epilogue.residual_input)));
      return ops;
    }
    case OpKind::MaxPool:
    case OpKind::AveragePool:
    case OpKind::GlobalAveragePool:
    case OpKind::BatchNormalization: return {n.input(0), n.output(0)};
    default: break;
  }
  if (is_eltwise_op(n.op)) return {n.input(0), n.output(0)};  // element-wise: any layout
  if (n.op == OpKind::Concat) return concat_operands(n);
  if (!is_binary_op(n.op) || n.inputs.size() != 2) return {};
  const Value* y = n.output(0);
  if (!y || !y->has_shape || y->dims.size() != 4) return {};
  std::vector<const Value*> ops{y};
  for (const Value* x : n.inputs) {
    if (!x || !x->has_shape || x->dims.size() != 4) continue;
    bool full = true;
    for (size_t d = 0; d < 4; ++d) full = full && same_dim(x->dims[d], y->dims[d]);
    if (full || broadcasts_channels(x)) ops.push_back(x);
  }
  return ops;
}

bool storable(const Value* v) {
  if (!v || v->dtype != DataType::kFloat32 || v->is_constant() || v->is_graph_output) return false;
  if (!v->has_shape || v->dims.size() != 4 || !v->dims[1].known()) return false;
  const Node* p = v->producer;
  if (!p || p->output(0) != v || !claims(*p)) return false;
  const std::vector<const Value*> made = layout_operands(*p);
  if (std::find(made.begin(), made.end(), v) == made.end()) return false;
  if (v->consumers.empty()) return false;
  for (const Node* c : v->consumers)
    if (!reads_as_activation(*c, v)) return false;
  return true;
}

Layout stored_layout(const DnnlShared& sh, const Value* v, const Shape& shape) {
  if (!v || shape.size() != 4) return Layout::kPlain;
  switch (stored_format(sh, v, shape[0])) {
    case tag::nhwc: return Layout::kNHWC;
    case tag::nChw8c: return Layout::kNChw8c;
    case tag::nChw16c: return Layout::kNChw16c;
    default: return Layout::kPlain;
  }
}

bool stored_blocked(const DnnlShared& sh, const Value* v, int64_t batch) {
  return stored_format(sh, v, batch) != tag::nchw;
}

memory::desc stored_desc(const DnnlShared& sh, const Value* v, const std::vector<int64_t>& shape) {
  return memory::desc(to_dims(shape), dt::f32,
                      shape.size() == 4 ? stored_format(sh, v, shape[0]) : tag::nchw);
}

void reorder_once(const memory::desc& src_md, const void* src, const memory::desc& dst_md,
                  void* dst) {
  memory s(src_md, cpu_engine(), const_cast<void*>(src));
  memory d(dst_md, cpu_engine(), dst);
  dnnl::stream stream(cpu_engine());
  dnnl::reorder(s, d).execute(stream, s, d);
  stream.wait();
}

std::vector<Layout> DnnlKernel::input_layouts_for(const std::vector<TensorDesc>& offered) const {
  std::vector<Layout> want(offered.size(), Layout::kPlain);
  for (size_t i = 0; i < offered.size(); ++i)
    want[i] = offered[i].present() && !offered[i].value && node_.input(i)
                  ? stored_layout(shared_, node_.input(i), offered[i].shape)
                  : offered[i].layout;
  return want;
}

}  // namespace kiln::dnnl_cpu

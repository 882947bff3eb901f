// Which values oneDNN kernels may keep in a layout of their own between them (storable in
// dnnl_common.h; which layout is dnnl_layout_plan.cc's decision), and the conversions the
// reference fallback needs around such operands.

#include "backends/cpu/dnnl_common.h"

namespace kiln::dnnl_cpu {

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

bool is_pool(const Node& n) { return n.op == OpKind::MaxPool || n.op == OpKind::AveragePool; }

// Whether `reader` reads `v` only where a blocked activation is accepted.
bool reads_as_activation(const Node& reader, const Value* v) {
  if (reader.op != OpKind::Conv && !is_pool(reader)) return false;
  if (!claims(reader)) return false;
  for (size_t i = 0; i < reader.inputs.size(); ++i) {
    if (reader.inputs[i] != v) continue;
    if (i == 0) continue;
    if (reader.op == OpKind::Conv && static_cast<int>(i) == reader.epilogue.residual_input)
      continue;
    return false;
  }
  return true;
}

}  // namespace

bool storable(const Value* v) {
  if (!v || v->dtype != DataType::kFloat32 || v->is_constant() || v->is_graph_output) return false;
  if (!v->has_shape || v->dims.size() != 4 || !v->dims[1].known()) return false;
  const Node* p = v->producer;
  if (!p || (p->op != OpKind::Conv && !is_pool(*p)) || p->output(0) != v || !claims(*p))
    return false;
  if (v->consumers.empty()) return false;
  for (const Node* c : v->consumers)
    if (!reads_as_activation(*c, v)) return false;
  return true;
}

bool stored_blocked(const Value* v) { return stored_format(v) != tag::nchw; }

memory::desc stored_desc(const Value* v, const std::vector<int64_t>& shape) {
  return memory::desc(to_dims(shape), dt::f32, shape.size() == 4 ? stored_format(v) : tag::nchw);
}

void reorder_once(const memory::desc& src_md, const void* src, const memory::desc& dst_md,
                  void* dst) {
  memory s(src_md, cpu_engine(), const_cast<void*>(src));
  memory d(dst_md, cpu_engine(), dst);
  dnnl::stream stream(cpu_engine());
  dnnl::reorder(s, d).execute(stream, s, d);
  stream.wait();
}

Status DnnlKernel::run_reference(const std::vector<const Tensor*>& in,
                                 const std::vector<Tensor*>& out) {
  const OpDef* def = OpRegistry::find(node_.op);
  std::vector<Tensor> plain_in(in.size()), plain_out(out.size());
  std::vector<const Tensor*> ref_in = in;
  std::vector<Tensor*> ref_out = out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!in[i] || in[i]->rank() != 4 || !stored_blocked(node_.input(i))) continue;
    plain_in[i] = Tensor(in[i]->dtype(), in[i]->shape());
    reorder_once(stored_desc(node_.input(i), in[i]->shape()), in[i]->raw(),
                 memory::desc(to_dims(in[i]->shape()), dt::f32, tag::nchw), plain_in[i].raw());
    ref_in[i] = &plain_in[i];
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (!out[i] || out[i]->rank() != 4 || !stored_blocked(node_.output(i))) continue;
    plain_out[i] = Tensor(out[i]->dtype(), out[i]->shape());
    ref_out[i] = &plain_out[i];
  }
  KILN_RETURN_IF_ERROR(run_node(*def, node_, ref_in, ref_out).with_context(node_.describe()));
  for (size_t i = 0; i < out.size(); ++i)
    if (plain_out[i].defined())
      reorder_once(memory::desc(to_dims(out[i]->shape()), dt::f32, tag::nchw), plain_out[i].raw(),
                   stored_desc(node_.output(i), out[i]->shape()), out[i]->raw());
  return Status();
}

}  // namespace kiln::dnnl_cpu

// The layout decision: which layout each value between oneDNN kernels is stored in
// (stored_format in dnnl_common.h).
//
// Values that may be stored in a oneDNN layout at all ("storable": see dnnl_common.h) form
// connected groups through the oneDNN convs and pools that read and write them; ResNet-50
// from its stem to its last conv is one group. A group's layout is one decision: oneDNN
// 2.6's conv kernels read and write one layout family, so storing neighbours differently
// would only move a reorder from one conv to the next (and each conv still weighs running
// in the other layout with reorders around it: dnnl_conv_plan.h).
// The candidates are the layouts oneDNN has JIT kernels for on this CPU: nhwc (its brgemm
// kernels) and nChw16c (nChw8c without AVX-512; the older direct kernels, and Winograd,
// which runs on nothing else). A blocked candidate stores a value whose channel count is off
// the block in nhwc. KILN_DNNL_LAYOUT picks: "auto" (default) times every conv of the group
// under each candidate (dnnl_conv_plan.h: each conv at its own best, reorders included) and
// keeps the cheaper sum; "nhwc" or "blocked" force one.
//
// The timing runs on the values' declared shapes with a symbolic batch taken as 1 (cheap:
// ~0.4 s for ResNet-50's two candidates), and each conv's time is measured once per process
// (conv_seconds), so the decision depends on the graph only, never on the batch a run brings
// or on which kernel asks: every kernel of every Context derives the same layouts. Where a group
// has other unknown dims it cannot be timed, and the blocked layout is taken when the group has a
// conv Winograd could run (the one kernel that needs it), nhwc otherwise.

#include <cstdlib>
#include <set>
#include <string>

#include "backends/cpu/dnnl_conv_plan.h"
#include "core/env.h"

namespace kiln::dnnl_cpu {

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

enum class LayoutMode { kAuto, kNhwc, kBlocked };  // in env_choice's order

LayoutMode layout_mode() {
  return static_cast<LayoutMode>(env_choice("KILN_DNNL_LAYOUT", {"nhwc", "blocked"}));
}

// The layouts oneDNN runs a 3×3 conv in with a JIT kernel on this CPU (asked once).
struct Candidates {
  bool nhwc = false;
  tag blocked = tag::undef;  // nChw16c or nChw8c
  int64_t block = 1;
};

const Candidates& candidates() {
  static const Candidates c = [] {
    auto has_jit = [](tag t) {
      try {
        const memory::dims dims{1, 32, 8, 8};
        memory::desc x(dims, dt::f32, t);
        memory::desc w({32, 32, 3, 3}, dt::f32, tag::any);
        dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                          dnnl::algorithm::convolution_direct, x, w, memory::desc(),
                                          x, {1, 1}, {1, 1}, {1, 1});
        dnnl::convolution_forward::primitive_desc pd(d, cpu_engine());
        return std::string(pd.impl_info_str()).find("jit") != std::string::npos ||
               std::string(pd.impl_info_str()).find("brg") != std::string::npos;
      } catch (const dnnl::error&) {
        return false;
      }
    };
    Candidates r;
    r.nhwc = has_jit(tag::nhwc);
    if (has_jit(tag::nChw16c)) {
      r.blocked = tag::nChw16c;
      r.block = 16;
    } else if (has_jit(tag::nChw8c)) {
      r.blocked = tag::nChw8c;
      r.block = 8;
    }
    return r;
  }();
  return c;
}

// How `v` is stored when its group takes `layout` (nhwc, or the blocked candidate).
tag format_under(const Value* v, tag layout) {
  if (layout == tag::nhwc) return tag::nhwc;
  if (v->dims[1].value % candidates().block == 0) return layout;
  return candidates().nhwc ? tag::nhwc : tag::nchw;
}

// The storable values connected to `v` through oneDNN convs and pools, and those nodes.
struct Group {
  std::set<const Value*> values;
  std::set<const Node*> nodes;
};

Group group_of(const Value* v) {
  Group g;
  std::vector<const Value*> todo{v};
  g.values.insert(v);
  auto visit = [&](const Node* n) {
    if (!n || !claims(*n)) return;
    const std::vector<const Value*> operands = layout_operands(*n);
    if (operands.empty() || !g.nodes.insert(n).second) return;
    for (const Value* o : operands)
      if (o && storable(o) && g.values.insert(o).second) todo.push_back(o);
  };
  while (!todo.empty()) {
    const Value* u = todo.back();
    todo.pop_back();
    visit(u->producer);
    for (const Node* c : u->consumers) visit(c);
  }
  return g;
}

// The declared shape with a symbolic batch as 1; false when another dim is unknown.
bool timing_shape(const Value* v, Shape* s) {
  if (!v || !v->has_shape) return false;
  s->clear();
  for (size_t i = 0; i < v->dims.size(); ++i) {
    if (v->dims[i].known())
      s->push_back(v->dims[i].value);
    else if (i == 0)
      s->push_back(1);
    else
      return false;
  }
  return true;
}

// Seconds the group's convs take with the group in `layout`; negative when untimeable.
double group_seconds(const Group& g, tag layout) {
  auto fmt = [&](const Value* v) {
    return v && g.values.count(v) ? format_under(v, layout) : tag::nchw;
  };
  double total = 0;
  for (const Node* n : g.nodes) {
    if (n->op != OpKind::Conv) continue;  // pools run in either layout at memory speed
    Shape x;
    if (!timing_shape(n->input(0), &x)) return -1;
    const int r = n->epilogue.residual_input;
    const double s = conv_seconds(*n, x, fmt(n->input(0)), fmt(n->output(0)),
                                  r >= 0 ? fmt(n->input(static_cast<size_t>(r))) : tag::nchw);
    // A conv oneDNN cannot run in this layout would run on the reference kernel: far slower.
    total += s >= 0 ? s : 1e3;
  }
  return total;
}

bool has_winograd_shape(const Group& g) {
  for (const Node* n : g.nodes) {
    if (n->op != OpKind::Conv || !n->inputs[1]->is_constant()) continue;
    const Tensor& w = n->inputs[1]->constant;
    if (w.rank() == 4 && w.dim(2) == 3 && w.dim(3) == 3 && n->attrs.get_int("group", 1) == 1)
      return true;
  }
  return false;
}

}  // namespace

LayoutChoice layout_choice(const Value* v) {
  LayoutChoice c;
  if (!storable(v)) return c;
  const Candidates& cand = candidates();
  const LayoutMode mode = layout_mode();
  if (cand.nhwc) c.layouts.push_back(tag::nhwc);
  if (cand.blocked != tag::undef) c.layouts.push_back(cand.blocked);
  if (c.layouts.empty()) return c;
  c.chosen = c.layouts[0];
  if (mode == LayoutMode::kNhwc && cand.nhwc) c.chosen = tag::nhwc;
  if (mode == LayoutMode::kBlocked && cand.blocked != tag::undef) c.chosen = cand.blocked;
  if (mode != LayoutMode::kAuto || c.layouts.size() == 1) return c;
  const Group g = group_of(v);
  for (tag t : c.layouts) c.seconds.push_back(group_seconds(g, t));
  if (c.seconds[0] < 0 || c.seconds[1] < 0) {
    c.seconds.clear();
    c.chosen = has_winograd_shape(g) ? cand.blocked : c.layouts[0];
    return c;
  }
  c.chosen = c.seconds[1] < c.seconds[0] ? c.layouts[1] : c.layouts[0];
  return c;
}

tag stored_format(const Value* v) {
  const LayoutChoice c = layout_choice(v);
  return c.chosen == tag::nchw ? tag::nchw : format_under(v, c.chosen);
}

}  // namespace kiln::dnnl_cpu

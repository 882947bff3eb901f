// The layout decision: which layout each value between oneDNN kernels is stored in
// (stored_format in dnnl_common.h).
//
// Values that may be stored in a oneDNN layout at all ("storable": see dnnl_common.h) form
// connected groups through the oneDNN nodes that read and write them; MobileNet-V2 from its
// stem to its last conv is one group. The candidates are the layouts oneDNN has JIT kernels
// for on this CPU: nhwc (its brgemm kernels) and nChw16c (nChw8c without AVX-512; the older
// direct kernels, and Winograd, which runs on nothing else). A value whose channel count is off
// the block is stored in nhwc under either.
//
// The backend's CpuLayout (EngineOptions::cpu_layout) picks how:
// - "auto" (default): one layout per group, the cheaper sum of the group's conv times (each
//   conv timed with its operands in the candidate: dnnl_conv_plan.h, the conv at its best,
//   reorders included), timed with a symbolic batch taken as 1.
// - "value": per value. Values joined by a pool, element-wise, binary or Concat node share a
//   layout (those kernels read and write one); a conv may run between values stored
//   differently, converting one side. The conversion of each activation between the two
//   layouts is timed too, and the assignment of least total time, a conv paying for the
//   conversions its operands need when stored unlike the layout it runs in, is a minimum cut
//   (planner/two_label.h). A symbolic batch is taken as the batch of the run when every value
//   of the group has the same batch dimension (at batch 8 the activations leave the L2 cache
//   and cost differently per image than at batch 1), as 1 otherwise. Measured against "auto"
//   (bench/results/cpu.md), it plans MobileNet-V2 at batch 8 as expected (its 112² stage in
//   nChw16c, its 24-channel 56² stage in nhwc) but gains within the noise there (3%) and loses
//   4% on ResNet-50 at batch 1: the convs' times, measured alone on warm operands, do not rank
//   the mixed plans as they run in the model. So it is not the default.
// - "nhwc" or "blocked": forced.
// - "alternate", for tests: the sets of values (as in "value") take the two layouts in turn, in
//   the graph's order, so most convs run between operands stored differently.
//
// Each conv's and each conversion's time is measured once per backend (so once per Engine) and
// remembered (conv_seconds, LayoutPlans), so the decision depends on the graph (and in "value"
// that batch) only, never on which kernel asks: every kernel of every Context of an Engine
// derives the same layouts. Where a group
// has other unknown dims it cannot be timed, and the blocked layout is taken when the group has
// a conv Winograd could run (the one kernel that needs it), nhwc otherwise.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "backends/cpu/dnnl_conv_plan.h"
#include "ops/conv.h"
#include "planner/two_label.h"

namespace kiln::dnnl_cpu {

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

using LayoutMode = CpuLayout;

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

// The storable values connected to `v` through claimed nodes, and those nodes.
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

// The batch the group is planned for: `batch` when every value has the same unknown batch
// dimension (one symbol, so one number in any run), else 1 (the choice then cannot depend on it).
int64_t planning_batch(const Group& g, int64_t batch) {
  const Dim* first = nullptr;
  for (const Value* v : g.values) {
    if (!v->has_shape || v->dims.empty() || v->dims[0].known() || v->dims[0].param.empty())
      return 1;
    if (!first) first = &v->dims[0];
    if (v->dims[0].param != first->param) return 1;
  }
  return batch > 0 ? batch : 1;
}

// The declared shape with an unknown batch as `batch`; false when another dim is unknown.
bool timing_shape(const Value* v, int64_t batch, Shape* s) {
  if (!v || !v->has_shape) return false;
  s->clear();
  for (size_t i = 0; i < v->dims.size(); ++i) {
    if (v->dims[i].known())
      s->push_back(v->dims[i].value);
    else if (i == 0)
      s->push_back(batch);
    else
      return false;
  }
  return true;
}

bool on_block(const Value* v) { return v->dims[1].value % candidates().block == 0; }

}  // namespace

// The plan of one group at one planning batch: a layout per value (candidate index), the
// uniform candidates' summed conv seconds and the chosen assignment's estimated seconds.
struct GroupPlan {
  std::map<const Value*, int> label;
  std::vector<double> seconds;
  double planned = -1;
};

// Plans are remembered per group and planning batch: every kernel asks about its own operands,
// and the group's plan is the same answer for all of them. The key holds each value's address
// and declared shape, so a new graph (even one at a freed graph's addresses) is planned afresh
// unless it is the same group.
using PlanKey = std::pair<std::vector<std::pair<const Value*, std::vector<int64_t>>>, int64_t>;

// A backend's remembered layout answers: the group plans and the reorder times (by shape).
struct LayoutPlans {
  mutable std::mutex mu;
  std::map<PlanKey, GroupPlan> plans;
  mutable std::mutex reorder_mu;
  std::map<Shape, double> reorder_seconds;
};

std::shared_ptr<LayoutPlans> make_layout_plans() { return std::make_shared<LayoutPlans>(); }

namespace {
constexpr char kReorderPrefix[] = "onednn reorder ";
}  // namespace

void save_reorder_times(const LayoutPlans& p, ChoiceEntries& out) {
  std::lock_guard<std::mutex> lock(p.reorder_mu);
  for (const auto& [shape, secs] : p.reorder_seconds) {
    char v[32];
    std::snprintf(v, sizeof v, "%.9g", secs);
    out.emplace_back(kReorderPrefix + shape_str(shape), v);
  }
}

Result<bool> restore_reorder_time(LayoutPlans& p, const std::string& key,
                                  const std::string& value) {
  if (key.rfind(kReorderPrefix, 0) != 0) return false;
  const std::string dims = key.substr(sizeof kReorderPrefix - 1);
  Shape shape;
  bool ok = dims.size() >= 2 && dims.front() == '[' && dims.back() == ']';
  for (size_t i = 1; ok && i + 1 < dims.size();) {
    size_t used = 0;
    try {
      shape.push_back(std::stoll(dims.substr(i), &used));
    } catch (const std::exception&) {
      ok = false;
      break;
    }
    i += used;
    if (i + 1 < dims.size()) ok = dims[i++] == ',';
  }
  char* end = nullptr;
  const double secs = std::strtod(value.c_str(), &end);
  if (!ok || end == value.c_str() || *end != '\0' || secs < 0)
    return invalid_argument("oneDNN reorder time '" + key + "': cannot read '" + value + "'");
  std::lock_guard<std::mutex> lock(p.reorder_mu);
  p.reorder_seconds[shape] = secs;
  return true;
}

namespace {

// Seconds one reorder of a float32 tensor of `shape` from nhwc to the blocked layout takes
// (the best of a few runs after a warm-up; the other direction costs about the same). Measured
// once per shape by the backend, on the asking kernel's threads (as the convs are).
double reorder_seconds(const DnnlShared& sh, const Shape& shape) {
  LayoutPlans& lp = *sh.layouts;
  std::lock_guard<std::mutex> lock(lp.reorder_mu);
  std::map<Shape, double>& answers = lp.reorder_seconds;
  auto it = answers.find(shape);
  if (it != answers.end()) return it->second;
  double best = 0;
  try {
    const memory::dims d = to_dims(shape);
    memory src({d, dt::f32, tag::nhwc}, cpu_engine());
    memory dst({d, dt::f32, candidates().blocked}, cpu_engine());
    std::fill_n(static_cast<float*>(src.get_data_handle()), src.get_desc().get_size() / 4, 0.5f);
    dnnl::reorder r(src, dst);
    dnnl::stream stream(cpu_engine());
    for (int i = 0; i < 4; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      r.execute(stream, src, dst);
      stream.wait();
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (i == 1 || (i > 1 && t < best)) best = t;  // run 0 warms up
    }
  } catch (const dnnl::error&) {
    best = 0;
  } catch (const std::bad_alloc&) {
    best = 0;
  }
  answers[shape] = best;
  return best;
}

bool has_winograd_shape(const Group& g) {
  for (const Node* n : g.nodes) {
    if (n->op != OpKind::Conv || !n->inputs[1]->is_constant()) continue;
    const Tensor& w = n->inputs[1]->constant;
    const auto a = parse_conv_attrs(n->attrs);
    if (w.rank() == 4 && w.dim(2) == 3 && w.dim(3) == 3 && a.is_ok() && a->group == 1) return true;
  }
  return false;
}

// Representatives of the values joined by non-conv nodes (they read and write one layout).
class Sets {
 public:
  explicit Sets(const Group& g) {
    for (const Value* v : g.values) parent_[v] = v;
    for (const Node* n : g.nodes) {
      if (n->op == OpKind::Conv) continue;
      const Value* first = nullptr;
      for (const Value* o : layout_operands(*n)) {
        if (!o || !g.values.count(o)) continue;
        if (first)
          parent_[find(o)] = find(first);
        else
          first = o;
      }
    }
  }
  const Value* find(const Value* v) {
    while (parent_[v] != v) v = parent_[v] = parent_[parent_[v]];
    return v;
  }

 private:
  std::map<const Value*, const Value*> parent_;
};

// Plans `g` under `mode` at planning batch `nb`; empty `seconds` when it cannot be timed.
GroupPlan plan_group(const DnnlShared& sh, const Group& g, int64_t nb) {
  const LayoutMode mode = sh.options.layout;
  const std::vector<tag> layouts{tag::nhwc, candidates().blocked};
  GroupPlan plan;
  auto uniform = [&](int label) {
    for (const Value* v : g.values) plan.label[v] = label;
  };
  // Each conv's seconds with every operand stored as under layouts[i].
  struct ConvCost {
    const Node* node;
    double t[2];
  };
  std::vector<ConvCost> convs;
  double sums[2] = {0, 0};
  for (const Node* n : g.nodes) {
    if (n->op != OpKind::Conv) continue;  // pools run in either layout at memory speed
    Shape x;
    if (!timing_shape(n->input(0), nb, &x)) {
      uniform(has_winograd_shape(g) ? 1 : 0);
      return plan;
    }
    ConvCost c{n, {0, 0}};
    for (int i = 0; i < 2; ++i) {
      auto fmt = [&](const Value* v) {
        return v && g.values.count(v) ? format_under(v, layouts[i]) : tag::nchw;
      };
      const int r = n->epilogue.residual_input;
      const double s = conv_seconds(sh, *n, x, fmt(n->input(0)), fmt(n->output(0)),
                                    r >= 0 ? fmt(n->input(static_cast<size_t>(r))) : tag::nchw);
      // A conv oneDNN cannot run in this layout would run on the reference kernel: far slower.
      c.t[i] = s >= 0 ? s : 1e3;
      sums[i] += c.t[i];
    }
    convs.push_back(c);
  }
  plan.seconds = {sums[0], sums[1]};
  if (mode == LayoutMode::kAuto) {
    uniform(sums[1] < sums[0] ? 1 : 0);
    plan.planned = std::min(sums[0], sums[1]);
    return plan;
  }
  // Items: one per set of values joined by non-conv nodes, then one per conv (the layout it
  // runs in). A conv and an operand's set pay that operand's conversion when they differ.
  Sets sets(g);
  std::map<const Value*, size_t> item_of_set;
  TwoLabelProblem p;
  for (const Value* v : g.values) {
    const Value* r = sets.find(v);
    if (item_of_set.emplace(r, p.items.size()).second) p.items.push_back({0, 0});
  }
  for (const ConvCost& c : convs) {
    const size_t item = p.items.size();
    p.items.push_back({c.t[0], c.t[1]});
    std::vector<const Value*> ops = layout_operands(*c.node);
    for (const Value* o : ops) {
      Shape s;
      if (!o || !g.values.count(o) || !on_block(o) || !timing_shape(o, nb, &s)) continue;
      p.pairs.push_back({item, item_of_set[sets.find(o)], reorder_seconds(sh, s)});
    }
  }
  if (mode == LayoutMode::kAlternate) {
    // By the order of the sets' first values in the graph (ids), not by address.
    std::map<size_t, int> order;
    for (const Value* v : g.values) {
      const size_t item = item_of_set[sets.find(v)];
      auto it = order.find(item);
      if (it == order.end())
        order[item] = static_cast<int>(v->id());
      else
        it->second = std::min(it->second, static_cast<int>(v->id()));
    }
    std::vector<std::pair<int, size_t>> firsts;
    for (const auto& [item, id] : order) firsts.emplace_back(id, item);
    std::sort(firsts.begin(), firsts.end());
    std::vector<int> labels(p.items.size(), 0);
    for (size_t k = 0; k < firsts.size(); ++k) labels[firsts[k].second] = static_cast<int>(k % 2);
    for (const Value* v : g.values) plan.label[v] = labels[item_of_set[sets.find(v)]];
    plan.planned = two_label_cost(p, labels);
    return plan;
  }
  const TwoLabelSolution sol = solve_two_label(p);
  for (const Value* v : g.values) plan.label[v] = sol.labels[item_of_set[sets.find(v)]];
  plan.planned = sol.cost;
  return plan;
}

// The backend's plan of `g` at planning batch `nb`, planned on first asking. A std::map's
// elements stay where they are, so the reference outlives the lock.
const GroupPlan& remembered_plan(const DnnlShared& sh, const Group& g, int64_t nb) {
  LayoutPlans& lp = *sh.layouts;
  PlanKey key;
  key.second = nb;
  for (const Value* v : g.values) {
    std::vector<int64_t> dims;
    for (const Dim& d : v->dims) dims.push_back(d.value);
    key.first.emplace_back(v, std::move(dims));
  }
  {
    std::lock_guard<std::mutex> lock(lp.mu);
    auto it = lp.plans.find(key);
    if (it != lp.plans.end()) return it->second;
  }
  GroupPlan plan = plan_group(sh, g, nb);  // times; not under the lock
  std::lock_guard<std::mutex> lock(lp.mu);
  return lp.plans.emplace(std::move(key), std::move(plan)).first->second;
}

}  // namespace

LayoutChoice layout_choice(const DnnlShared& sh, const Value* v, int64_t batch) {
  LayoutChoice c;
  if (!storable(v)) return c;
  const Candidates& cand = candidates();
  const LayoutMode mode = sh.options.layout;
  if (cand.nhwc) c.layouts.push_back(tag::nhwc);
  if (cand.blocked != tag::undef) c.layouts.push_back(cand.blocked);
  if (c.layouts.empty()) return c;
  c.chosen = c.layouts[0];
  if (mode == LayoutMode::kNhwc && cand.nhwc) c.chosen = tag::nhwc;
  if (mode == LayoutMode::kBlocked && cand.blocked != tag::undef) c.chosen = cand.blocked;
  if (mode == LayoutMode::kNhwc || mode == LayoutMode::kBlocked || c.layouts.size() == 1) return c;
  const Group g = group_of(v);
  // One layout per group is planned at batch 1: the timings cannot tell the two apart by more
  // than the noise at any batch (measured), so the first run at a new batch is not spent on it.
  c.batch = mode == LayoutMode::kAuto ? 1 : planning_batch(g, batch);
  const GroupPlan& plan = remembered_plan(sh, g, c.batch);
  c.seconds = plan.seconds;
  c.planned_seconds = plan.planned;
  c.chosen = c.layouts[static_cast<size_t>(plan.label.at(v))];
  return c;
}

tag stored_format(const DnnlShared& sh, const Value* v, int64_t batch) {
  const LayoutChoice c = layout_choice(sh, v, batch);
  return c.chosen == tag::nchw ? tag::nchw : format_under(v, c.chosen);
}

}  // namespace kiln::dnnl_cpu

// fuse_channel_shuffle: ShuffleNet exports its channel shuffle (view → transpose → view) as
//
//   Reshape(x, [N, G, C/G, H, W]) → Transpose(perm [0, 2, 1, 3, 4]) → Reshape([N, C, H, W])
//
// and the two Reshapes' shapes are often computed at run time from Shape(x) (a dynamic batch).
// The three become one ChannelShuffle(x, s5, s4) node (ops/channel_shuffle.h), defined as
// exactly what the three compute for any shapes, so the pattern needs no shape to be known:
// the kernels look at the shapes when they run. On CUDA, it then shuffles NHWC tensors in
// place of two layout conversions and a rank-5 transpose.
#include <set>

#include "ops/reshape.h"
#include "ops/transpose.h"
#include "passes/pass.h"

namespace kiln {

namespace {

bool is_swap12(const Node& t) {
  if (t.op != OpKind::Transpose) return false;
  const auto perm = transpose_perm(t, 5);
  return perm.is_ok() && *perm == std::vector<int64_t>{0, 2, 1, 3, 4};
}

bool plain_reshape(const Node* n) {
  return n && n->op == OpKind::Reshape && n->inputs.size() == 2 && n->input(0) && n->input(1) &&
         n->outputs.size() == 1 && n->output(0) && n->epilogue.empty() && !reshape_allowzero(*n);
}

// `removed` receives the nodes the fusion deletes (the second Reshape may be another
// pattern's first).
bool fuse_at(Graph& g, Node* first, std::vector<std::vector<std::string>>* groups,
             std::set<const Node*>& removed) {
  if (!plain_reshape(first)) return false;
  Node* tr = sole_consumer(g, first->output(0));
  if (!tr || !is_swap12(*tr) || tr->inputs.size() != 1 || tr->outputs.size() != 1 ||
      !tr->output(0) || !tr->epilogue.empty())
    return false;
  Node* second = sole_consumer(g, tr->output(0));
  if (!plain_reshape(second) || second->input(0) != tr->output(0)) return false;
  Value* x = first->input(0);
  Value* s5 = first->input(1);
  Value* s4 = second->input(1);
  Value* y = second->output(0);
  const std::string name = first->name;
  const std::string tr_name = tr->name, second_name = second->name;
  removed.insert({first, tr, second});
  g.remove_node(second);
  g.remove_node(tr);
  g.remove_node(first);
  g.add_node(OpKind::ChannelShuffle, name, {x, s5, s4}, {y});
  if (groups) groups->push_back({name, tr_name, second_name});
  return true;
}

}  // namespace

Result<bool> fuse_channel_shuffle(Graph& g, std::vector<std::vector<std::string>>* groups) {
  std::set<const Node*> removed;
  return fuse_each(g, OpKind::Reshape,
                   [&](Node* n) { return !removed.count(n) && fuse_at(g, n, groups, removed); });
}

}  // namespace kiln

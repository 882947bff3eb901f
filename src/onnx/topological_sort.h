// Puts a graph's nodes in an order where every node comes after the producers of its inputs.
// ONNX requires that order, and its checker refuses a graph without it, but ONNX Runtime
// accepts such graphs and some published models are stored so (nodes grouped by layer kind,
// or appended by an editing tool). kiln sorts them on import instead of refusing them.
#pragma once

#include <onnx/onnx_pb.h>

#include "kiln/status.h"

namespace kiln {

// Reorders `graph`'s nodes (not its subgraphs'): stable, so an already sorted graph is left
// as it is, and otherwise each node keeps its place among the nodes ready with it. A name no
// node of this graph produces (a graph input, an initializer, an outer scope's value) counts
// as ready. `changed` says whether anything moved. A cycle, or two nodes producing one name,
// is an error naming the nodes.
Status sort_nodes_topologically(onnx::GraphProto& graph, bool* changed);

}  // namespace kiln

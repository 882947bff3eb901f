// ONNX → kiln IR.
//
// import_onnx_file parses a model file, runs the ONNX checker and shape inference, loads
// initializers (inline or from external data files next to the model) and builds a Graph
// whose nodes are in the canonical (latest-opset) form of each op: older-opset attributes
// that later became inputs (Clip min/max, Split split, Squeeze/Unsqueeze axes, Slice
// starts/ends, Pad pads, ReduceSum axes...) are turned into constant inputs, Upsample
// becomes Resize, and so on, so ops and backends see one form per op.
//
// Every failure returns a Status naming the file and what is wrong; nothing throws.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "ir/graph.h"
#include "kiln/status.h"

namespace kiln {

Result<std::unique_ptr<Graph>> import_onnx_file(const std::string& path);
// `base_dir` is where external data files are looked up.
Result<std::unique_ptr<Graph>> import_onnx_bytes(const std::string& bytes,
                                                 const std::string& base_dir,
                                                 const std::string& what = "model");

// Whether the importer can bring in nodes of this default-domain op type: an op kind of
// ops.def or an op it rewrites into one (Upsample → Resize).
bool onnx_op_importable(std::string_view op_type);

}  // namespace kiln

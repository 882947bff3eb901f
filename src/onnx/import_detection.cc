// EfficientNMS_TRT (TensorRT's plugin node, as YOLO "end2end" exports write it): plugin_version
// 1 or 2, with boxes and scores. Its fused box decoder (a third input, anchors) is refused by
// name; the attributes are checked here so that a bad export fails at import.

#include "onnx/import_context.h"
#include "ops/efficient_nms.h"

namespace kiln {

namespace {

Status normalize_efficient_nms(ImportContext&, NodeImport& node) {
  const std::string version = node.attrs.get_string("plugin_version", "1");
  if (version != "1" && version != "2")
    return unsupported(node.describe() + ": plugin_version '" + version +
                       "' (kiln reads versions 1 and 2)");
  node.attrs.erase("plugin_version");
  if (node.input(2))
    return unsupported(node.describe() +
                       ": a third input (anchors, the plugin's fused box decoder) is not "
                       "supported; decode the boxes in the graph");
  if (!node.input(0) || !node.input(1))
    return invalid_argument(node.describe() + ": needs boxes (input 0) and scores (input 1)");
  if (node.outputs.size() != 4)
    return invalid_argument(node.describe() + ": has " + std::to_string(node.outputs.size()) +
                            " outputs; EfficientNMS_TRT has 4 (num_detections, boxes, scores, "
                            "classes)");
  const Status st = check_efficient_nms_attrs(efficient_nms_attrs(node.attrs));
  if (!st.is_ok()) return invalid_argument(node.describe() + ": " + st.message());
  return Status::ok();
}

}  // namespace

KILN_REGISTER_IMPORT(EfficientNMS_TRT, normalize_efficient_nms);

}  // namespace kiln

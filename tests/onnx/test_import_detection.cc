// EfficientNMS_TRT nodes as detector "end2end" exports write them (domain TRT, plugin_version
// 1 or 2): imported and run, with the same detections as the op run alone; what kiln cannot
// run (the fused box decoder, other versions, other TRT plugins) refused by name.

#include "kiln/engine.h"
#include "onnx/onnx_test_util.h"
#include "ops/op_registry.h"

namespace kiln::test {
namespace {

constexpr int kInt32 = onnx::TensorProto::INT32;

// boxes [2, 6, 4] and scores [2, 6, 3] into an EfficientNMS_TRT node of `domain`.
ModelBuilder nms_model(const std::string& domain, const std::string& version,
                       bool anchors = false) {
  ModelBuilder b(13);
  auto* imp = b.model().add_opset_import();
  imp->set_domain("TRT");
  imp->set_version(1);
  b.input("boxes", kFloat, {"batch", 6, 4});
  b.input("scores", kFloat, {"batch", 6, 3});
  std::vector<std::string> ins = {"boxes", "scores"};
  if (anchors) {
    b.initializer("anchors", {1, 6, 4}, std::vector<float>(24, 1.f));
    ins.push_back("anchors");
  }
  auto& n = b.node("EfficientNMS_TRT", ins, {"num_dets", "det_boxes", "det_scores", "det_classes"},
                   "nms");
  n.set_domain(domain);
  add_attr(n, "plugin_version", version);
  add_attr(n, "background_class", int64_t{-1});
  add_attr(n, "box_coding", int64_t{1});
  add_attr(n, "iou_threshold", 0.45f);
  add_attr(n, "max_output_boxes", int64_t{5});
  add_attr(n, "score_activation", int64_t{0});
  add_attr(n, "score_threshold", 0.25f);
  b.output("num_dets", kInt32, {"batch", 1});
  b.output("det_boxes", kFloat, {"batch", 5, 4});
  b.output("det_scores", kFloat, {"batch", 5});
  b.output("det_classes", kInt32, {"batch", 5});
  return b;
}

TEST(ImportDetection, EfficientNmsOfDomainTrtRunsLikeTheOp) {
  const Tensor boxes =
      Tensor::from_floats({2, 6, 4}, uniform_floats(48, 7, 5.f, 30.f));  // [cx, cy, w, h]
  const Tensor scores = Tensor::from_floats({2, 6, 3}, uniform_floats(36, 8, 0.f, 1.f));
  for (const char* domain : {"TRT", ""})
    for (const char* version : {"1", "2"}) {
      SCOPED_TRACE(std::string("domain '") + domain + "' version " + version);
      auto engine = Engine::from_bytes(nms_model(domain, version).bytes(), {});
      ASSERT_TRUE(engine.is_ok()) << engine.status().to_string();
      auto got = (*engine)->create_context()->run({{"boxes", boxes}, {"scores", scores}});
      ASSERT_TRUE(got.is_ok()) << got.status().to_string();
      // The op alone, with the node's attributes.
      Graph g;
      std::vector<Value*> outs;
      for (int i = 0; i < 4; ++i) outs.push_back(g.add_value("o" + std::to_string(i)));
      Attributes a;
      a.set("background_class", int64_t{-1});
      a.set("box_coding", int64_t{1});
      a.set("iou_threshold", 0.45f);
      a.set("max_output_boxes", int64_t{5});
      a.set("score_threshold", 0.25f);
      Node* n = g.add_node(OpKind::EfficientNMS_TRT, "nms", {g.add_value("b"), g.add_value("s")},
                           outs, a);
      std::vector<Tensor> want;
      ASSERT_TRUE(run_reference(*n, {&boxes, &scores}, want).is_ok());
      const char* names[] = {"num_dets", "det_boxes", "det_scores", "det_classes"};
      for (int i = 0; i < 4; ++i) {
        const Tensor& t = got->at(names[i]);
        ASSERT_EQ(t.shape(), want[i].shape()) << names[i];
        ASSERT_EQ(t.dtype(), want[i].dtype()) << names[i];
        for (int64_t e = 0; e < t.numel(); ++e)
          ASSERT_EQ(t.at_double(e), want[i].at_double(e)) << names[i] << " element " << e;
      }
      EXPECT_GT(got->at("num_dets").at_double(0), 0);  // the case selects something
    }
}

TEST(ImportDetection, WhatKilnCannotRunIsRefusedByName) {
  auto v3 = import_onnx_bytes(nms_model("TRT", "3").bytes(), ".");
  ASSERT_FALSE(v3.is_ok());
  EXPECT_EQ(v3.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(v3.status().message().find("plugin_version '3'"), std::string::npos)
      << v3.status().message();

  auto anchors = import_onnx_bytes(nms_model("TRT", "1", true).bytes(), ".");
  ASSERT_FALSE(anchors.is_ok());
  EXPECT_NE(anchors.status().message().find("anchors"), std::string::npos)
      << anchors.status().message();

  ModelBuilder other = nms_model("TRT", "1");
  other.graph().mutable_node(0)->set_op_type("BatchedNMSDynamic_TRT");
  auto plugin = import_onnx_bytes(other.bytes(), ".");
  ASSERT_FALSE(plugin.is_ok());
  EXPECT_EQ(plugin.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(plugin.status().message().find("'BatchedNMSDynamic_TRT' of domain 'TRT'"),
            std::string::npos)
      << plugin.status().message();

  ModelBuilder bad_iou = nms_model("TRT", "1");
  for (auto& a : *bad_iou.graph().mutable_node(0)->mutable_attribute())
    if (a.name() == "iou_threshold") a.set_f(2.f);
  auto iou = import_onnx_bytes(bad_iou.bytes(), ".");
  ASSERT_FALSE(iou.is_ok());
  EXPECT_NE(iou.status().message().find("iou_threshold"), std::string::npos)
      << iou.status().message();
}

}  // namespace
}  // namespace kiln::test

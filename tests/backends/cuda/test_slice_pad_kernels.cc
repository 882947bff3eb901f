// Slice and Pad CUDA kernels against the reference: positive/negative starts, ends and
// steps, clamped INT64 ends, omitted axes/steps; constant (with and without a value), edge
// and reflect padding, negative pads (crop), the axes input; rank-4 activations offered in
// both layouts, other ranks, int64 data; fp32 and fp16.

#include <climits>
#include <string>
#include <vector>

#include "backends/cuda/structured_test_util.h"

namespace kiln::test {
namespace {

Tensor int64s(const std::vector<int64_t>& v) {
  Tensor t(DataType::kInt64, {int64_t(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
  return t;
}

struct SliceCase {
  Shape x;
  std::vector<int64_t> starts, ends, axes, steps;  // axes/steps empty: omitted
};

TEST(CudaSliceKernel, MatchesReference) {
  const std::vector<SliceCase> cases = {
      {{2, 17, 9, 11}, {0, 3}, {2, 12}, {0, 1}, {}},
      {{2, 17, 9, 11}, {1, 2}, {8, 10}, {2, 3}, {2, 3}},
      {{2, 17, 9, 11}, {-1}, {-INT64_MAX}, {1}, {-2}},
      {{2, 17, 9, 11}, {0, 0, 0, 0}, {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX}, {}, {}},
      {{1, 3, 7, 5}, {-3}, {100}, {-1}, {}},
      {{1, 3, 7, 5}, {5, 1}, {1, 3}, {2, 1}, {-1, 1}},
      {{4, 255}, {0}, {85}, {1}, {}},
      {{4, 255}, {170}, {255}, {-1}, {}},
      {{2, 3, 4, 5, 6}, {1, 0}, {3, 6}, {1, 4}, {1, 4}},
      {{33}, {2}, {30}, {}, {7}},
      {{2, 8, 6, 6}, {4}, {4}, {1}, {}},
  };
  uint32_t seed = 1;
  for (const SliceCase& c : cases) {
    std::vector<Tensor> t = {int64s(c.starts), int64s(c.ends)};
    if (!c.axes.empty() || !c.steps.empty()) {
      std::vector<int64_t> axes = c.axes;
      if (axes.empty())
        for (size_t i = 0; i < c.starts.size(); ++i) axes.push_back(int64_t(i));
      t.push_back(int64s(axes));
    }
    if (!c.steps.empty()) t.push_back(int64s(c.steps));
    std::vector<Shape> shapes = {c.x};
    std::vector<Tensor> constants = {Tensor()};
    for (const Tensor& k : t) {
      shapes.push_back(k.shape());
      constants.push_back(k);
    }
    auto g = one_node(OpKind::Slice, shapes, {}, 1, constants);
    Tensor x = random_tensor(c.x, seed++);
    std::vector<const Tensor*> in = {&x};
    for (const Tensor& k : t) in.push_back(&k);
    SCOPED_TRACE(shape_str(c.x) + " starts " + shape_str(c.starts) + " ends " + shape_str(c.ends));
    expect_all_match(*g->node, in);
  }
}

TEST(CudaSliceKernel, Int64Data) {
  Tensor starts = int64s({1}), ends = int64s({3});
  auto g = one_node(OpKind::Slice, {{4}, {1}, {1}}, {}, 1, {Tensor(), starts, ends});
  g->node->inputs[0]->dtype = DataType::kInt64;
  Tensor x = int64s({7, -8, 90000, 12});
  expect_cuda_matches_reference(*g->node, {&x, &starts, &ends}, Precision::kFp16);
}

struct PadCase {
  Shape x;
  std::vector<int64_t> pads;
  std::string mode;
  bool with_value = false;
  std::vector<int64_t> axes = {};  // empty: omitted
};

TEST(CudaPadKernel, MatchesReference) {
  const std::vector<PadCase> cases = {
      {{1, 3, 7, 5}, {0, 0, 1, 2, 0, 0, 3, 1}, "constant"},
      {{1, 3, 7, 5}, {0, 0, 1, 2, 0, 0, 3, 1}, "constant", true},
      {{2, 17, 9, 11}, {0, 1, 1, 1, 0, 2, 1, 1}, "constant", true},
      {{2, 17, 9, 11}, {0, 0, 2, 3, 0, 0, 3, 2}, "edge"},
      {{2, 17, 9, 11}, {0, 0, 2, 3, 0, 0, 3, 2}, "reflect"},
      {{2, 17, 9, 11}, {0, 0, -1, 2, 0, 0, 1, -3}, "constant"},
      {{2, 17, 9, 11}, {0, 0, -2, 1, 0, 0, 2, -1}, "reflect"},
      {{1, 2, 1, 4}, {0, 0, 1, 4, 0, 0, 1, 4}, "reflect"},
      {{1, 2, 1, 4}, {0, 0, 1, 2, 0, 0, 1, 3}, "edge"},
      {{3, 5}, {1, 2, 2, 1}, "reflect"},
      {{2, 3, 4, 5, 6}, {0, 1, 0, 2, 1, 1, 0, 1, 1, 0}, "edge"},
      {{2, 8, 6, 6}, {1, 1, 1, 1}, "constant", true, {2, 3}},
      {{2, 8, 6, 6}, {2, 2}, "reflect", false, {-1}},
  };
  uint32_t seed = 100;
  for (const PadCase& c : cases) {
    Attributes a;
    a.set("mode", c.mode);
    Tensor pads = int64s(c.pads);
    Tensor value = Tensor::from_floats({}, {0.75f});
    Tensor axes = int64s(c.axes);
    std::vector<Shape> shapes = {c.x, pads.shape()};
    std::vector<Tensor> constants = {Tensor(), pads};
    std::vector<const Tensor*> in;
    if (c.with_value || !c.axes.empty()) {
      shapes.push_back({});
      constants.push_back(value);
    }
    if (!c.axes.empty()) {
      shapes.push_back(axes.shape());
      constants.push_back(axes);
    }
    auto g = one_node(OpKind::Pad, shapes, a, 1, constants);
    Tensor x = random_tensor(c.x, seed++);
    in.push_back(&x);
    for (size_t i = 1; i < constants.size(); ++i) in.push_back(&constants[i]);
    SCOPED_TRACE(c.mode + " " + shape_str(c.x) + " pads " + shape_str(c.pads));
    expect_all_match(*g->node, in);
  }
}

TEST(CudaPadKernel, Unsupported) {
  {  // pads computed at run time
    auto g = one_node(OpKind::Pad, {{1, 3, 4, 4}, {8}}, {});
    g->node->inputs[1]->dtype = DataType::kInt64;
    expect_factory_unsupported(*g->node);
  }
  {  // wrap mode (opset 19)
    Attributes a;
    a.set("mode", std::string("wrap"));
    Tensor pads = int64s({0, 0, 1, 1, 0, 0, 1, 1});
    auto g = one_node(OpKind::Pad, {{1, 3, 4, 4}, {8}}, a, 1, {Tensor(), pads});
    expect_factory_unsupported(*g->node);
  }
}

}  // namespace
}  // namespace kiln::test

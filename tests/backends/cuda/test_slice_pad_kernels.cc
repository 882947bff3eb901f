// Pad CUDA kernel: the cases it leaves to the CPU (pads computed at run time, wrap mode). The
// Slice and Pad kernels' values against the reference (every start, end and step form, every
// pad mode, negative pads, the axes input, int64 data; fp32 and fp16) are in the ops' case
// tables, tests/ops/cases/shape_ops.cc (Slice) and data_movement.cc (Pad), run by
// test_op_cases.cc.

#include <string>

#include "backends/cuda/structured_test_util.h"

namespace kiln::test {
namespace {

TEST(CudaPadKernel, Unsupported) {
  {  // pads computed at run time
    auto g = one_node(OpKind::Pad, {{1, 3, 4, 4}, {8}}, {});
    g->node->inputs[1]->dtype = DataType::kInt64;
    expect_factory_unsupported(*g->node);
  }
  {  // wrap mode (opset 19)
    Attributes a;
    a.set("mode", std::string("wrap"));
    Tensor pads = Tensor::from_int64s({8}, {0, 0, 1, 1, 0, 0, 1, 1});
    auto g = one_node(OpKind::Pad, {{1, 3, 4, 4}, {8}}, a, 1, {Tensor(), pads});
    expect_factory_unsupported(*g->node);
  }
}

}  // namespace
}  // namespace kiln::test

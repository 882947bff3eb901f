// The CUDA view kernels (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout) and Cast
// against the reference, plus the factory's refusals (computed shapes, Dropout's mask).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda_test_util.h"
#include "one_node_graph.h"

namespace kiln::test {
namespace {

const Precision kPrecisions[] = {Precision::kFp32, Precision::kFp16, Precision::kBf16};
const Layout kLayouts[] = {Layout::kPlain, Layout::kNHWC};

Tensor ints(const std::vector<int64_t>& v) {
  return Tensor::from_int64s({static_cast<int64_t>(v.size())}, v);
}

struct ViewCase {
  const char* label;
  OpKind op;
  Shape shape;
  std::vector<int64_t> spec;  // Reshape's shape or the axes; empty: no input 1
  Attributes attrs;
};

std::vector<ViewCase> view_cases() {
  auto axis = [](int64_t a) {
    Attributes at;
    at.set("axis", a);
    return at;
  };
  return {
      {"Reshape 0,-1", OpKind::Reshape, {2, 17, 9, 11}, {0, -1}, {}},
      {"Reshape -1", OpKind::Reshape, {1, 3, 7, 5}, {-1}, {}},
      {"Reshape explicit", OpKind::Reshape, {2, 17, 9, 11}, {17, 2, 99}, {}},
      {"Reshape 0 keeps dims", OpKind::Reshape, {4, 64, 56, 56}, {0, 0, -1}, {}},
      {"Reshape to rank 5", OpKind::Reshape, {2, 6, 4, 5}, {2, 3, 2, 4, 5}, {}},
      {"Flatten default", OpKind::Flatten, {2, 17, 9, 11}, {}, {}},
      {"Flatten axis 0", OpKind::Flatten, {2, 17, 9, 11}, {}, axis(0)},
      {"Flatten axis 2", OpKind::Flatten, {1, 3, 7, 5}, {}, axis(2)},
      {"Flatten axis -1", OpKind::Flatten, {1, 3, 7, 5}, {}, axis(-1)},
      {"Flatten axis 4", OpKind::Flatten, {1, 3, 7, 5}, {}, axis(4)},
      {"Squeeze all", OpKind::Squeeze, {1, 64, 1, 1}, {}, {}},
      {"Squeeze axes", OpKind::Squeeze, {4, 64, 1, 1}, {2, 3}, {}},
      {"Squeeze negative axis", OpKind::Squeeze, {1, 3, 7, 1}, {-1}, {}},
      {"Unsqueeze", OpKind::Unsqueeze, {3, 1000}, {0, 3}, {}},
      {"Unsqueeze negative", OpKind::Unsqueeze, {17, 9, 11}, {-1, 0}, {}},
      {"Identity", OpKind::Identity, {2, 17, 9, 11}, {}, {}},
      {"Dropout", OpKind::Dropout, {2, 17, 9, 11}, {}, {}},
  };
}

TEST(CudaViews, MatchReference) {
  for (const ViewCase& c : view_cases())
    for (Precision p : kPrecisions)
      for (Layout l : kLayouts) {
        SCOPED_TRACE(std::string(c.label) + " " + shape_str(c.shape) + " " + precision_name(p) +
                     " offered " + layout_name(l));
        const Tensor x = random_tensor(c.shape, 9);
        OneNodeGraph g = c.spec.empty()
                             ? OneNodeGraph(c.op, {x}, c.attrs)
                             : OneNodeGraph(c.op, {x, In::make_constant(ints(c.spec))}, c.attrs);
        auto got = run_cuda_node(*g.node, g.inputs(), p, l);
        ASSERT_TRUE(got.is_ok()) << got.status().to_string();
        EXPECT_EQ(got->tactic, "view");
        expect_cuda_matches_reference(*g.node, g.inputs(), p, l);
      }
}

TEST(CudaViews, IntegerData) {
  // Shape arithmetic: int64 tensors go through views too.
  OneNodeGraph g(OpKind::Unsqueeze,
                 {int_tensor(DataType::kInt64, {4}, 3, -100, 100), In::make_constant(ints({0}))});
  expect_cuda_matches_reference(*g.node, g.inputs(), Precision::kFp32, Layout::kPlain);
  OneNodeGraph r(OpKind::Reshape, {int_tensor(DataType::kInt32, {2, 6}, 4, -100, 100),
                                   In::make_constant(ints({3, -1}))});
  expect_cuda_matches_reference(*r.node, r.inputs(), Precision::kFp16, Layout::kPlain);
}

TEST(CudaViews, FactoryRefusals) {
  const Tensor x = random_tensor({2, 3, 4, 5}, 1);
  // Shapes and axes computed at run time.
  EXPECT_EQ(OneNodeGraph(OpKind::Reshape, {x, ints({2, -1})}).create().code(),
            StatusCode::kUnsupported);
  EXPECT_EQ(OneNodeGraph(OpKind::Squeeze, {random_tensor({1, 3}, 1), ints({0})}).create().code(),
            StatusCode::kUnsupported);
  EXPECT_EQ(OneNodeGraph(OpKind::Unsqueeze, {x, ints({0})}).create().code(),
            StatusCode::kUnsupported);
  // Dropout's mask output is not a view.
  EXPECT_EQ(OneNodeGraph(OpKind::Dropout, {x}, {}, 2).create().code(), StatusCode::kUnsupported);
  EXPECT_TRUE(OneNodeGraph(OpKind::Dropout, {x}).create().is_ok());
  // Training-mode Dropout.
  Tensor yes(DataType::kBool, {});
  yes.data<bool>()[0] = true;
  EXPECT_EQ(OneNodeGraph(OpKind::Dropout, {x, In(), In::make_constant(yes)}).create().code(),
            StatusCode::kUnsupported);
}

// --- Cast ---

const DataType kCastTypes[] = {DataType::kFloat32, DataType::kFloat16, DataType::kInt32,
                               DataType::kInt64,   DataType::kBool,    DataType::kUInt8};

// Input of dtype `dt` whose values exercise truncation, saturation, wrapping and zero.
// Float inputs are multiples of 1/4 below 32 (fractions to truncate) and multiples of 16
// below 512 (uint8's saturation), exact in float16 and bfloat16, so an fp16 or bf16 engine's
// rounding of its input cannot move a value across an integer.
Tensor cast_input(DataType dt, const Shape& shape) {
  if (dt == DataType::kFloat32 || dt == DataType::kFloat16) {
    Tensor q = int_tensor(DataType::kInt32, shape, 41, -127, 127);
    std::vector<float> v(q.numel());
    for (int64_t i = 0; i < q.numel(); ++i) {
      const int32_t k = q.data<int32_t>()[i];
      v[i] = i % 2 ? static_cast<float>(16 * (k / 4)) : k / 4.f;
    }
    Tensor f = Tensor::from_floats(shape, v);
    if (dt == DataType::kFloat32) return f;
    Tensor h(DataType::kFloat16, shape);
    for (int64_t i = 0; i < h.numel(); ++i) h.data<Half>()[i] = Half(v[i]);
    return h;
  }
  if (dt == DataType::kBool) return int_tensor(dt, shape, 42, 0, 1);
  if (dt == DataType::kUInt8) return int_tensor(dt, shape, 43, 0, 255);
  return int_tensor(dt, shape, 44, -300, 300);
}

TEST(CudaCast, EveryPairMatchesReference) {
  for (DataType from : kCastTypes)
    for (DataType to : kCastTypes)
      for (const Shape& s : {Shape{2, 17, 9, 11}, Shape{1, 3, 7, 5}, Shape{13}})
        for (Precision p : kPrecisions)
          for (Layout l : kLayouts) {
            SCOPED_TRACE(std::string(dtype_name(from)) + " -> " + dtype_name(to) + " " +
                         shape_str(s) + " " + precision_name(p) + " offered " + layout_name(l));
            Attributes at;
            at.set("to", static_cast<int64_t>(to));
            OneNodeGraph g(OpKind::Cast, {cast_input(from, s)}, at);
            expect_cuda_matches_reference(*g.node, g.inputs(), p, l);
          }
}

TEST(CudaCast, FactoryRefusals) {
  Attributes to_f64;
  to_f64.set("to", static_cast<int64_t>(DataType::kFloat64));
  EXPECT_EQ(OneNodeGraph(OpKind::Cast, {random_tensor({3}, 1)}, to_f64).create().code(),
            StatusCode::kUnsupported);
  Attributes to_i8;
  to_i8.set("to", static_cast<int64_t>(DataType::kInt8));
  EXPECT_EQ(OneNodeGraph(OpKind::Cast, {random_tensor({3}, 1)}, to_i8).create().code(),
            StatusCode::kUnsupported);
  EXPECT_FALSE(OneNodeGraph(OpKind::Cast, {random_tensor({3}, 1)}).create().is_ok());  // no 'to'
}

}  // namespace
}  // namespace kiln::test

#include "ops/elementwise_test_util.h"

namespace kiln::test {
namespace {

// The naive definition: out = data; for each index tuple j, out[indices[j]] (a slice) is
// updates[j], or combined with it.
Tensor naive_scatter(const Tensor& data, const Tensor& indices, const Tensor& updates,
                     const std::string& reduction) {
  std::vector<double> out = values_of(data), up = values_of(updates);
  const Shape& d = data.shape();
  const int64_t k = indices.shape().back();
  int64_t slice = 1;
  for (size_t i = static_cast<size_t>(k); i < d.size(); ++i) slice *= d[i];
  std::vector<int64_t> ix = indices.to_int64s();
  for (int64_t j = 0; j < static_cast<int64_t>(ix.size()) / k; ++j) {
    int64_t off = 0;
    for (int64_t a = 0; a < k; ++a)
      off = off * d[a] + (ix[j * k + a] + (ix[j * k + a] < 0 ? d[a] : 0));
    for (int64_t e = 0; e < slice; ++e) {
      double& o = out[off * slice + e];
      const double u = up[j * slice + e];
      o = reduction == "add"   ? o + u
          : reduction == "mul" ? o * u
          : reduction == "max" ? std::max(o, u)
          : reduction == "min" ? std::min(o, u)
                               : u;
    }
  }
  return make_tensor(data.dtype(), d, out);
}

TEST(ScatterND, ElementsSlicesAndReductions) {
  struct Case {
    Shape data;
    Shape indices_shape;
    std::vector<int64_t> indices;
  };
  const std::vector<Case> cases = {
      {{8}, {4, 1}, {4, 3, 1, 7}},                                // the ONNX element example
      {{4, 4, 4}, {2, 1}, {0, 2}},                                // whole slices
      {{4, 4, 4}, {2, 2}, {0, 1, -1, 3}},                         // rows, a negative index
      {{3, 5}, {2, 3, 2}, {0, 0, 1, 4, 2, 2, 0, 3, 1, 1, 2, 0}},  // batched index tuples
  };
  uint32_t seed = 1;
  for (const char* reduction : {"none", "add", "mul", "max", "min"})
    for (DataType dt : {DataType::kFloat32, DataType::kInt64, DataType::kFloat16})
      for (const Case& c : cases) {
        SCOPED_TRACE(std::string(reduction) + " " + dtype_name(dt) + " " + shape_str(c.data) +
                     " indices " + shape_str(c.indices_shape));
        Tensor data = random_of(dt, c.data, ++seed, -4, 4);
        Tensor idx = Tensor::from_int64s(c.indices_shape, c.indices);
        Shape us(c.indices_shape.begin(), c.indices_shape.end() - 1);
        us.insert(us.end(), c.data.begin() + c.indices_shape.back(), c.data.end());
        Tensor up = random_of(dt, us, ++seed, -4, 4);
        Attributes at;
        at.set("reduction", std::string(reduction));
        // Duplicate index tuples only with a reduction (their order is unspecified otherwise).
        expect_near(run_ok(OpKind::ScatterND, at, {&data, &idx, &up}),
                    naive_scatter(data, idx, up, reduction), 0, rtol_of(dt));
      }
}

TEST(ScatterND, Errors) {
  Tensor data = random_of(DataType::kFloat32, {4, 3}, 1, -1, 1);
  Tensor idx = Tensor::from_int64s({1, 1}, {4});
  Tensor up = random_of(DataType::kFloat32, {1, 3}, 2, -1, 1);
  expect_error(OpKind::ScatterND, {}, {&data, &idx, &up}, "indices[0] has 4 for dim 0 of size 4");
  Tensor wrong = random_of(DataType::kFloat32, {1, 2}, 3, -1, 1);
  Tensor ok_idx = Tensor::from_int64s({1, 1}, {1});
  expect_error(OpKind::ScatterND, {}, {&data, &ok_idx, &wrong}, "updates) has shape [1,2]");
  Tensor deep = Tensor::from_int64s({1, 3}, {0, 0, 0});
  expect_error(OpKind::ScatterND, {}, {&data, &deep, &up}, "indices address 3 dims");
  Attributes bad;
  bad.set("reduction", std::string("sum"));
  expect_error(OpKind::ScatterND, bad, {&data, &ok_idx, &up}, "'reduction' is 'sum'");
  Tensor i32 = make_tensor(DataType::kInt32, {1, 1}, {1});
  expect_error(OpKind::ScatterND, {}, {&data, &i32, &up}, "expected int64, got int32");
}

}  // namespace
}  // namespace kiln::test

// Helpers for the elementwise op tests: tensors of any numeric dtype built from doubles,
// random tensors per dtype, and a naive broadcasting evaluator written independently of
// op_util's stride helpers (it maps each output index to input indices by coordinates).
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/half.h"
#include "ops/op_test_util.h"

namespace kiln::test {

// A tensor of `dt` holding `values` (static_cast per element; floats round to nearest).
inline Tensor make_tensor(DataType dt, const Shape& shape, const std::vector<double>& values) {
  Tensor t(dt, shape);
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = values[i];
    switch (dt) {
      case DataType::kFloat32: t.data<float>()[i] = static_cast<float>(v); break;
      case DataType::kFloat64: t.data<double>()[i] = v; break;
      case DataType::kFloat16:
        t.data<uint16_t>()[i] = float_to_half_bits(static_cast<float>(v));
        break;
      case DataType::kBFloat16:
        t.data<uint16_t>()[i] = float_to_bf16_bits(static_cast<float>(v));
        break;
      case DataType::kInt8: t.data<int8_t>()[i] = static_cast<int8_t>(v); break;
      case DataType::kUInt8: t.data<uint8_t>()[i] = static_cast<uint8_t>(v); break;
      case DataType::kInt16: t.data<int16_t>()[i] = static_cast<int16_t>(v); break;
      case DataType::kUInt16: t.data<uint16_t>()[i] = static_cast<uint16_t>(v); break;
      case DataType::kInt32: t.data<int32_t>()[i] = static_cast<int32_t>(v); break;
      case DataType::kUInt32: t.data<uint32_t>()[i] = static_cast<uint32_t>(v); break;
      case DataType::kInt64: t.data<int64_t>()[i] = static_cast<int64_t>(v); break;
      case DataType::kUInt64: t.data<uint64_t>()[i] = static_cast<uint64_t>(v); break;
      case DataType::kBool: t.data<uint8_t>()[i] = v != 0 ? 1 : 0; break;
      default: ADD_FAILURE() << "make_tensor: unsupported dtype " << dtype_name(dt);
    }
  }
  return t;
}

inline std::vector<double> values_of(const Tensor& t) {
  std::vector<double> v(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.at_double(i);
  return v;
}

// Random values in [lo, hi): integers (rounded down) for integer dtypes, 0/1 for bool.
// Floats are stored in `dt`, so values_of() gives exactly what the kernel reads.
inline Tensor random_of(DataType dt, const Shape& shape, uint32_t seed, double lo = -4,
                        double hi = 4) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(shape_numel(shape));
  for (double& x : v) {
    x = dist(gen);
    if (dt == DataType::kBool)
      x = x > (lo + hi) / 2;
    else if (!dtype_is_float(dt))
      x = std::floor(x);
  }
  return make_tensor(dt, shape, v);
}

// Tolerance for results rounded to `dt` (relative; integers and bool are exact).
inline double rtol_of(DataType dt) {
  switch (dt) {
    case DataType::kFloat32: return 2e-6;
    case DataType::kFloat64: return 1e-12;
    case DataType::kFloat16: return 2e-3;
    case DataType::kBFloat16: return 1.6e-2;
    default: return 0;
  }
}

// Expected result of a broadcasting n-ary elementwise op: out[i] = f(inputs at i), f on
// doubles, result stored as `out_dt`.
inline Tensor naive_broadcast(DataType out_dt, const std::vector<const Tensor*>& ins,
                              const std::function<double(const std::vector<double>&)>& f) {
  size_t rank = 0;
  for (const Tensor* t : ins) rank = std::max(rank, t->shape().size());
  Shape out(rank, 1);
  for (const Tensor* t : ins)
    for (size_t d = 0; d < t->shape().size(); ++d) {
      int64_t& o = out[rank - t->shape().size() + d];
      if (t->shape()[d] != 1) o = t->shape()[d];
    }
  std::vector<double> result(shape_numel(out));
  std::vector<double> args(ins.size());
  for (int64_t i = 0; i < shape_numel(out); ++i) {
    // Coordinates of output element i.
    std::vector<int64_t> coord(rank);
    int64_t rem = i;
    for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      coord[d] = rem % out[d];
      rem /= out[d];
    }
    for (size_t k = 0; k < ins.size(); ++k) {
      const Shape& s = ins[k]->shape();
      int64_t flat = 0;
      for (size_t d = 0; d < s.size(); ++d)
        flat = flat * s[d] + (s[d] == 1 ? 0 : coord[rank - s.size() + d]);
      args[k] = ins[k]->at_double(flat);
    }
    result[i] = f(args);
  }
  return make_tensor(out_dt, out, result);
}

// Runs `op`, expecting success, and returns output `index`.
inline Tensor run_ok(OpKind op, const Attributes& attrs, const std::vector<const Tensor*>& ins,
                     size_t num_outputs = 1, size_t index = 0) {
  auto out = run_op(op, attrs, ins, num_outputs);
  EXPECT_TRUE(out.is_ok()) << out.status().to_string();
  if (!out.is_ok()) return {};
  return (*out)[index];
}

// Runs `op`, expecting an error whose message contains `needle`.
inline void expect_error(OpKind op, const Attributes& attrs, const std::vector<const Tensor*>& ins,
                         const std::string& needle, size_t num_outputs = 1) {
  auto out = run_op(op, attrs, ins, num_outputs);
  ASSERT_FALSE(out.is_ok()) << "expected an error containing '" << needle << "'";
  EXPECT_NE(out.status().message().find(needle), std::string::npos) << out.status().to_string();
}

inline const DataType kTestFloatTypes[] = {DataType::kFloat32, DataType::kFloat64,
                                           DataType::kFloat16, DataType::kBFloat16};

// Checks a unary float op against `f` on random data for every float dtype and a few
// shapes (scalar, vector, rank 4, empty), and that an int32 input is rejected (where
// `floats_only`: Neg and Abs take signed integers too).
inline void check_unary_float(OpKind op, const Attributes& attrs,
                              double (*f)(double, const Attributes&), double lo = -4, double hi = 4,
                              bool floats_only = true) {
  uint32_t seed = 1;
  for (DataType dt : kTestFloatTypes)
    for (const Shape& shape : {Shape{}, Shape{7}, Shape{2, 3, 4, 5}, Shape{0, 3}}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + shape_str(shape));
      Tensor x = random_of(dt, shape, ++seed, lo, hi);
      Tensor want =
          naive_broadcast(dt, {&x}, [&](const std::vector<double>& a) { return f(a[0], attrs); });
      expect_near(run_ok(op, attrs, {&x}), want, rtol_of(dt), rtol_of(dt));
    }
  Tensor xi = random_of(DataType::kInt32, {3}, 1);
  if (floats_only) expect_error(op, attrs, {&xi}, "got int32");
  expect_error(op, attrs, {&xi, &xi}, "inputs");
}

// Shape pairs covering numpy broadcasting: equal shapes, scalar, row, column,
// rank mismatch in both directions, both sides broadcasting, and empty tensors.
inline const std::vector<std::pair<Shape, Shape>> kBroadcastCases = {
    {{2, 3, 4}, {2, 3, 4}}, {{2, 3, 4}, {}},          {{}, {3, 4}},
    {{3, 4}, {4}},          {{3, 4}, {3, 1}},         {{3, 1}, {1, 4}},
    {{2, 1, 4}, {3, 1}},    {{5}, {2, 3, 5}},         {{}, {}},
    {{0, 3}, {3}},          {{2, 3, 1, 5}, {1, 4, 1}}};

// Checks a binary broadcasting op against `f` (on doubles) for each dtype in `dtypes` and
// every shape pair of kBroadcastCases; inputs are random in [lo, hi) (b: [b_lo, b_hi)).
// The output dtype is `out_dt`, or the input dtype when kUndefined.
inline void check_binary(OpKind op, const std::vector<DataType>& dtypes,
                         const std::function<double(double, double)>& f, double lo, double hi,
                         double b_lo, double b_hi, DataType out_dt = DataType::kUndefined) {
  uint32_t seed = 100;
  for (DataType dt : dtypes)
    for (const auto& [sa, sb] : kBroadcastCases) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + shape_str(sa) + " op " + shape_str(sb));
      Tensor a = random_of(dt, sa, ++seed, lo, hi);
      Tensor b = random_of(dt, sb, ++seed, b_lo, b_hi);
      const DataType odt = out_dt == DataType::kUndefined ? dt : out_dt;
      Tensor want = naive_broadcast(odt, {&a, &b},
                                    [&](const std::vector<double>& v) { return f(v[0], v[1]); });
      expect_near(run_ok(op, {}, {&a, &b}), want, rtol_of(odt), rtol_of(odt));
    }
}

// Errors every broadcasting binary op reports.
inline void check_binary_errors(OpKind op) {
  Tensor a = random_of(DataType::kFloat32, {2, 3}, 1);
  Tensor b = random_of(DataType::kFloat32, {4}, 2);
  expect_error(op, {}, {&a, &b}, "do not broadcast");
  Tensor c = random_of(DataType::kFloat32, {3, 2}, 3);
  expect_error(op, {}, {&a, &c}, "do not broadcast");
  expect_error(op, {}, {&a}, "inputs");
}

}  // namespace kiln::test

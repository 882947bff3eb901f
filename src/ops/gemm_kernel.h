// The matrix-product loop shared by Gemm and MatMul's reference kernels.
//
// Accumulation type: float for float32/float16/bfloat16, double for float64, 64-bit for
// integers. Loop order i-k-j keeps the inner loop contiguous over B's and C's rows, which
// matters because the reference kernels run whole models in tests.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/half.h"

namespace kiln {

template <class T>
using GemmAcc = std::conditional_t<
    std::is_same_v<T, double>, double,
    std::conditional_t<std::is_integral_v<T>,
                       std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>, float>>;

// B as a contiguous K×N matrix of Acc: `b` itself when it already is one, else a copy in
// `buf` (converting the element type and undoing the transpose: b is N×K when trans_b).
template <class Acc, class T>
const Acc* pack_gemm_b(const T* b, bool trans_b, int64_t k, int64_t n, std::vector<Acc>& buf) {
  if constexpr (std::is_same_v<T, Acc>)
    if (!trans_b) return b;
  buf.resize(static_cast<size_t>(k * n));
  for (int64_t kk = 0; kk < k; ++kk)
    for (int64_t j = 0; j < n; ++j)
      buf[kk * n + j] = static_cast<Acc>(trans_b ? b[j * k + kk] : b[kk * n + j]);
  return buf.data();
}

// c[i,j] = sum_k A(i,k) * b[k,j] for an M×N c, with A(i,k) at a[i*a_row + k*a_col] (so a
// transposed A is just other strides; A is read once per (i,k), outside the inner loop).
template <class Acc, class T>
void gemm_ikj(const T* a, int64_t a_row, int64_t a_col, const Acc* b, Acc* c, int64_t m, int64_t n,
              int64_t k) {
  for (int64_t i = 0; i < m; ++i) {
    Acc* c_row = c + i * n;
    std::fill(c_row, c_row + n, Acc(0));
    for (int64_t kk = 0; kk < k; ++kk) {
      const Acc av = static_cast<Acc>(a[i * a_row + kk * a_col]);
      const Acc* b_row = b + kk * n;
      for (int64_t j = 0; j < n; ++j) c_row[j] += av * b_row[j];
    }
  }
}

}  // namespace kiln

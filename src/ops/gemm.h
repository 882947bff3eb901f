// Gemm's attributes, with ONNX's defaults, in one place for the reference kernel, the passes
// and every backend: Y = alpha · op(A) · op(B) + beta · C, op transposing where asked.
#pragma once

#include "ir/graph.h"

namespace kiln {

struct GemmAttrs {
  bool trans_a = false;
  bool trans_b = false;
  float alpha = 1.f;
  float beta = 1.f;
};
inline GemmAttrs gemm_attrs(const Node& n) {
  GemmAttrs a;
  a.trans_a = n.attrs.get_int("transA", 0) != 0;
  a.trans_b = n.attrs.get_int("transB", 0) != 0;
  a.alpha = n.attrs.get_float("alpha", a.alpha);
  a.beta = n.attrs.get_float("beta", a.beta);
  return a;
}

}  // namespace kiln

#include "ops/cases/op_cases.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "ops/op_registry.h"

namespace kiln::test {

namespace {

std::vector<CaseTable>& tables() {
  static std::vector<CaseTable> t;
  return t;
}

}  // namespace

bool register_op_cases(CaseTable table) {
  tables().push_back(table);
  return true;
}

const std::vector<OpCase>& op_cases() {
  static const std::vector<OpCase> all = [] {
    std::vector<OpCase> r;
    for (CaseTable t : tables())
      for (OpCase& c : t()) r.push_back(std::move(c));
    return r;
  }();
  return all;
}

std::string case_label(const OpCase& c) { return std::string(op_name(c.op)) + "." + c.name; }

std::string case_test_name(size_t index) {
  std::string s = case_label(op_cases().at(index));
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

CaseGraph build_case(const OpCase& c) {
  CaseGraph cg;
  cg.graph = std::make_unique<Graph>();
  Graph& g = *cg.graph;
  std::vector<Value*> ins;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const CaseInput& in = c.inputs[i];
    std::string name = "in";
    name += std::to_string(i);
    if (!in.t.defined()) {
      ins.push_back(nullptr);
      cg.inputs.push_back(nullptr);
      continue;
    }
    if (in.constant) {
      ins.push_back(g.add_constant(name, in.t));
    } else {
      Value* v = g.add_value(name);
      v->dtype = in.t.dtype();
      v->has_shape = true;
      for (int64_t d : in.t.shape()) v->dims.push_back(Dim{d, ""});
      ins.push_back(v);
    }
    cg.inputs.push_back(&in.t);
  }
  std::vector<Value*> outs;
  for (size_t i = 0; i < c.outputs; ++i) {
    std::string name = "out";
    name += std::to_string(i);
    outs.push_back(g.add_value(name));
  }
  cg.node = g.add_node(c.op, "case_node", ins, outs, c.attrs);
  cg.node->epilogue = c.epilogue;
  // The outputs typed as an imported graph's would be (backends claim nodes by their dtypes),
  // by the op's shape rule; a case the rule rejects keeps them untyped, and its harness run
  // reports the rule's error.
  if (const OpDef* def = OpRegistry::find(c.op)) {
    std::vector<TensorDesc> in(c.inputs.size()), out(c.outputs);
    for (size_t i = 0; i < c.inputs.size(); ++i)
      if (c.inputs[i].t.defined())
        in[i] = TensorDesc{c.inputs[i].t.dtype(), c.inputs[i].t.shape(), &c.inputs[i].t};
    if (infer_node(*def, *cg.node, in, out).is_ok())
      for (size_t i = 0; i < outs.size(); ++i) {
        if (!out[i].present()) continue;
        outs[i]->dtype = out[i].dtype;
        outs[i]->has_shape = true;
        for (int64_t d : out[i].shape) outs[i]->dims.push_back(Dim{d, ""});
      }
  }
  return cg;
}

OpCase int8_layer(OpCase c, int axis, float input_scale) {
  c.name = "int8_" + c.name;
  Tensor& w = c.inputs[1].t;
  const Shape& s = w.shape();
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= s[d];
  for (size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
  float* p = w.data<float>();
  for (int64_t ch = 0; ch < s[axis]; ++ch) {
    auto at = [&](int64_t o, int64_t i) -> float& { return p[(o * s[axis] + ch) * inner + i]; };
    float amax = 0.f;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) amax = std::max(amax, std::fabs(at(o, i)));
    const float sw = amax / 127.f;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) at(o, i) = std::nearbyint(at(o, i) / sw) * sw;
    c.epilogue.weight_scales.push_back(sw);
  }
  c.epilogue.input_scale = input_scale;
  return c;
}

}  // namespace kiln::test

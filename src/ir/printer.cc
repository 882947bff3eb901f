#include <sstream>

#include "ir/graph.h"

namespace kiln {

namespace {
std::string value_str(const Value* v) {
  if (!v) return "<none>";
  std::string s = v->name + ":" + dtype_name(v->dtype) + v->shape_string();
  if (v->is_constant()) s += "(const)";
  return s;
}

std::string attr_str(const AttrValue& a) {
  std::ostringstream os;
  if (auto* i = std::get_if<int64_t>(&a))
    os << *i;
  else if (auto* f = std::get_if<float>(&a))
    os << *f;
  else if (auto* s = std::get_if<std::string>(&a))
    os << '"' << *s << '"';
  else if (auto* is = std::get_if<std::vector<int64_t>>(&a)) {
    os << "[";
    for (size_t k = 0; k < is->size(); ++k) os << (k ? "," : "") << (*is)[k];
    os << "]";
  } else if (auto* fs = std::get_if<std::vector<float>>(&a)) {
    os << "[";
    for (size_t k = 0; k < fs->size(); ++k) os << (k ? "," : "") << (*fs)[k];
    os << "]";
  } else if (std::get_if<std::vector<std::string>>(&a)) {
    os << "[strings]";
  } else if (auto* t = std::get_if<Tensor>(&a)) {
    os << "tensor " << dtype_name(t->dtype()) << shape_str(t->shape());
  }
  return os.str();
}
}  // namespace

std::string node_signature(const Node& n) {
  std::ostringstream os;
  os << op_name(n.op);
  for (const auto& [k, a] : n.attrs.all()) os << " " << k << "=" << attr_str(a);
  if (!n.epilogue.empty()) os << " epilogue=[" << n.epilogue.describe() << "]";
  for (const Value* v : n.inputs) os << " " << (v && v->is_constant() ? "const" : "var");
  return os.str();
}

std::string print_graph(const Graph& g) {
  std::ostringstream os;
  os << "graph '" << g.name << "' opset " << g.opset << "\n";
  for (const Value* v : g.inputs()) os << "  input  " << value_str(v) << "\n";
  for (const auto& n : g.nodes()) {
    os << "  " << n->name << " = " << op_name(n->op) << "(";
    for (size_t i = 0; i < n->inputs.size(); ++i) os << (i ? ", " : "") << value_str(n->inputs[i]);
    os << ") -> (";
    for (size_t i = 0; i < n->outputs.size(); ++i)
      os << (i ? ", " : "") << value_str(n->outputs[i]);
    os << ")";
    for (const auto& [k, a] : n->attrs.all()) os << " " << k << "=" << attr_str(a);
    if (!n->epilogue.empty()) os << " epilogue=[" << n->epilogue.describe() << "]";
    os << "\n";
  }
  for (const Value* v : g.outputs()) os << "  output " << value_str(v) << "\n";
  return os.str();
}

}  // namespace kiln

#include "ir/epilogue.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace kiln {

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::kNone: return "None";
    case Activation::kRelu: return "Relu";
    case Activation::kClip: return "Clip";
    case Activation::kLeakyRelu: return "LeakyRelu";
    case Activation::kSigmoid: return "Sigmoid";
    case Activation::kTanh: return "Tanh";
    case Activation::kSilu: return "SiLU";
    case Activation::kHardSigmoid: return "HardSigmoid";
    case Activation::kHardSwish: return "HardSwish";
    case Activation::kGelu: return "Gelu";
  }
  return "?";
}

bool activation_from_name(const std::string& name, Activation* a) {
  for (Activation k :
       {Activation::kNone, Activation::kRelu, Activation::kClip, Activation::kLeakyRelu,
        Activation::kSigmoid, Activation::kTanh, Activation::kSilu, Activation::kHardSigmoid,
        Activation::kHardSwish, Activation::kGelu})
    if (name == activation_name(k)) {
      *a = k;
      return true;
    }
  return false;
}

float apply_activation(Activation a, float alpha, float beta, float x) {
  switch (a) {
    case Activation::kNone: return x;
    case Activation::kRelu: return x > 0.f ? x : 0.f;
    case Activation::kClip: return std::min(std::max(x, alpha), beta);
    case Activation::kLeakyRelu: return x < 0.f ? alpha * x : x;
    case Activation::kSigmoid: return 1.f / (1.f + std::exp(-x));
    case Activation::kTanh: return std::tanh(x);
    case Activation::kSilu: return x / (1.f + std::exp(-x));
    case Activation::kHardSigmoid: return std::max(0.f, std::min(1.f, alpha * x + beta));
    case Activation::kHardSwish: return x * std::max(0.f, std::min(1.f, x / 6.f + 0.5f));
    case Activation::kGelu: return 0.5f * x * (1.f + std::erf(x * 0.70710678118654752f));
  }
  return x;
}

std::vector<int> Epilogue::inputs() const {
  std::vector<int> r;
  if (residual_input >= 0) r.push_back(residual_input);
  if (bias_input >= 0) r.push_back(bias_input);
  if (affine_input >= 0) {
    r.push_back(affine_input);
    r.push_back(affine_input + 1);
  }
  std::sort(r.begin(), r.end());
  return r;
}

std::string Epilogue::describe() const {
  std::ostringstream os;
  const char* sep = "";
  if (int8()) {
    // The int8 operands first: they apply before the op.
    os << (input_uint8 ? "int8 in(uint8, scale " : "int8 in(scale ") << input_scale;
    if (input_zero_point != 0) os << ", zero point " << input_zero_point;
    os << "), weights(" << weight_scales.size() << " channel scales) →";
    sep = " ";
  }
  if (affine_input >= 0) {
    os << "× scale[c] + shift[c]";
    sep = " ";
  }
  if (bias_input >= 0) {
    os << sep << "+ bias[n]";
    sep = " ";
  }
  if (residual_input >= 0) os << sep << "+ residual";
  if (act != Activation::kNone) {
    if (residual_input >= 0 || affine_input >= 0 || bias_input >= 0)
      os << " → ";
    else if (int8())
      os << " ";
    os << activation_name(act);
    if (act == Activation::kClip) os << "(" << alpha << ", " << beta << ")";
    if (act == Activation::kLeakyRelu) os << "(" << alpha << ")";
    if (act == Activation::kHardSigmoid) os << "(" << alpha << ", " << beta << ")";
  }
  return os.str();
}

}  // namespace kiln

// Einsum (opset 12): the `equation` attribute ("bhid,bhjd->bhij") names each input's axes
// with letters. Output axes come after "->", or, without it, every letter used exactly once in
// alphabetical (ASCII) order. Letters left out of the output are summed over. A letter
// repeated within one term takes that term's diagonal. "..." stands for the same run of
// unnamed axes in every term: they broadcast numpy-style (right-aligned, size 1 stretches),
// lead the output in the implicit form, and are summed over when an explicit output leaves
// them out (as numpy does). Spaces are ignored. A named axis must have one size
// everywhere. All inputs share one numeric dtype; sums run in double (floats) or 64-bit
// integers. MaxViT's attention writes its matmuls this way.
//
// The reference kernel walks the output elements and, for each, every combination of the
// summed letters: one multiply-add per input per combination, as the definition reads.

#include <algorithm>
#include <array>
#include <map>
#include <string>
#include <vector>

#include "ops/elementwise.h"

namespace kiln {

namespace {

// A term's axes as label ids: letters 0..51 ('A'..'Z' then 'a'..'z', the ASCII order), the
// ellipsis as kEllipsis (expanded once its rank is known).
constexpr int kLetters = 52, kEllipsis = -1;

int letter_id(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
  return -2;
}

Result<std::vector<int>> parse_term(const std::string& t, const std::string& eq) {
  std::vector<int> labels;
  bool ellipsis = false;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '.') {
      if (t.compare(i, 3, "...") != 0 || ellipsis)
        return invalid_argument("equation '" + eq + "': '.' outside one '...' per term");
      ellipsis = true;
      labels.push_back(kEllipsis);
      i += 2;
      continue;
    }
    const int id = letter_id(t[i]);
    if (id < 0)
      return invalid_argument("equation '" + eq + "': character '" + std::string(1, t[i]) +
                              "' is not a letter, ',', '->' or '...'");
    labels.push_back(id);
  }
  return labels;
}

// The equation against the input shapes: every axis's label, the label sizes, the output.
struct EinsumPlan {
  int n_labels = 0;                    // letters, then the ellipsis dims
  std::vector<int64_t> size;           // per label
  std::vector<std::vector<int>> axes;  // per input: its axes' labels
  std::vector<int> out;                // the output's labels
  std::vector<int> summed;             // labels not in the output
};

Result<EinsumPlan> plan_einsum(const std::string& equation, const std::vector<Shape>& shapes) {
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq += c;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::vector<int>> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    KILN_ASSIGN_OR_RETURN(std::vector<int> t,
                          parse_term(lhs.substr(start, comma - start), equation));
    terms.push_back(std::move(t));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != shapes.size())
    return invalid_argument("equation '" + equation + "' has " + std::to_string(terms.size()) +
                            " input terms for " + std::to_string(shapes.size()) + " inputs");
  // The ellipsis rank: what the inputs leave beside their letters, broadcast.
  std::vector<int> ell_rank(terms.size(), 0);
  int ell = 0;
  for (size_t k = 0; k < terms.size(); ++k) {
    const auto& t = terms[k];
    const int letters =
        static_cast<int>(std::count_if(t.begin(), t.end(), [](int l) { return l >= 0; }));
    const bool has_ell = std::find(t.begin(), t.end(), kEllipsis) != t.end();
    const int rank = static_cast<int>(shapes[k].size());
    if (has_ell ? rank < letters : rank != letters)
      return invalid_argument("input " + std::to_string(k) + " of shape " + shape_str(shapes[k]) +
                              " does not match term " + std::to_string(k) + " of '" + equation +
                              "' (" + std::to_string(letters) + " letters" +
                              (has_ell ? " and '...')" : ")"));
    ell_rank[k] = has_ell ? rank - letters : 0;
    ell = std::max(ell, ell_rank[k]);
  }
  EinsumPlan p;
  p.n_labels = kLetters + ell;
  p.size.assign(p.n_labels, -1);
  std::vector<int> count(p.n_labels, 0);  // uses across the inputs
  for (size_t k = 0; k < terms.size(); ++k) {
    std::vector<int> axes;
    for (int l : terms[k]) {
      if (l != kEllipsis) {
        axes.push_back(l);
        continue;
      }
      for (int e = ell - ell_rank[k]; e < ell; ++e) axes.push_back(kLetters + e);
    }
    for (size_t a = 0; a < axes.size(); ++a) {
      const int l = axes[a];
      const int64_t d = shapes[k][a];
      ++count[l];
      int64_t& s = p.size[l];
      if (s < 0 || s == d) {
        s = d;
      } else if (l >= kLetters && (s == 1 || d == 1)) {
        s = std::max(s, d);  // broadcast within the ellipsis
      } else {
        return invalid_argument("equation '" + equation + "': axis " + std::to_string(a) +
                                " of input " + std::to_string(k) + " has size " +
                                std::to_string(d) + ", elsewhere the same axis has " +
                                std::to_string(s));
      }
    }
    p.axes.push_back(std::move(axes));
  }
  if (arrow != std::string::npos) {
    KILN_ASSIGN_OR_RETURN(std::vector<int> out, parse_term(eq.substr(arrow + 2), equation));
    std::vector<bool> seen(p.n_labels, false);
    for (int l : out) {
      if (l == kEllipsis) {
        for (int e = 0; e < ell; ++e) p.out.push_back(kLetters + e);
        continue;
      }
      if (count[l] == 0)
        return invalid_argument("equation '" + equation + "': output letter '" +
                                std::string(1, l < 26 ? char('A' + l) : char('a' + l - 26)) +
                                "' is in no input");
      if (seen[l]) return invalid_argument("equation '" + equation + "': output letter repeats");
      seen[l] = true;
      p.out.push_back(l);
    }
  } else {
    for (int e = 0; e < ell; ++e) p.out.push_back(kLetters + e);
    for (int l = 0; l < kLetters; ++l)
      if (count[l] == 1) p.out.push_back(l);
  }
  for (int l = 0; l < p.n_labels; ++l)
    if (count[l] > 0 && std::find(p.out.begin(), p.out.end(), l) == p.out.end())
      p.summed.push_back(l);
  return p;
}

std::vector<Shape> shapes_of(const std::vector<TensorDesc>& in) {
  std::vector<Shape> s;
  for (const TensorDesc& d : in) s.push_back(d.shape);
  return s;
}

Status infer_einsum(const Node& node, const std::vector<TensorDesc>& in,
                    std::vector<TensorDesc>& out) {
  if (in.empty()) return invalid_argument("Einsum needs at least one input");
  KILN_RETURN_IF_ERROR(expect_dtype(in, 0, kArithmeticTypes));
  for (size_t i = 1; i < in.size(); ++i) KILN_RETURN_IF_ERROR(expect_same_dtype(in, i, 0));
  if (!node.attrs.has("equation")) return invalid_argument("attribute 'equation' is missing");
  KILN_ASSIGN_OR_RETURN(EinsumPlan p,
                        plan_einsum(node.attrs.get_string("equation"), shapes_of(in)));
  Shape shape;
  for (int l : p.out) shape.push_back(p.size[l]);
  out[0] = {in[0].dtype, shape};
  return Status::ok();
}

// Row-major strides of `shape`, per axis.
std::vector<int64_t> strides_of(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

Status run_einsum(const Node& node, const std::vector<const Tensor*>& in,
                  const std::vector<Tensor*>& out) {
  std::vector<Shape> shapes;
  for (const Tensor* t : in) shapes.push_back(t->shape());
  KILN_ASSIGN_OR_RETURN(EinsumPlan p, plan_einsum(node.attrs.get_string("equation"), shapes));
  // Each input's step per label: the sum of its strides over the axes with that label (a
  // diagonal when repeated), 0 where it lacks the label or broadcasts a size-1 axis.
  const size_t n = in.size();
  std::vector<std::vector<int64_t>> step(n, std::vector<int64_t>(p.n_labels, 0));
  for (size_t k = 0; k < n; ++k) {
    const std::vector<int64_t> st = strides_of(shapes[k]);
    for (size_t a = 0; a < p.axes[k].size(); ++a)
      if (shapes[k][a] != 1 || p.size[p.axes[k][a]] == 1) step[k][p.axes[k][a]] += st[a];
  }
  return dispatch_numeric(in[0]->dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      return unsupported("Einsum of bool");
    } else {
      using Acc = std::conditional_t<kIsFloatType<T>, double,
                                     std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;
      std::vector<const T*> x(n);
      for (size_t k = 0; k < n; ++k) x[k] = in[k]->data<T>();
      T* y = out[0]->data<T>();
      int64_t inner = 1;
      for (int l : p.summed) inner *= p.size[l];
      const int64_t n_out = out[0]->numel();
      std::vector<int64_t> oi(p.out.size(), 0), si(p.summed.size(), 0);
      std::vector<int64_t> base(n, 0), off(n);
      // The next index over `labels` (the last fastest), moving every input's offset with it.
      auto advance = [&](std::vector<int64_t>& idx, const std::vector<int>& labels,
                         std::vector<int64_t>& offsets) {
        for (int64_t j = static_cast<int64_t>(idx.size()) - 1; j >= 0; --j) {
          const int l = labels[j];
          for (size_t k = 0; k < n; ++k) offsets[k] += step[k][l];
          if (++idx[j] < p.size[l]) return;
          for (size_t k = 0; k < n; ++k) offsets[k] -= step[k][l] * p.size[l];
          idx[j] = 0;
        }
      };
      for (int64_t o = 0; o < n_out; ++o) {
        Acc acc = 0;
        off = base;
        std::fill(si.begin(), si.end(), 0);
        for (int64_t r = 0; r < inner; ++r) {
          Acc prod = 1;
          for (size_t k = 0; k < n; ++k)
            prod *= static_cast<Acc>(static_cast<ComputeT<T>>(x[k][off[k]]));
          acc += prod;
          advance(si, p.summed, off);
        }
        y[o] = T(static_cast<ComputeT<T>>(acc));
        advance(oi, p.out, base);
      }
      return Status::ok();
    }
  });
}

}  // namespace

KILN_REGISTER_OP(Einsum, infer_einsum, run_einsum);

}  // namespace kiln

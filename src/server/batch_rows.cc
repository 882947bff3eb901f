#include "server/batch_rows.h"

#include <cstring>

namespace kiln::server {

Result<int64_t> rows_of(const Outputs& inputs) {
  if (inputs.empty()) return invalid_argument("a request with no inputs");
  int64_t rows = -1;
  std::string first;
  for (const auto& [name, t] : inputs) {
    if (t.rank() == 0)
      return invalid_argument("input '" + name + "' has no batch dimension (rank 0)");
    if (rows < 0) {
      rows = t.dim(0);
      first = name;
    } else if (t.dim(0) != rows) {
      return invalid_argument("input '" + name + "' has " + std::to_string(t.dim(0)) +
                              " rows where '" + first + "' has " + std::to_string(rows));
    }
  }
  return rows;
}

std::string batch_key(const Outputs& inputs) {
  std::string key;
  for (const auto& [name, t] : inputs) {
    key += name + ":" + dtype_name(t.dtype());
    for (int64_t i = 1; i < t.rank(); ++i) key += "," + std::to_string(t.dim(i));
    key += ";";
  }
  return key;
}

Outputs join_rows(const std::vector<const Outputs*>& parts, int64_t padded_rows) {
  Outputs batch;
  for (const auto& [name, like] : *parts.front()) {
    Shape shape = like.shape();
    shape[0] = padded_rows;
    Tensor t(like.dtype(), shape);
    auto* out = static_cast<char*>(t.raw());
    size_t at = 0;
    for (const Outputs* p : parts) {
      const Tensor& part = p->at(name);
      std::memcpy(out + at, part.raw(), part.nbytes());
      at += part.nbytes();
    }
    std::memset(out + at, 0, t.nbytes() - at);
    batch.emplace(name, std::move(t));
  }
  return batch;
}

Result<Outputs> rows_of_outputs(const Outputs& batch, int64_t batch_rows, int64_t first,
                                int64_t rows) {
  Outputs mine;
  for (const auto& [name, t] : batch) {
    if (t.rank() == 0 || t.dim(0) != batch_rows)
      return internal_error("output '" + name + "' of shape " + shape_str(t.shape()) +
                            " has no batch dimension of " + std::to_string(batch_rows) +
                            " rows to split among the batch's requests");
    const size_t row_bytes = t.nbytes() / static_cast<size_t>(batch_rows);
    Shape shape = t.shape();
    shape[0] = rows;
    mine.emplace(name,
                 Tensor::view_of(t, row_bytes * static_cast<size_t>(first), t.dtype(), shape));
  }
  return mine;
}

}  // namespace kiln::server

#include "server/batch_rows.h"

#include <algorithm>
#include <cstring>

#include "kiln/engine.h"

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

Tensor BatchBuffers::make(DataType dtype, const Shape& shape) const {
  if (pinned_) {
    Result<Tensor> t = pinned_tensor(dtype, shape);
    if (t.is_ok()) return std::move(t).value();
  }
  return Tensor(dtype, shape);
}

Tensor BatchBuffers::take(DataType dtype, const Shape& shape) {
  std::lock_guard<std::mutex> lock(mu_);
  auto free_one = [](const Tensor& t) { return t.use_count() == 1; };
  for (const Tensor& t : buffers_)
    if (free_one(t) && t.dtype() == dtype && t.shape() == shape) return t;
  if (buffers_.size() >= kept_) {
    auto it = std::find_if(buffers_.begin(), buffers_.end(), free_one);
    if (it == buffers_.end()) return make(dtype, shape);  // all in use: one of its own
    buffers_.erase(it);
  }
  buffers_.push_back(make(dtype, shape));
  return buffers_.back();
}

size_t BatchBuffers::kept() const {
  std::lock_guard<std::mutex> lock(mu_);
  return buffers_.size();
}

Outputs join_rows(const std::vector<const Outputs*>& parts, int64_t padded_rows,
                  BatchBuffers* buffers) {
  Outputs batch;
  for (const auto& [name, like] : *parts.front()) {
    Shape shape = like.shape();
    shape[0] = padded_rows;
    Tensor t = buffers ? buffers->take(like.dtype(), shape) : Tensor(like.dtype(), shape);
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

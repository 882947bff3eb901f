#include "server/batch_rows.h"

#include <cstring>
#include <iterator>

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

namespace {

// A tensor of `dtype` and `shape` in `reuse`'s memory for `name` (grown where too small), or
// in new memory without `reuse`.
Tensor batch_tensor(DataType dtype, const Shape& shape, const std::string& name,
                    JoinBuffers* reuse) {
  if (!reuse) return Tensor(dtype, shape);
  const size_t bytes = static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype);
  auto it = reuse->storage.find(name);
  if (it == reuse->storage.end() || it->second.nbytes() < bytes) {
    const Shape raw{static_cast<int64_t>(bytes)};
    Tensor memory;
    if (reuse->pinned) {
      Result<Tensor> pinned = pinned_tensor(DataType::kUInt8, raw);
      reuse->pinned = pinned.is_ok();
      if (pinned.is_ok()) memory = *pinned;
    }
    if (!memory.defined()) memory = Tensor(DataType::kUInt8, raw);
    it = reuse->storage.insert_or_assign(name, std::move(memory)).first;
  }
  return Tensor::view_of(it->second, 0, dtype, shape);
}

}  // namespace

Outputs join_rows(const std::vector<const Outputs*>& parts, int64_t padded_rows,
                  JoinBuffers* reuse) {
  Outputs batch;
  for (const auto& [name, like] : *parts.front()) {
    Shape shape = like.shape();
    shape[0] = padded_rows;
    Tensor t = batch_tensor(like.dtype(), shape, name, reuse);
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

void keep_outputs_apart(JoinBuffers& reuse, const Outputs& outputs) {
  for (auto it = reuse.storage.begin(); it != reuse.storage.end();) {
    const auto* lo = static_cast<const char*>(it->second.raw());
    const auto* hi = lo + it->second.nbytes();
    bool shared = false;
    for (const auto& [name, t] : outputs) {
      const auto* o = static_cast<const char*>(t.raw());
      shared = shared || (t.gpu() < 0 && o < hi && o + t.nbytes() > lo);
    }
    it = shared ? reuse.storage.erase(it) : std::next(it);
  }
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

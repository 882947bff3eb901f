#include "server/batch_rows.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <future>

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

Tensor BatchBuffers::take(DataType dtype, const Shape& shape, size_t capacity) {
  const size_t bytes = static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype);
  std::lock_guard<std::mutex> lock(mu_);
  for (const Tensor& b : buffers_)
    if (b.use_count() == 1 && b.nbytes() >= bytes) return Tensor::view_of(b, 0, dtype, shape);
  if (buffers_.size() >= kept_) return Tensor(dtype, shape);  // all in use: one of its own
  const Shape storage{static_cast<int64_t>(std::max({bytes, capacity, size_t{1}}))};
  Result<Tensor> pinned =
      pinned_ ? pinned_tensor(DataType::kUInt8, storage) : Result<Tensor>(unavailable("unpinned"));
  buffers_.push_back(pinned.is_ok() ? std::move(pinned).value()
                                    : Tensor(DataType::kUInt8, storage));
  return Tensor::view_of(buffers_.back(), 0, dtype, shape);
}

size_t BatchBuffers::kept() const {
  std::lock_guard<std::mutex> lock(mu_);
  return buffers_.size();
}

namespace {

// Copies parts[first, last) one after another to `out`.
void copy_parts(const std::vector<const Tensor*>& parts, size_t first, size_t last, char* out) {
  for (size_t i = first; i < last; ++i) {
    std::memcpy(out, parts[i]->raw(), parts[i]->nbytes());
    out += parts[i]->nbytes();
  }
}

// The parts one after another at `out`: on this thread, or for many bytes on a few threads
// (one thread copies about 5-10 GB/s; a batch of 256 images of 224x224x3 bytes is 38 MB).
void copy_all(const std::vector<const Tensor*>& parts, char* out) {
  constexpr size_t kBytesPerThread = 4 << 20;
  constexpr size_t kMaxThreads = 4;
  size_t total = 0;
  for (const Tensor* p : parts) total += p->nbytes();
  const size_t threads = std::min({kMaxThreads, parts.size(), total / kBytesPerThread + 1});
  if (threads <= 1) return copy_parts(parts, 0, parts.size(), out);
  std::vector<std::future<void>> others;
  size_t first = 0, done = 0;
  for (size_t t = 0; t < threads; ++t) {
    // Parts up to the t+1-th share of the bytes.
    const size_t until = total * (t + 1) / threads;
    size_t last = first, bytes = done;
    while (last < parts.size() && (bytes < until || t + 1 == threads))
      bytes += parts[last++]->nbytes();
    if (t + 1 == threads)
      copy_parts(parts, first, last, out + done);
    else
      others.push_back(
          std::async(std::launch::async, copy_parts, std::cref(parts), first, last, out + done));
    first = last;
    done = bytes;
  }
  for (auto& f : others) f.get();
}

}  // namespace

Outputs join_rows(const std::vector<const Outputs*>& parts, int64_t padded_rows,
                  BatchBuffers* buffers, int64_t max_rows) {
  Outputs batch;
  for (const auto& [name, like] : *parts.front()) {
    Shape shape = like.shape();
    shape[0] = padded_rows;
    const size_t row_bytes = like.dim(0) > 0 ? like.nbytes() / static_cast<size_t>(like.dim(0)) : 0;
    Tensor t = buffers
                   ? buffers->take(like.dtype(), shape,
                                   row_bytes * static_cast<size_t>(std::max<int64_t>(0, max_rows)))
                   : Tensor(like.dtype(), shape);
    std::vector<const Tensor*> mine;
    size_t at = 0;
    for (const Outputs* p : parts) {
      mine.push_back(&p->at(name));
      at += mine.back()->nbytes();
    }
    auto* out = static_cast<char*>(t.raw());
    copy_all(mine, out);
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

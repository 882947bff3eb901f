// Requests as rows of a batch: the dynamic batcher joins requests along their first axis into
// one batch, pads it to a size that has a plan, and hands each request its rows of the outputs.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "kiln/pipeline.h"

namespace kiln::server {

// The rows of a request: the first dimension its inputs share. An input of rank 0, or inputs
// that disagree on it, is an error naming the input.
Result<int64_t> rows_of(const Outputs& inputs);

// What requests must share to join one batch: input names, dtypes and every dimension but the
// first.
std::string batch_key(const Outputs& inputs);

// Batch buffers used again: a buffer is handed out again (as a view of the batch's dtype and
// shape) once every copy of the batch made from it is gone (its use_count is 1). Pinned
// (pinned_tensor) where asked, so that a CUDA engine copies a batch to the GPU straight from it,
// by DMA. Pinning memory costs far more than filling it, and freeing pinned memory waits for the
// whole GPU, so buffers are made once, each of at least `capacity` bytes (the largest batch),
// and never freed while the pool lives. At most `kept` are made; while all are in use a batch
// gets ordinary memory of its own. Safe from several threads.
class BatchBuffers {
 public:
  BatchBuffers(bool pinned, size_t kept) : pinned_(pinned), kept_(kept) {}
  // A buffer of `dtype` and `shape`, its contents undefined; a new buffer holds at least
  // `capacity` bytes. Where memory cannot be pinned, ordinary memory (a slower copy to the GPU,
  // the same result).
  Tensor take(DataType dtype, const Shape& shape, size_t capacity = 0);
  size_t kept() const;

 private:
  const bool pinned_;
  const size_t kept_;
  mutable std::mutex mu_;
  std::vector<Tensor> buffers_;  // uint8 storage
};

// The inputs of `parts` joined along the first axis, in order, then `padded_rows` − (their rows)
// rows of zeros. All parts have one batch_key; padded_rows is at least their rows. The batch's
// buffers come from `buffers` where given, each made for `max_rows` rows. A batch of many bytes
// is copied by several threads.
Outputs join_rows(const std::vector<const Outputs*>& parts, int64_t padded_rows,
                  BatchBuffers* buffers = nullptr, int64_t max_rows = 0);

// Rows [first, first + rows) of every output of a batch of `batch_rows` rows, as views sharing
// the batch's buffers. An output whose first dimension is not batch_rows cannot be split: an
// error naming it.
Result<Outputs> rows_of_outputs(const Outputs& batch, int64_t batch_rows, int64_t first,
                                int64_t rows);

}  // namespace kiln::server

// Requests as rows of a batch: the dynamic batcher joins requests along their first axis into
// one batch, pads it to a size that has a plan, and hands each request its rows of the outputs.
#pragma once

#include <cstdint>
#include <map>
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

// Host memory that one batcher instance joins its batches into, input by input, reused from
// batch to batch (grown to the largest batch), so that a batch of megabytes is not freshly
// allocated, page-faulted in and freed every time. Its tensors are views of this memory: a
// batch's inputs are only valid until the instance joins its next batch.
struct JoinBuffers {
  std::map<std::string, Tensor> storage;  // input name → uint8 [capacity bytes]
  // The memory pinned (kiln::pinned_tensor), so that a CUDA engine copies a batch to the GPU
  // straight from it. Where memory cannot be pinned, ordinary memory (and pinned turns false).
  bool pinned = false;
};

// The inputs of `parts` joined along the first axis, in order, then `padded_rows` − (their rows)
// rows of zeros. All parts have one batch_key; padded_rows is at least their rows. With
// `reuse`, the batch lies in its memory; without, in new memory.
Outputs join_rows(const std::vector<const Outputs*>& parts, int64_t padded_rows,
                  JoinBuffers* reuse = nullptr);

// Where a batch's outputs share memory with its joined inputs (a model that gives an input back
// as it is), that memory is given up, so that the next batch does not write over the answers.
void keep_outputs_apart(JoinBuffers& reuse, const Outputs& outputs);

// Rows [first, first + rows) of every output of a batch of `batch_rows` rows, as views sharing
// the batch's buffers. An output whose first dimension is not batch_rows cannot be split: an
// error naming it.
Result<Outputs> rows_of_outputs(const Outputs& batch, int64_t batch_rows, int64_t first,
                                int64_t rows);

}  // namespace kiln::server

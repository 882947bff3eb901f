// Concat along any axis, any dtype: with outer = the product of the dims before the axis,
// each input is `outer` rows of `chunk` bytes written at a column offset of rows of the
// output's row bytes, i.e. one strided 2-D copy per input (copy_rows.cuh). Every case but
// the one below works so, on plain data.
//
// Rank-4 float inputs joined on channels (axis 1) stay in NHWC: there the rows are the
// N·H·W pixels and the chunks each input's channels. These are copied in one launch for all
// inputs (blockIdx.y picks the input, blockIdx.x a run of pixels), V channels per thread,
// and may carry fuse_concat_affine's epilogue, y = act(x·a[c] + shift[c]), applied as they
// are copied: DenseNet's norm + relu after each concatenation then costs no pass of its
// own. An epilogue on any other layout is left to the CPU.

#include <algorithm>
#include <cstring>
#include <memory>
#include <numeric>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/kernels/copy_rows.cuh"
#include "backends/cuda/kernels/elementwise.cuh"
#include "backends/cuda/kernels/structured.cuh"
#include "ops/concat.h"
#include "ops/op_util.h"

namespace kiln {
namespace {

constexpr int kMaxPieces = 64;  // inputs per launch (DenseNet-201's largest block has 49)

// Work is counted in items (one pixel's V channels of one input) and cut into blocks of
// kItems; each input gets the blocks its N·H·W·C/V items need, so a wide input spreads
// over as many blocks as its bytes ask for (the first version gave every input the same
// run of pixels per block, and DenseNet's 7×7 concatenations then waited on the few blocks
// copying the widest input: 66 µs for 6 MB).
constexpr int kThreads = 256;
constexpr int kItems = 4 * kThreads;

struct Pieces {
  const void* src[kMaxPieces];
  int32_t begin[kMaxPieces];            // the piece's first output channel
  int32_t channels[kMaxPieces];         // its channel count (a multiple of V)
  int32_t first_block[kMaxPieces + 1];  // its blocks: [first_block[p], first_block[p + 1])
  int32_t count;
};

template <class T, int V, bool kAffine>
__global__ void concat_nhwc_kernel(Pieces pc, T* __restrict__ dst, int32_t rows, int32_t c_out,
                                   const float* __restrict__ a, const float* __restrict__ shift,
                                   Activation act) {
  // The input this block copies: the last one whose blocks start at or before it.
  const int32_t bx = blockIdx.x;
  int lo = 0, hi = pc.count - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (pc.first_block[mid] <= bx)
      lo = mid;
    else
      hi = mid - 1;
  }
  const int p = lo;
  const int32_t cp = pc.channels[p], c0 = pc.begin[p];
  const int32_t packs = cp / V;
  const int32_t i0 = (bx - pc.first_block[p]) * kItems;
  const int32_t end = min(i0 + kItems, rows * packs);  // rows·packs < 2^31 (prepare)
  const T* src = static_cast<const T*>(pc.src[p]);
  for (int32_t i = i0 + threadIdx.x; i < end; i += kThreads) {
    const int64_t r = i / packs;
    const int32_t k = (i - static_cast<int32_t>(r) * packs) * V;
    float v[V];
    cuda::load_pack<T, V>(src + r * cp + k, v);
    if (kAffine) {
#pragma unroll
      for (int j = 0; j < V; ++j)
        v[j] = cuda::activate_rt(act, v[j] * a[c0 + k + j] + shift[c0 + k + j], 0.f, 0.f);
    }
    cuda::store_pack<T, V>(dst + r * c_out + c0 + k, v);
  }
}

class ConcatKernel final : public CudaKernel {
 public:
  // `pieces` of the node's inputs are concatenated; with an affine epilogue the two after
  // them are its scale and shift.
  ConcatKernel(std::string name, int64_t axis, bool channels_nhwc, size_t pieces, const Epilogue& e)
      : name_(std::move(name)), axis_(axis), nhwc_(channels_nhwc), pieces_(pieces), epi_(e) {}

  Layout input_layout(int i, Layout) const override {
    return nhwc_ && static_cast<size_t>(i) < pieces_ ? Layout::kNHWC : Layout::kPlain;
  }
  bool reads_on_host(int i) const override { return static_cast<size_t>(i) >= pieces_; }

  Status prepare(const std::vector<TensorDesc>& all_in, std::vector<TensorDesc>& out,
                 CudaBuildContext& ctx) override {
    if (all_in.size() < pieces_) return invalid_argument("Concat needs inputs");
    const std::vector<TensorDesc> in(all_in.begin(), all_in.begin() + pieces_);
    if (in.empty() || !in[0].present()) return invalid_argument("Concat needs inputs");
    const TensorDesc& first = in[0];
    const int64_t rank = static_cast<int64_t>(first.shape.size());
    KILN_ASSIGN_OR_RETURN(axis_norm_, normalize_axis(axis_, rank));
    Shape shape = first.shape;
    shape[axis_norm_] = 0;
    for (size_t k = 0; k < in.size(); ++k) {
      const TensorDesc& d = in[k];
      const std::string which = "input " + std::to_string(k);
      if (!d.present()) return invalid_argument(which + " is missing");
      if (d.dtype != first.dtype)
        return invalid_argument(which + ": expected " + dtype_name(first.dtype) + ", got " +
                                dtype_name(d.dtype));
      if (d.layout != first.layout)
        return invalid_argument(which + ": layout " + layout_name(d.layout) + ", input 0 is " +
                                layout_name(first.layout));
      bool ok = static_cast<int64_t>(d.shape.size()) == rank;
      for (int64_t i = 0; ok && i < rank; ++i) ok = i == axis_norm_ || d.shape[i] == first.shape[i];
      if (!ok)
        return invalid_argument(which + " shape " + shape_str(d.shape) + " does not match " +
                                shape_str(first.shape) + " outside axis " +
                                std::to_string(axis_norm_));
      shape[axis_norm_] += d.shape[axis_norm_];
    }
    if (first.layout == Layout::kNHWC && (rank != 4 || axis_norm_ != 1))
      return invalid_argument("NHWC inputs are concatenated on channels (axis 1) only");
    layout_ = first.layout;
    elem_ = static_cast<int64_t>(dtype_size(first.dtype));
    // Rows and the bytes each unit of the axis spans in one row.
    rows_ = 1;
    unit_bytes_ = elem_;
    if (layout_ == Layout::kNHWC) {
      rows_ = shape[0] * shape[2] * shape[3];
    } else {
      for (int64_t i = 0; i < axis_norm_; ++i) rows_ *= shape[i];
      for (int64_t i = axis_norm_ + 1; i < rank; ++i) unit_bytes_ *= shape[i];
    }
    sizes_.clear();
    for (const TensorDesc& d : in) sizes_.push_back(d.shape[axis_norm_]);
    out_axis_ = shape[axis_norm_];
    dtype_ = first.dtype;
    // One launch for all inputs where the output is float NHWC and its elements count in
    // int32 with room for a block's items.
    fused_ = layout_ == Layout::kNHWC && cuda::is_act_dtype(dtype_) &&
             rows_ * out_axis_ < (int64_t{1} << 31) - (int64_t{1} << 20);
    if (!epi_.empty() && !fused_)
      return unsupported("Concat with epilogue " + epi_.describe() + " on " + layout_name(layout_) +
                         " " + dtype_name(dtype_) +
                         " data (the CUDA kernel applies it to float NHWC only)");
    if (fused_) {
      // V channels per thread: the widest dividing every input's channel count.
      int64_t g = out_axis_;
      for (int64_t c : sizes_) g = std::gcd(g, c);
      v_ = 1;
      for (int v : {8, 4, 2})
        if (v * elem_ <= 16 && g % v == 0) {
          v_ = v;
          break;
        }
    }
    if (epi_.affine_input >= 0) {
      std::vector<float> params(2 * out_axis_);  // a, then shift
      for (int j = 0; j < 2; ++j) {
        const Tensor* t = all_in[pieces_ + j].value;
        if (!t || t->shape() != Shape{out_axis_} || t->dtype() != DataType::kFloat32)
          return invalid_argument("epilogue " + std::string(j ? "shift" : "scale") +
                                  " must be a float32 constant of shape [" +
                                  std::to_string(out_axis_) + "]");
        std::memcpy(params.data() + j * out_axis_, t->data<float>(), out_axis_ * sizeof(float));
      }
      const size_t bytes = params.size() * sizeof(float);
      const std::string key =
          name_ + "/concat/a_shift/" + std::to_string(cuda::content_hash(params.data(), bytes));
      KILN_ASSIGN_OR_RETURN(void* dev, ctx.weights->upload(key, params.data(), bytes));
      params_ = static_cast<const float*>(dev);
    }
    out[0] = TensorDesc{first.dtype, shape, nullptr, layout_};
    return Status::ok();
  }

  std::string tactic() const override {
    std::string t = std::string("kiln concat ") + layout_name(layout_);
    if (fused_) t += " one launch, " + std::to_string(v_) + " channels a thread";
    if (!epi_.empty()) t += " fused " + epi_.describe();
    return t;
  }

  Status enqueue(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const CudaRunContext& run) override {
    if (fused_) return enqueue_nhwc(in, out[0]->data, run.stream);
    auto* dst = static_cast<char*>(out[0]->data);
    const int64_t dst_row = out_axis_ * unit_bytes_;
    int64_t offset = 0;
    for (size_t k = 0; k < in.size(); ++k) {
      const int64_t chunk = sizes_[k] * unit_bytes_;
      if (chunk > 0 && rows_ > 0)
        KILN_RETURN_IF_ERROR(
            cuda::copy_rows(in[k]->data, dst + offset, rows_, chunk, chunk, dst_row, run.stream));
      offset += chunk;
    }
    return Status::ok();
  }

 private:
  Status enqueue_nhwc(const std::vector<const TensorRef*>& in, void* out, cudaStream_t stream) {
    if (rows_ == 0 || out_axis_ == 0) return Status::ok();
    // The vector width prepare chose, narrowed where a buffer is not aligned to it.
    int v = v_;
    for (size_t k = 0; k < pieces_; ++k)
      while (v > 1 && (reinterpret_cast<uintptr_t>(in[k]->data) % (v * elem_) != 0 ||
                       reinterpret_cast<uintptr_t>(out) % (v * elem_) != 0))
        v /= 2;
    return cuda::dispatch_act(dtype_, [&](auto tag) -> Status {
      using T = decltype(tag);
      for (size_t first = 0; first < pieces_; first += kMaxPieces) {
        const size_t count = std::min<size_t>(kMaxPieces, pieces_ - first);
        Pieces pc{};
        pc.count = static_cast<int32_t>(count);
        int64_t begin = 0, blocks = 0;
        for (size_t k = 0; k < first; ++k) begin += sizes_[k];
        for (size_t k = 0; k < count; ++k) {
          pc.src[k] = in[first + k]->data;
          pc.begin[k] = static_cast<int32_t>(begin);
          pc.channels[k] = static_cast<int32_t>(sizes_[first + k]);
          pc.first_block[k] = static_cast<int32_t>(blocks);
          begin += sizes_[first + k];
          blocks += (rows_ * (sizes_[first + k] / v) + kItems - 1) / kItems;
        }
        pc.first_block[count] = static_cast<int32_t>(blocks);
        if (blocks == 0) continue;  // every input empty
        T* dst = static_cast<T*>(out);
        const float* a = params_;
        const float* shift = params_ ? params_ + out_axis_ : nullptr;
        const int32_t rows = static_cast<int32_t>(rows_), c_out = static_cast<int32_t>(out_axis_);
        auto go = [&](auto kernel) {
          kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(pc, dst, rows, c_out, a,
                                                                         shift, epi_.act);
        };
        const bool affine = params_ != nullptr;
        switch (v) {
          case 8:
            affine ? go(concat_nhwc_kernel<T, 8, true>) : go(concat_nhwc_kernel<T, 8, false>);
            break;
          case 4:
            affine ? go(concat_nhwc_kernel<T, 4, true>) : go(concat_nhwc_kernel<T, 4, false>);
            break;
          case 2:
            affine ? go(concat_nhwc_kernel<T, 2, true>) : go(concat_nhwc_kernel<T, 2, false>);
            break;
          default:
            affine ? go(concat_nhwc_kernel<T, 1, true>) : go(concat_nhwc_kernel<T, 1, false>);
            break;
        }
        KILN_CUDA_LAUNCHED("concat_nhwc_kernel");
      }
      return Status::ok();
    });
  }

  std::string name_;
  int64_t axis_;
  bool nhwc_;
  size_t pieces_;
  Epilogue epi_;
  int64_t axis_norm_ = 0, rows_ = 0, unit_bytes_ = 0, elem_ = 0, out_axis_ = 0;
  std::vector<int64_t> sizes_;
  Layout layout_ = Layout::kPlain;
  DataType dtype_ = DataType::kUndefined;
  bool fused_ = false;
  int v_ = 1;
  const float* params_ = nullptr;  // a[C] then shift[C], in the WeightStore
};

Result<std::unique_ptr<CudaKernel>> make_concat(const Node& node, Precision) {
  if (node.inputs.empty()) return invalid_argument("Concat needs at least one input");
  if (!node.attrs.has("axis")) return invalid_argument("missing attribute axis");
  const int64_t axis = concat_attrs(node).axis;
  const Epilogue& e = node.epilogue;
  if (e.residual_input >= 0) return unsupported("Concat with a residual epilogue");
  const size_t pieces =
      e.affine_input >= 0 ? static_cast<size_t>(e.affine_input) : node.inputs.size();
  if (pieces == 0 || pieces > node.inputs.size())
    return invalid_argument("Concat needs at least one input");
  // NHWC when every input is a rank-4 float activation joined on channels; a constant input
  // arrives plain, so then everything stays plain.
  bool nhwc = true;
  for (size_t k = 0; k < pieces; ++k) {
    const Value* v = node.input(k);
    if (!v) return invalid_argument("input " + std::to_string(k) + " is omitted");
    nhwc = nhwc && !v->is_constant() && dtype_is_float(v->dtype) && cuda::known_rank(node, k) == 4;
  }
  nhwc = nhwc && (axis == 1 || axis == -3);
  return std::unique_ptr<CudaKernel>(new ConcatKernel(node.name, axis, nhwc, pieces, e));
}

}  // namespace

KILN_REGISTER_CUDA_KERNEL(Concat, make_concat);

}  // namespace kiln

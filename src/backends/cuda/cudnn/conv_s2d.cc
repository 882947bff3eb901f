// A Conv kernel that runs a stride-2 conv with few input channels either directly or as the
// space-to-depth rewrite (space_to_depth.h): the input's 2×2 blocks become channels and the
// conv a stride-1 one with a ceil(R/2)×ceil(S/2) kernel. Both are prepared as cuDNN Conv
// kernels with their own tactic choice; with tactic timing the rewrite is kept when its conv
// plus the input transform is faster than the direct conv. Without timing the direct conv
// runs (the libraries' first choice), unless forced on.
//
// EngineOptions::space_to_depth (CudaBuildContext::space_to_depth) on|off forces the rewrite
// wherever it applies / never; auto: the timed choice.
#include <cstdlib>
#include <cstring>
#include <functional>
#include <sstream>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/cudnn/conv_kernel.h"
#include "backends/cuda/cudnn/space_to_depth.h"
#include "backends/cuda/kernels/launch.h"
#include "backends/cuda/tactic_timing.h"

namespace kiln {
namespace {

// Beyond this many input channels the 4× wider rewritten conv stops paying off: its input
// channels already fill tensor-core tiles.
constexpr int64_t kMaxChannels = 8;

bool all_equal(const std::vector<int64_t>& v, int64_t want) {
  for (int64_t e : v)
    if (e != want) return false;
  return true;
}

// Input 0 may arrive as the model's input is stored (float32 NCHW) rather than as the conv
// wants it (float16 NHWC in fp16 mode, float32 NHWC in tf32 mode): the kernel then converts it
// itself, within the space-to-depth transform when the rewrite runs (one pass over the
// input instead of the plan's conversion and then the transform), else as the plan would.
class SpaceToDepthConvKernel final : public CudaKernel {
 public:
  SpaceToDepthConvKernel(const Node& node, int bias, Precision precision, ConvAttrs attrs,
                         std::unique_ptr<CudnnConvKernel> direct)
      : bias_(bias), precision_(precision), attrs_(std::move(attrs)), direct_(std::move(direct)) {
    inner_node_.name = node.name + "/s2d";
    inner_node_.op = OpKind::Conv;
    inner_node_.epilogue = node.epilogue;
  }

  Layout input_layout(int i, Layout offered) const override {
    return direct_->input_layout(i, offered);
  }
  bool takes_offered(int i, const TensorDesc& offered) const override {
    return i == 0 && offered.shape.size() == 4 && offered.layout == Layout::kPlain &&
           is_device_float(offered.dtype) && offered.shape[1] <= kMaxChannels;
  }
  bool reads_on_host(int i) const override { return direct_->reads_on_host(i); }
  int inplace_input() const override { return direct_->inplace_input(); }
  size_t workspace_bytes() const override {
    return s2d_ || convert_ ? z_offset_ + z_bytes_ : direct_->workspace_bytes();
  }
  std::string tactic() const override { return tactic_text_; }
  // What runs, the input's conversion or transform included.
  float timed_ms() const override { return ms_; }

  Status prepare(const std::vector<TensorDesc>& in, std::vector<TensorDesc>& out,
                 CudaBuildContext& ctx) override;

  Status enqueue(const std::vector<const TensorRef*>& in, const std::vector<TensorRef*>& out,
                 const CudaRunContext& run) override {
    // z: the rewritten input, or the converted one for the direct conv; the conv's own
    // workspace lies below it.
    void* z = static_cast<uint8_t*>(run.workspace) + z_offset_;
    CudaRunContext inner = run;
    inner.workspace_bytes = z_offset_;
    if (!s2d_ && !convert_) return direct_->enqueue(in, out, run);
    TensorRef zt{z_desc_, z};
    if (s2d_) {
      KILN_RETURN_IF_ERROR(launch_space_to_depth(io_, shape_, in[0]->data, z, run.stream));
    } else {
      KILN_RETURN_IF_ERROR(launch_convert(*in[0], zt, run.stream));
    }
    std::vector<const TensorRef*> in2 = in;
    in2[0] = &zt;
    return (s2d_ ? s2d_ : direct_)->enqueue(in2, out, inner);
  }

 private:
  // The rewrite's shapes for these inputs; kUnsupported when it does not apply.
  Result<S2dShape> plan_shape(const std::vector<TensorDesc>& in) const;
  // Milliseconds of `launch`, from the tactic cache under `key` or timed (and cached).
  Result<float> cached_time(CudaBuildContext& ctx, const std::string& key,
                            const std::function<Status(const void* x, void* z)>& launch,
                            const TensorDesc& x, size_t z_bytes) const;

  int bias_;
  Precision precision_;
  ConvAttrs attrs_;
  Node inner_node_;  // name and epilogue of the rewritten conv
  std::unique_ptr<CudnnConvKernel> direct_;
  std::unique_ptr<CudnnConvKernel> s2d_;  // set when the rewrite is chosen
  bool convert_ = false;                  // the direct conv runs on input 0 converted here
  S2dShape shape_;
  S2dIo io_;
  float ms_ = -1;
  Tensor filter_;  // the rewritten filter, read by s2d_'s prepare
  TensorDesc z_desc_;
  size_t z_offset_ = 0, z_bytes_ = 0;
  std::string tactic_text_;
};

Result<S2dShape> SpaceToDepthConvKernel::plan_shape(const std::vector<TensorDesc>& in) const {
  if (in.size() < 2 || !in[0].present() || !in[1].value || in[0].shape.size() != 4)
    return unsupported("space-to-depth needs a 2-D conv with a constant filter");
  KILN_ASSIGN_OR_RETURN(ConvGeometry g, conv_geometry(attrs_, in[0].shape, in[1].shape));
  if (g.group != 1 || !all_equal(g.strides, kS2dBlock) || !all_equal(g.dilations, 1) ||
      g.in_channels > kMaxChannels || g.kernel[0] < 3 || g.kernel[1] < 3)
    return unsupported("space-to-depth applies to ungrouped stride-2 convs of few channels");
  S2dShape s;
  s.n = g.batch;
  s.c = g.in_channels;
  s.h = g.in_spatial[0];
  s.w = g.in_spatial[1];
  s.cp = (s.c + 1) / 2 * 2;  // 4·cp channels: a multiple of 8, as tensor cores want
  s.pad_top = g.pad_begin[0];
  s.pad_left = g.pad_begin[1];
  s.hz = g.out_spatial[0] + (g.kernel[0] + kS2dBlock - 1) / kS2dBlock - 1;
  s.wz = g.out_spatial[1] + (g.kernel[1] + kS2dBlock - 1) / kS2dBlock - 1;
  return s;
}

Result<float> SpaceToDepthConvKernel::cached_time(
    CudaBuildContext& ctx, const std::string& key,
    const std::function<Status(const void* x, void* z)>& launch, const TensorDesc& x,
    size_t z_bytes) const {
  // Cached like the convs' times so that a rebuild from the cache makes the same choice (a
  // re-timed transform could tip a close one).
  std::string cached;
  if (ctx.tactics->get(key, &cached)) {
    const float ms = std::strtof(cached.c_str(), nullptr);
    if (ms > 0) return ms;
  }
  ScratchBuffer xb, zb;
  KILN_RETURN_IF_ERROR(xb.alloc_random(x.dtype, x.numel(), 7));
  KILN_RETURN_IF_ERROR(zb.alloc(z_bytes));
  KILN_ASSIGN_OR_RETURN(float ms,
                        time_launches(ctx.stream, [&] { return launch(xb.get(), zb.get()); }));
  ctx.tactics->put(key, std::to_string(ms));
  return ms;
}

std::string io_text(DataType dtype, Layout layout) {
  return std::string(dtype_name(dtype)) + " " + layout_name(layout);
}

Status SpaceToDepthConvKernel::prepare(const std::vector<TensorDesc>& in,
                                       std::vector<TensorDesc>& out, CudaBuildContext& ctx) {
  s2d_.reset();
  ms_ = -1;
  convert_ = false;
  z_offset_ = z_bytes_ = 0;
  // What the convs read: input 0 in the activation dtype and the conv's layout.
  std::vector<TensorDesc> conv_in = in;
  const Layout conv_layout = direct_->input_layout(0, in[0].layout);
  if (in[0].present() && in[0].shape.size() == 4) {
    conv_in[0].dtype = ctx.act_dtype();
    conv_in[0].layout = conv_layout;
  }
  const bool raw = in[0].dtype != conv_in[0].dtype || in[0].layout != conv_in[0].layout;
  const Status direct = direct_->prepare(conv_in, out, ctx);
  tactic_text_ = direct_->tactic();
  float convert_ms = 0;  // the direct conv's share of input conversion
  if (raw && direct.is_ok()) {
    convert_ = true;
    z_desc_ = conv_in[0];
    z_desc_.value = nullptr;
    z_bytes_ = z_desc_.nbytes();
    z_offset_ = conv_align_up(direct_->workspace_bytes());
    tactic_text_ = "convert " + io_text(in[0].dtype, in[0].layout) + " + " + tactic_text_;
    if (ctx.time_tactics) {
      const std::string key = "s2d-convert|" + io_text(in[0].dtype, in[0].layout) + ">" +
                              io_text(z_desc_.dtype, z_desc_.layout) + "|" + shape_str(in[0].shape);
      auto launch = [&](const void* x, void* z) {
        const TensorRef src{TensorDesc{in[0].dtype, in[0].shape, nullptr, in[0].layout},
                            const_cast<void*>(x)};
        TensorRef dst{z_desc_, z};
        return launch_convert(src, dst, ctx.stream);
      };
      KILN_ASSIGN_OR_RETURN(convert_ms, cached_time(ctx, key, launch, in[0], z_bytes_));
    }
  }
  if (direct.is_ok() && direct_->tactic_ms() >= 0 && (!raw || ctx.time_tactics))
    ms_ = direct_->tactic_ms() + convert_ms;
  const SpaceToDepth mode = ctx.space_to_depth;
  if (mode == SpaceToDepth::kOff) return direct;
  auto shape = plan_shape(conv_in);
  if (!shape.is_ok()) return direct;
  const S2dShape s = *shape;
  const S2dIo io{in[0].dtype, ctx.act_dtype(), in[0].layout == Layout::kNHWC,
                 conv_layout == Layout::kNHWC};
  filter_ = space_to_depth_filter(*in[1].value, s.cp);
  const TensorDesc z_desc{io.z_dtype, Shape{s.n, s.cz(), s.hz, s.wz}, nullptr, conv_layout};
  std::vector<TensorDesc> in2 = conv_in;
  in2[0] = z_desc;
  in2[1] = TensorDesc{DataType::kFloat32, filter_.shape(), &filter_, Layout::kPlain};
  std::vector<TensorDesc> out2(out.size());
  ConvAttrs a;
  a.kernel_shape = {filter_.shape()[2], filter_.shape()[3]};
  auto inner =
      std::make_unique<CudnnConvKernel>(inner_node_, a, bias_, precision_, direct_->path());
  if (!inner->prepare(in2, out2, ctx).is_ok()) return direct;
  if (direct.is_ok() && out2[0].shape != out[0].shape)
    return internal_error("space-to-depth conv output " + shape_str(out2[0].shape) +
                          " != " + shape_str(out[0].shape));
  float transform_ms = -1;
  if (ctx.time_tactics) {
    std::ostringstream key;
    key << "s2d|" << io_text(in[0].dtype, in[0].layout) << ">"
        << io_text(z_desc.dtype, z_desc.layout) << "|n" << s.n << "c" << s.c << "h" << s.h << "w"
        << s.w << "|cp" << s.cp << "|p" << s.pad_top << "," << s.pad_left << "|z" << s.hz << ","
        << s.wz;
    auto launch = [&](const void* x, void* z) {
      return launch_space_to_depth(io, s, x, z, ctx.stream);
    };
    KILN_ASSIGN_OR_RETURN(transform_ms,
                          cached_time(ctx, key.str(), launch, in[0], z_desc.nbytes()));
  }
  bool use = !direct.is_ok() || mode == SpaceToDepth::kOn;
  if (!use && transform_ms >= 0 && inner->tactic_ms() >= 0 && direct_->tactic_ms() >= 0)
    use = inner->tactic_ms() + transform_ms < direct_->tactic_ms() + convert_ms;
  if (!use) return direct;
  const std::string direct_text = tactic_text_;
  ms_ = transform_ms >= 0 && inner->tactic_ms() >= 0 ? transform_ms + inner->tactic_ms() : -1;
  out = out2;
  s2d_ = std::move(inner);
  convert_ = false;
  shape_ = s;
  io_ = io;
  z_desc_ = z_desc;
  z_bytes_ = z_desc.nbytes();
  z_offset_ = conv_align_up(s2d_->workspace_bytes());
  std::ostringstream t;
  t << "space-to-depth " << s.cz() << "ch";
  if (raw) t << " from " << io_text(in[0].dtype, in[0].layout);
  if (transform_ms >= 0) t << " (" << transform_ms << " ms)";
  t << " + " << s2d_->tactic();
  if (direct.is_ok()) t << "; direct " << direct_text;
  tactic_text_ = t.str();
  return Status::ok();
}

}  // namespace

std::unique_ptr<CudaKernel> maybe_space_to_depth(const Node& node, const ConvAttrs& attrs, int bias,
                                                 Precision precision,
                                                 std::unique_ptr<CudnnConvKernel> direct) {
  const Shape& w = node.inputs[1]->constant.shape();
  const bool candidate = attrs.group == 1 && w.size() == 4 && w[1] <= kMaxChannels && w[2] >= 3 &&
                         w[3] >= 3 && attrs.strides.size() == 2 &&
                         all_equal(attrs.strides, kS2dBlock) && all_equal(attrs.dilations, 1);
  if (!candidate) return direct;
  return std::make_unique<SpaceToDepthConvKernel>(node, bias, precision, attrs, std::move(direct));
}

}  // namespace kiln

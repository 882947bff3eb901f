// The host as a plan device (backends/backend.h): kernels run in the calling thread on host
// memory; conversions between float dtypes and between plain and NHWC are plain loops.
#include <cstring>
#include <new>
#include <vector>

#include "backends/backend.h"
#include "core/half.h"
#include "core/layout_index.h"

namespace kiln {

namespace {

class HostPlanDevice final : public PlanDevice {
 public:
  DeviceKind kind() const override { return DeviceKind::kCpu; }
  DataType dtype_for(DataType dt, Precision) const override { return dt; }
  BuildContext& build_context() override { return build_; }
  Result<void*> place_constant(const std::string& key, const void*, size_t) override {
    return internal_error("constant '" + key + "': the host keeps no copies of constants");
  }
  Status execute(Kernel& kernel, const KernelOperands& ops, void* workspace,
                 size_t workspace_bytes) override {
    RunContext run(DeviceKind::kCpu);
    run.workspace = workspace;
    run.workspace_bytes = workspace_bytes;
    try {
      return kernel.execute(ops.in_ptr, ops.out_ptr, run);
    } catch (const std::bad_alloc&) {
      return Status(StatusCode::kResourceExhausted, "out of memory");
    }
  }
  Status convert(const TensorRef& src, const TensorRef& dst) override;
  Status copy_to_host(void*, const void*, size_t) override {
    return internal_error("a copy step on the host");
  }
  Status copy_from_host(void*, const void*, size_t) override {
    return internal_error("a copy step on the host");
  }

 private:
  BuildContext build_{DeviceKind::kCpu};
  // Conversion scratch, grown to the largest tensor converted.
  std::vector<float> floats_, floats_out_;
};

Status HostPlanDevice::convert(const TensorRef& src, const TensorRef& dst) {
  const TensorDesc &a = src.desc, &b = dst.desc;
  auto layout_ok = [](const TensorDesc& d) {
    if (d.layout == Layout::kPlain) return true;
    if (d.shape.size() != 4) return false;
    const int64_t b = block_of(d.layout);
    return d.layout == Layout::kNHWC || (b && d.shape[1] % b == 0);
  };
  if (a.shape != b.shape || !layout_ok(a) || !layout_ok(b))
    return internal_error(std::string("host conversion from ") + layout_name(a.layout) + " " +
                          shape_str(a.shape) + " to " + layout_name(b.layout) + " " +
                          shape_str(b.shape));
  const size_t n = static_cast<size_t>(a.numel());
  if (a.dtype == b.dtype && a.layout == b.layout) {
    if (n) std::memcpy(dst.data, src.data, a.nbytes());
    return Status::ok();
  }
  if (!is_device_float(a.dtype) || !is_device_float(b.dtype)) {
    if (a.dtype != b.dtype)
      return internal_error(std::string("host conversion from ") + dtype_name(a.dtype) + " to " +
                            dtype_name(b.dtype));
  }
  if (a.layout == b.layout) {  // dtype only
    floats_.resize(n);
    load_floats(src.data, n, a.dtype, floats_.data());
    store_floats(floats_.data(), n, b.dtype, dst.data);
    return Status::ok();
  }
  // Layout (and maybe dtype): element by element through float, or bytes for other dtypes.
  const Shape& s = a.shape;
  const size_t es = dtype_size(a.dtype);
  const bool as_float = a.dtype != b.dtype;
  if (as_float) {
    floats_.resize(n);
    load_floats(src.data, n, a.dtype, floats_.data());
  }
  if (as_float) floats_out_.resize(n);
  float* out = floats_out_.data();
  for (int64_t in = 0; in < s[0]; ++in)
    for (int64_t c = 0; c < s[1]; ++c)
      for (int64_t h = 0; h < s[2]; ++h)
        for (int64_t w = 0; w < s[3]; ++w) {
          const int64_t i = layout_index(a.layout, s, in, c, h, w);
          const int64_t o = layout_index(b.layout, s, in, c, h, w);
          if (as_float) {
            out[o] = floats_[i];
          } else {
            std::memcpy(static_cast<char*>(dst.data) + o * es,
                        static_cast<const char*>(src.data) + i * es, es);
          }
        }
  if (as_float) store_floats(out, n, b.dtype, dst.data);
  return Status::ok();
}

}  // namespace

std::unique_ptr<PlanDevice> make_host_plan_device() { return std::make_unique<HostPlanDevice>(); }

}  // namespace kiln

#include "backends/cuda/cudnn/backend_desc.h"

#include <string>

#include "backends/cuda/cuda_common.h"

namespace kiln {
namespace {

Status attr_status(cudnnStatus_t e, const char* call, cudnnBackendAttributeName_t name) {
  if (e == CUDNN_STATUS_SUCCESS) return Status::ok();
  return cudnn_status(e, call).with_context("attribute " + std::to_string(static_cast<int>(name)));
}

}  // namespace

BackendDesc& BackendDesc::operator=(BackendDesc&& o) noexcept {
  if (this != &o) {
    reset();
    d_ = o.d_;
    o.d_ = nullptr;
  }
  return *this;
}

Status BackendDesc::create(cudnnBackendDescriptorType_t type) {
  reset();
  KILN_CUDNN(cudnnBackendCreateDescriptor(type, &d_));
  return Status::ok();
}

void BackendDesc::reset() {
  if (d_) cudnnBackendDestroyDescriptor(d_);
  d_ = nullptr;
}

Status BackendDesc::set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                        int64_t count, const void* values) {
  return attr_status(cudnnBackendSetAttribute(d_, name, type, count, values),
                     "cudnnBackendSetAttribute", name);
}

Status BackendDesc::set_descs(cudnnBackendAttributeName_t name,
                              const std::vector<const BackendDesc*>& ds) {
  std::vector<cudnnBackendDescriptor_t> raw;
  raw.reserve(ds.size());
  for (const BackendDesc* d : ds) raw.push_back(d->get());
  return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<int64_t>(raw.size()), raw.data());
}

Status BackendDesc::finalize() {
  KILN_CUDNN(cudnnBackendFinalize(d_));
  return Status::ok();
}

Result<int64_t> BackendDesc::get(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                                 int64_t max, void* values) const {
  int64_t count = 0;
  KILN_RETURN_IF_ERROR(attr_status(cudnnBackendGetAttribute(d_, name, type, max, &count, values),
                                   "cudnnBackendGetAttribute", name));
  return count;
}

Result<int64_t> BackendDesc::get_i64(cudnnBackendAttributeName_t name) const {
  int64_t v = 0;
  KILN_ASSIGN_OR_RETURN(int64_t n, get(name, CUDNN_TYPE_INT64, 1, &v));
  if (n < 1)
    return internal_error("cuDNN attribute " + std::to_string(static_cast<int>(name)) +
                          " has no value");
  return v;
}

}  // namespace kiln

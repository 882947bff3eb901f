// A thin RAII layer over cuDNN's backend (graph) API: a descriptor that is destroyed with
// the object, and typed attribute setters/getters that return a Status naming the
// attribute. Used by the graph-API conv path (conv_graph.h).
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "kiln/status.h"

namespace kiln {

class BackendDesc {
 public:
  BackendDesc() = default;
  BackendDesc(const BackendDesc&) = delete;
  BackendDesc& operator=(const BackendDesc&) = delete;
  BackendDesc(BackendDesc&& o) noexcept : d_(o.d_) { o.d_ = nullptr; }
  BackendDesc& operator=(BackendDesc&& o) noexcept;
  ~BackendDesc() { reset(); }

  // Creates a fresh descriptor of `type` (destroying the one held).
  Status create(cudnnBackendDescriptorType_t type);
  void reset();
  cudnnBackendDescriptor_t get() const { return d_; }
  // The raw descriptor, for cudnnBackendGetAttribute writing into a pre-created one.
  cudnnBackendDescriptor_t* ptr() { return &d_; }

  Status set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
             const void* values);
  Status set_i64(cudnnBackendAttributeName_t name, int64_t v) {
    return set(name, CUDNN_TYPE_INT64, 1, &v);
  }
  Status set_i64s(cudnnBackendAttributeName_t name, const std::vector<int64_t>& v) {
    return set(name, CUDNN_TYPE_INT64, static_cast<int64_t>(v.size()), v.data());
  }
  Status set_desc(cudnnBackendAttributeName_t name, const BackendDesc& d) {
    cudnnBackendDescriptor_t raw = d.get();
    return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw);
  }
  Status set_descs(cudnnBackendAttributeName_t name, const std::vector<const BackendDesc*>& ds);
  Status finalize();

  // Reads up to `max` values; returns how many the attribute holds (may exceed `max`).
  Result<int64_t> get(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                      int64_t max, void* values) const;
  Result<int64_t> get_i64(cudnnBackendAttributeName_t name) const;

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

}  // namespace kiln

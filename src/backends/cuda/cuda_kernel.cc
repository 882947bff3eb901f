#include "backends/cuda/cuda_kernel.h"

#include <fstream>
#include <sstream>

#include "backends/cuda/cuda_common.h"

namespace kiln {

const char* layout_name(Layout l) { return l == Layout::kNHWC ? "NHWC" : "plain"; }

WeightStore::~WeightStore() {
  for (auto& [key, buf] : buffers_) cudaFree(buf.first);
}

Result<void*> WeightStore::upload(const std::string& key, const void* host, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = buffers_.find(key);
  if (it != buffers_.end()) {
    if (it->second.second != bytes)
      return internal_error("weight '" + key + "' uploaded twice with different sizes");
    return it->second.first;
  }
  void* d = nullptr;
  KILN_CUDA(cudaMalloc(&d, bytes == 0 ? 1 : bytes));
  Status copied =
      cuda_status(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice), "uploading weight");
  if (!copied.is_ok()) {
    cudaFree(d);
    return copied.with_context(key);
  }
  buffers_[key] = {d, bytes};
  return d;
}

size_t WeightStore::total_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [key, buf] : buffers_) n += buf.second;
  return n;
}

bool TacticCache::get(const std::string& key, std::string* value) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return false;
  *value = it->second;
  return true;
}

void TacticCache::put(const std::string& key, const std::string& value) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_[key] = value;
}

size_t TacticCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

std::map<std::string, std::string> TacticCache::entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_;
}

static const char kCacheMagic[] = "kiln-timing-cache v1";

bool TacticCache::load(const std::string& path, const std::string& device_tag) {
  std::ifstream f(path);
  if (!f) return false;
  std::string header;
  if (!std::getline(f, header) || header != std::string(kCacheMagic) + "\t" + device_tag)
    return false;
  std::map<std::string, std::string> loaded;
  std::string line;
  while (std::getline(f, line)) {
    size_t tab = line.find('\t');
    if (tab == std::string::npos || tab == 0) return false;  // corrupted: use none of it
    loaded[line.substr(0, tab)] = line.substr(tab + 1);
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [k, v] : loaded) entries_[k] = v;
  return true;
}

Status TacticCache::save(const std::string& path, const std::string& device_tag) const {
  std::ostringstream s;
  s << kCacheMagic << "\t" << device_tag << "\n";
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [k, v] : entries_) s << k << "\t" << v << "\n";
  }
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    if (!f) return not_found("timing cache '" + path + "': cannot write");
    f << s.str();
    if (!f) return internal_error("timing cache '" + path + "': write failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return internal_error("timing cache '" + path + "': rename failed");
  return Status::ok();
}

namespace {
std::map<OpKind, CudaKernelFactory>& registry() {
  static std::map<OpKind, CudaKernelFactory> r;
  return r;
}
}  // namespace

bool CudaKernelRegistry::add(OpKind op, CudaKernelFactory f) {
  registry()[op] = f;
  return true;
}

CudaKernelFactory CudaKernelRegistry::find(OpKind op) {
  auto it = registry().find(op);
  return it == registry().end() ? nullptr : it->second;
}

}  // namespace kiln

#include "backends/tactic_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace kiln {

namespace {

const char kCacheMagic[] = "kiln-timing-cache v1";

// The entries of the file at `path` for `device_tag`; false when it is missing, damaged or
// for another device.
bool read_entries(const std::string& path, const std::string& device_tag,
                  std::map<std::string, std::string>* out) {
  std::ifstream f(path);
  if (!f) return false;
  std::string header;
  if (!std::getline(f, header) || header != std::string(kCacheMagic) + "\t" + device_tag)
    return false;
  std::map<std::string, std::string> loaded;
  std::string line;
  while (std::getline(f, line)) {
    size_t tab = line.find('\t');
    if (tab == std::string::npos || tab == 0) return false;  // damaged: use none of it
    loaded[line.substr(0, tab)] = line.substr(tab + 1);
  }
  *out = std::move(loaded);
  return true;
}

// An exclusive advisory lock on `path`.lock for the scope (other kiln processes and threads
// saving the same cache wait for it).
class FileLock {
 public:
  explicit FileLock(const std::string& path) {
    fd_ = ::open((path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) return;
    while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // releases the lock
  }
  bool held() const { return fd_ >= 0; }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

// A temporary file name no other writer uses: this process, this thread, a counter.
std::string temp_name(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  std::ostringstream s;
  s << path << ".tmp." << ::getpid() << "."
    << std::hash<std::thread::id>()(std::this_thread::get_id()) << "." << counter++;
  return s.str();
}

}  // namespace

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

bool TacticCache::load(const std::string& path, const std::string& device_tag) {
  std::map<std::string, std::string> loaded;
  if (!read_entries(path, device_tag, &loaded)) return false;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [k, v] : loaded) entries_[k] = v;
  return true;
}

Status TacticCache::save(const std::string& path, const std::string& device_tag) const {
  FileLock file_lock(path);
  if (!file_lock.held())
    return not_found("timing cache '" + path +
                     "': cannot create its lock file: " + std::strerror(errno));
  // What other writers saved meanwhile stays; this cache's own entries win on a clash.
  std::map<std::string, std::string> merged;
  read_entries(path, device_tag, &merged);
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [k, v] : entries_) merged[k] = v;
  }
  std::ostringstream s;
  s << kCacheMagic << "\t" << device_tag << "\n";
  for (const auto& [k, v] : merged) s << k << "\t" << v << "\n";
  const std::string tmp = temp_name(path);
  {
    std::ofstream f(tmp, std::ios::trunc);
    if (!f) return not_found("timing cache '" + path + "': cannot write '" + tmp + "'");
    f << s.str();
    f.flush();
    if (!f) {
      std::remove(tmp.c_str());
      return internal_error("timing cache '" + path + "': write failed");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return internal_error("timing cache '" + path + "': rename failed: " + why);
  }
  return Status::ok();
}

}  // namespace kiln

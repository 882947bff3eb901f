// nvJPEG opened with dlopen (nvjpeg.h).
#include "backends/cuda/image/nvjpeg.h"

#include <dlfcn.h>

namespace kiln::nvjpeg {

namespace {

template <class Fn>
void bind(void* handle, const char* name, Fn*& fn, std::string& missing) {
  fn = reinterpret_cast<Fn*>(dlsym(handle, name));
  if (!fn && missing.empty()) missing = name;
}

struct Loaded {
  Api api;
  std::string error;  // why it could not be loaded ("" when it was)
};

Loaded open_library() {
  Loaded l;
  std::string tried;
  void* handle = nullptr;
  for (const char* name : {"libnvjpeg.so.13", "libnvjpeg.so.12", "libnvjpeg.so"}) {
    handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      l.api.library = name;
      break;
    }
    const char* e = dlerror();
    tried += std::string(tried.empty() ? "" : "; ") + (e ? e : name);
  }
  if (!handle) {
    l.error = "cannot load nvJPEG (" + tried + ")";
    return l;
  }
  std::string missing;
  Api& a = l.api;
  bind(handle, "nvjpegCreateSimple", a.create_simple, missing);
  bind(handle, "nvjpegCreateEx", a.create_ex, missing);
  bind(handle, "nvjpegDestroy", a.destroy, missing);
  bind(handle, "nvjpegJpegStateCreate", a.state_create, missing);
  bind(handle, "nvjpegJpegStateDestroy", a.state_destroy, missing);
  bind(handle, "nvjpegGetImageInfo", a.get_image_info, missing);
  bind(handle, "nvjpegDecode", a.decode, missing);
  bind(handle, "nvjpegDecodeBatchedInitialize", a.batched_initialize, missing);
  bind(handle, "nvjpegDecodeBatched", a.decode_batched, missing);
  bind(handle, "nvjpegGetProperty", a.get_property, missing);
  if (!missing.empty()) {
    l.error = a.library + " has no " + missing;
    dlclose(handle);
    return l;
  }
  int v[3] = {0, 0, 0};
  for (int k = 0; k < 3; ++k) a.get_property(k, &v[k]);
  a.version = std::to_string(v[0]) + "." + std::to_string(v[1]) + "." + std::to_string(v[2]);
  return l;  // the handle stays open for the process
}

}  // namespace

Result<const Api*> load() {
  static const Loaded loaded = open_library();
  if (!loaded.error.empty()) return unsupported(loaded.error);
  return &loaded.api;
}

std::string status_text(Status_t s) {
  static const char* const names[] = {"success",
                                      "not initialized",
                                      "invalid parameter",
                                      "bad JPEG",
                                      "JPEG not supported",
                                      "allocator failure",
                                      "execution failed",
                                      "architecture mismatch",
                                      "internal error",
                                      "implementation not supported",
                                      "incomplete bitstream"};
  const bool known = s >= 0 && s < static_cast<int>(sizeof names / sizeof names[0]);
  return "nvJPEG status " + std::to_string(s) + (known ? std::string(" (") + names[s] + ")" : "");
}

}  // namespace kiln::nvjpeg

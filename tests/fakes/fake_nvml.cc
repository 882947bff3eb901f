// A stand-in for the driver's libnvidia-ml.so.1 with the entry points kiln's GPU monitor opens,
// so that the monitor and the server's GPU metrics are tested on machines without a GPU. It
// has two GPUs with fixed readings; GPU 1 cannot read its power, as some boards cannot.
#include <cstdio>
#include <cstring>

namespace {

struct FakeDevice {
  const char* name;
  const char* uuid;
  const char* pci_bus_id;
  unsigned long long total, used;  // bytes
  unsigned util, sm_mhz, milliwatts;
  bool has_power;
};

FakeDevice devices[] = {
    {"Fake GPU A", "GPU-00000000-1111-2222-3333-444444444444", "00000000:1B:00.0", 80ull << 30,
     3ull << 30, 42, 1755, 312500, true},
    {"Fake GPU B", "GPU-55555555-6666-7777-8888-999999999999", "00000000:2C:00.0", 40ull << 30,
     1ull << 29, 7, 1410, 0, false},
};
constexpr unsigned kCount = sizeof devices / sizeof devices[0];
int initialized = 0;

constexpr int kSuccess = 0, kUninitialized = 1, kInvalidArgument = 2, kNotSupported = 3,
              kNotFound = 6;

FakeDevice* device_of(void* handle) {
  for (FakeDevice& d : devices)
    if (handle == &d) return &d;
  return nullptr;
}

}  // namespace

extern "C" {

struct nvmlMemory_t {
  unsigned long long total, free, used;
};
struct nvmlUtilization_t {
  unsigned gpu, memory;
};

int nvmlInit_v2() {
  ++initialized;
  return kSuccess;
}
int nvmlShutdown() {
  if (initialized == 0) return kUninitialized;
  --initialized;
  return kSuccess;
}
const char* nvmlErrorString(int rc) {
  switch (rc) {
    case kSuccess: return "Success";
    case kUninitialized: return "Uninitialized";
    case kInvalidArgument: return "Invalid Argument";
    case kNotSupported: return "Not Supported";
    case kNotFound: return "Not Found";
    default: return "Unknown Error";
  }
}
int nvmlDeviceGetCount_v2(unsigned* count) {
  if (!initialized) return kUninitialized;
  *count = kCount;
  return kSuccess;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned index, void** device) {
  if (!initialized) return kUninitialized;
  if (index >= kCount) return kInvalidArgument;
  *device = &devices[index];
  return kSuccess;
}
int nvmlDeviceGetHandleByPciBusId_v2(const char* id, void** device) {
  if (!initialized) return kUninitialized;
  for (FakeDevice& d : devices)
    if (std::strcmp(d.pci_bus_id, id) == 0) {
      *device = &d;
      return kSuccess;
    }
  return kNotFound;
}
int nvmlDeviceGetName(void* device, char* name, unsigned length) {
  FakeDevice* d = device_of(device);
  if (!d) return kInvalidArgument;
  std::snprintf(name, length, "%s", d->name);
  return kSuccess;
}
int nvmlDeviceGetUUID(void* device, char* uuid, unsigned length) {
  FakeDevice* d = device_of(device);
  if (!d) return kInvalidArgument;
  std::snprintf(uuid, length, "%s", d->uuid);
  return kSuccess;
}
int nvmlDeviceGetMemoryInfo(void* device, nvmlMemory_t* m) {
  FakeDevice* d = device_of(device);
  if (!d) return kInvalidArgument;
  *m = {d->total, d->total - d->used, d->used};
  return kSuccess;
}
int nvmlDeviceGetUtilizationRates(void* device, nvmlUtilization_t* u) {
  FakeDevice* d = device_of(device);
  if (!d) return kInvalidArgument;
  *u = {d->util, d->util / 2};
  return kSuccess;
}
int nvmlDeviceGetClockInfo(void* device, int type, unsigned* mhz) {
  FakeDevice* d = device_of(device);
  if (!d) return kInvalidArgument;
  *mhz = d->sm_mhz;
  return kSuccess;
}
int nvmlDeviceGetPowerUsage(void* device, unsigned* milliwatts) {
  FakeDevice* d = device_of(device);
  if (!d) return kInvalidArgument;
  if (!d->has_power) return kNotSupported;
  *milliwatts = d->milliwatts;
  return kSuccess;
}

}  // extern "C"

#include "topology/nvml.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <map>

namespace baton::topo {
namespace {

// The few NVML declarations used here, as in nvml.h (NVML API v2+).
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr int kNvmlFeatureEnabled = 1;
constexpr unsigned kNvLinkMaxLinks = 18;
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned domain;
  unsigned bus;
  unsigned device;
  unsigned pciDeviceId;
  unsigned pciSubSystemId;
  char busId[32];
};

struct Nvml {
  void* lib = nullptr;
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*count)(unsigned*) = nullptr;
  nvmlReturn_t (*handle)(unsigned, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*pci)(nvmlDevice_t, nvmlPciInfo_t*) = nullptr;
  nvmlReturn_t (*link_state)(nvmlDevice_t, unsigned, int*) = nullptr;
  nvmlReturn_t (*link_remote)(nvmlDevice_t, unsigned, nvmlPciInfo_t*) = nullptr;

  ~Nvml() {
    if (lib != nullptr) dlclose(lib);
  }

  template <typename F>
  bool Load(F* fn, const char* symbol) {
    *fn = reinterpret_cast<F>(dlsym(lib, symbol));
    return *fn != nullptr;
  }
};

}  // namespace

std::string NvmlBusIdToBdf(const std::string& bus_id) {
  std::string s = bus_id;
  const size_t colon = s.find(':');
  if (colon != std::string::npos && colon > 4) s.erase(0, colon - 4);  // 8-digit domain -> 4
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

void ProbeNvml(Topology* t) {
  Nvml n;
  n.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (n.lib == nullptr) {
    const char* err = dlerror();
    t->nvml_note = std::string("NVML not available (") + (err ? err : "libnvidia-ml.so.1 not found") +
                   "): no NVLink information";
    return;
  }
  if (!n.Load(&n.init, "nvmlInit_v2") || !n.Load(&n.shutdown, "nvmlShutdown") ||
      !n.Load(&n.count, "nvmlDeviceGetCount_v2") || !n.Load(&n.handle, "nvmlDeviceGetHandleByIndex_v2") ||
      !n.Load(&n.name, "nvmlDeviceGetName") || !n.Load(&n.pci, "nvmlDeviceGetPciInfo_v3") ||
      !n.Load(&n.link_state, "nvmlDeviceGetNvLinkState") ||
      !n.Load(&n.link_remote, "nvmlDeviceGetNvLinkRemotePciInfo_v2")) {
    t->nvml_note = "NVML library too old (missing v2/v3 entry points): no NVLink information";
    return;
  }
  if (n.init() != kNvmlSuccess) {
    t->nvml_note = "NVML failed to initialise (driver not loaded?): no NVLink information";
    return;
  }
  unsigned count = 0;
  if (n.count(&count) == kNvmlSuccess) {
    std::map<std::string, int> gpu_by_bdf;
    for (const Gpu& g : t->gpus) gpu_by_bdf[g.bdf] = g.index;
    for (unsigned i = 0; i < count; ++i) {
      nvmlDevice_t dev = nullptr;
      nvmlPciInfo_t info{};
      if (n.handle(i, &dev) != kNvmlSuccess || n.pci(dev, &info) != kNvmlSuccess) continue;
      info.busId[sizeof info.busId - 1] = '\0';
      auto it = gpu_by_bdf.find(NvmlBusIdToBdf(info.busId));
      if (it == gpu_by_bdf.end()) continue;
      Gpu& gpu = t->gpus[it->second];
      char name[96] = {};
      if (n.name(dev, name, sizeof name) == kNvmlSuccess) gpu.name = name;
      for (unsigned link = 0; link < kNvLinkMaxLinks; ++link) {
        int active = 0;
        if (n.link_state(dev, link, &active) != kNvmlSuccess || active != kNvmlFeatureEnabled) continue;
        nvmlPciInfo_t remote{};
        if (n.link_remote(dev, link, &remote) != kNvmlSuccess) continue;
        remote.busId[sizeof remote.busId - 1] = '\0';
        auto peer = gpu_by_bdf.find(NvmlBusIdToBdf(remote.busId));
        if (peer != gpu_by_bdf.end()) {
          ++t->nvlinks[{gpu.index, peer->second}];
        } else {
          ++gpu.nvswitch_links;  // the other end is an NVSwitch
        }
      }
    }
  }
  n.shutdown();
  t->nvml_note = "NVML available";
}

}  // namespace baton::topo

// NVML: GPU names and NVLink connections from the NVIDIA driver, loaded at
// run time (dlopen of libnvidia-ml.so.1) so that Baton builds and runs
// without it. Absent is fine: the topology keeps its sysfs view and says why.
#pragma once

#include <string>

#include "topology/topology.h"

namespace baton::topo {

// Adds what NVML knows to `t` (GPU names, NVLink counts between GPUs and to
// NVSwitches), or sets t->nvml_note saying why it could not.
void ProbeNvml(Topology* t);

// NVML's bus id ("00000000:3B:00.0") in sysfs form ("0000:3b:00.0").
std::string NvmlBusIdToBdf(const std::string& bus_id);

}  // namespace baton::topo

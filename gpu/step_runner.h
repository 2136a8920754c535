// Runs a plan of device steps (collectives/device_steps.h) on the GPUs and
// returns when all of them finished.
//
// Streams, events and the GPU scratch space belong to the calling thread (a
// communicator's worker), one set per device, kept from call to call (a
// training job repeats the same collectives) and released with the thread.
#pragma once

#include <cstdint>
#include <vector>

#include "collectives/device_steps.h"
#include "common/status.h"
#include "common/types.h"

namespace baton::gpu {

// Whether every GPU in `devices` can read and write every other's memory
// directly (peer access: NVLink or PCIe P2P), which a reduction kernel
// reading another GPU's buffer needs. Turns peer access on for those pairs
// in this process. False, not an error, when a pair cannot: the caller then
// stages through host memory.
bool EnablePeerAccess(const std::vector<int>& devices);

// Scratch memory on `device` of at least `bytes`, this thread's, grown when
// needed. Valid until the next call on this thread for that device.
Status ThreadScratch(int device, uint64_t bytes, uint8_t** out);

// Runs `steps` (reductions with `dtype`/`redop`) and waits for them.
Status RunDeviceSteps(const std::vector<DeviceStep>& steps, DataType dtype, RedOp redop);

}  // namespace baton::gpu

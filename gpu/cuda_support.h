// Whether this process can use CUDA: decided once, on first use.
//
// CUDA is optional twice over. At build time (-DBATON_CUDA=OFF, or no CUDA
// Toolkit) none of gpu/ talks to a driver and every call here says so. At
// run time a build with CUDA still runs on a machine without a driver or a
// device: the runtime is linked statically and loads the driver itself, so
// the process starts, GetCudaSupport() says why there is no GPU, and host
// buffers work as before.
#pragma once

#include <string>

#include "common/status.h"

namespace baton::gpu {

struct CudaSupport {
  bool built = false;      // compiled with CUDA
  bool available = false;  // a driver and at least one device answered
  int device_count = 0;
  std::string reason;      // why not available ("" when available)
};

const CudaSupport& GetCudaSupport();

// Unavailable with the reason, naming `what` the caller wanted to do, or OK.
Status RequireCuda(const std::string& what);

}  // namespace baton::gpu

// Turns CUDA runtime and driver results into Status values. Only for the
// .cc/.cu files of a build with CUDA; headers of gpu/ never include CUDA.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <string>

#include "common/status.h"

namespace baton::gpu {

// "what: cudaErrorInvalidValue (invalid argument)"; OK for cudaSuccess.
Status FromCuda(cudaError_t err, const std::string& what);
Status FromCuDriver(CUresult err, const std::string& what);

}  // namespace baton::gpu

#define BATON_CUDA_RETURN_IF_ERROR(call, what) BATON_RETURN_IF_ERROR(::baton::gpu::FromCuda((call), (what)))

#include <sys/mman.h>

#include <cuda_runtime_api.h>

#include <cerrno>
#include <string>

#include "gpu/cuda_check.h"
#include "gpu/cuda_support.h"
#include "gpu/pinned_pool.h"

namespace baton::gpu {

Status PinnedRegion::Create(uint64_t bytes, std::unique_ptr<PinnedRegion>* out) {
  BATON_RETURN_IF_ERROR(RequireCuda("pinned staging memory"));
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return Status::Errno("mmap of " + std::to_string(bytes) + " bytes of staging memory", errno);
  Status st = FromCuda(cudaHostRegister(p, bytes, cudaHostRegisterPortable),
                       "pinning " + std::to_string(bytes) + " bytes of staging memory (cudaHostRegister; check "
                       "the service's memlock limit, LimitMEMLOCK)");
  if (!st.ok()) {
    ::munmap(p, bytes);
    return st;
  }
  out->reset(new PinnedRegion(static_cast<uint8_t*>(p), bytes));
  return Status::Ok();
}

PinnedRegion::~PinnedRegion() {
  cudaHostUnregister(data_);
  ::munmap(data_, size_);
}

}  // namespace baton::gpu

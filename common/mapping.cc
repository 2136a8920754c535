#include "common/mapping.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "common/unique_fd.h"

namespace baton {

Mapping::~Mapping() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

Mapping::Mapping(Mapping&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

Mapping& Mapping::operator=(Mapping&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

Status Mapping::MapShared(int fd, size_t size, Mapping* out) {
  if (size == 0) return Status::InvalidArgument("cannot map an empty segment");
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return Status::Errno("mmap of " + std::to_string(size) + " bytes", errno);
  Mapping m;
  m.data_ = static_cast<uint8_t*>(p);
  m.size_ = size;
  *out = std::move(m);
  return Status::Ok();
}

Status CreateMemfd(const char* name, size_t size, int* fd_out) {
  UniqueFd fd(::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd.valid()) return Status::Errno("memfd_create", errno);
  if (::ftruncate(fd.get(), static_cast<off_t>(size)) != 0) {
    return Status::Errno("ftruncate memfd to " + std::to_string(size) + " bytes", errno);
  }
  if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    return Status::Errno("sealing memfd", errno);
  }
  *fd_out = fd.release();
  return Status::Ok();
}

}  // namespace baton

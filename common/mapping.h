// Mapping: an mmap'ed region, unmapped on destruction.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/status.h"

namespace baton {

class Mapping {
 public:
  Mapping() = default;
  ~Mapping();
  Mapping(Mapping&& other) noexcept;
  Mapping& operator=(Mapping&& other) noexcept;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;

  // Maps `size` bytes of `fd` shared and read-write.
  static Status MapShared(int fd, size_t size, Mapping* out);

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Creates an anonymous memfd of `size` bytes (sealed against shrinking so the
// peer that maps it can never be SIGBUS'ed by a truncate).
Status CreateMemfd(const char* name, size_t size, int* fd_out);

}  // namespace baton

// HandlerMemory: memory for the completion handlers of one chain of
// asynchronous operations on a socket (a lane's sends, or its receives),
// where each operation starts from the completion of the one before.
//
// Why: Asio allocates every operation it starts (the operation object
// holds the handler). Its own per-thread recycling works only inside
// io_context::run/poll, and every exchange starts its first operations
// outside, so a small collective cost two malloc/free pairs per lane here.
// Asio frees an operation's memory before it calls the handler, so a chain
// needs one block, reused for as long as the chain lives. An operation
// larger than the block, or a second one while the block is taken, falls
// back to the heap: this is an optimisation, never a limit.
#pragma once

#include <cstddef>
#include <new>
#include <utility>

#include "common/asio.h"

namespace baton::tcp {

class HandlerMemory {
 public:
  HandlerMemory() = default;
  HandlerMemory(const HandlerMemory&) = delete;
  HandlerMemory& operator=(const HandlerMemory&) = delete;

  void* Allocate(size_t bytes) {
    if (!in_use_ && bytes <= sizeof storage_) {
      in_use_ = true;
      return storage_;
    }
    return ::operator new(bytes);
  }

  void Deallocate(void* p) {
    if (p == storage_) {
      in_use_ = false;
    } else {
      ::operator delete(p);
    }
  }

 private:
  // A write of up to 64 buffers (Asio's prepared_buffers) is about 1.2 KiB.
  alignas(std::max_align_t) unsigned char storage_[2048];
  bool in_use_ = false;
};

// The allocator Asio uses for a handler wrapped by WithMemory.
template <typename T>
class HandlerAllocator {
 public:
  using value_type = T;

  explicit HandlerAllocator(HandlerMemory* memory) : memory_(memory) {}
  template <typename U>
  HandlerAllocator(const HandlerAllocator<U>& other) noexcept : memory_(other.memory_) {}

  T* allocate(size_t n) {
    static_assert(alignof(T) <= alignof(std::max_align_t), "the block is aligned for ordinary types only");
    return static_cast<T*>(memory_->Allocate(sizeof(T) * n));
  }
  void deallocate(T* p, size_t) { memory_->Deallocate(p); }

  template <typename U>
  bool operator==(const HandlerAllocator<U>& other) const noexcept {
    return memory_ == other.memory_;
  }

 private:
  template <typename>
  friend class HandlerAllocator;
  HandlerMemory* memory_;
};

// A completion handler whose operations are allocated from `memory`.
template <typename Handler>
class WithMemory {
 public:
  using allocator_type = HandlerAllocator<Handler>;

  WithMemory(HandlerMemory* memory, Handler handler) : memory_(memory), handler_(std::move(handler)) {}

  allocator_type get_allocator() const noexcept { return allocator_type(memory_); }

  template <typename... Args>
  void operator()(Args&&... args) {
    handler_(std::forward<Args>(args)...);
  }

 private:
  HandlerMemory* memory_;
  Handler handler_;
};

}  // namespace baton::tcp

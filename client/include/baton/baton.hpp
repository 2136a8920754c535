// baton.hpp: a thin C++ layer over baton.h. RAII for communicators,
// requests and shared memory; errors become baton::Error exceptions that
// carry the code and the daemon's message. Everything else is the C API.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "baton/baton.h"

namespace baton {

class Error : public std::runtime_error {
 public:
  Error(baton_result_t code, const std::string& message) : std::runtime_error(message), code_(code) {}
  baton_result_t code() const { return code_; }

 private:
  baton_result_t code_;
};

inline void Check(baton_result_t rc, baton_comm_t comm = nullptr) {
  if (rc != baton_success) throw Error(rc, baton_get_last_error(comm));
}

// The Baton datatype of a C++ element type (uint16_t means float16; use the
// C API with baton_bfloat16 for bfloat16 data).
template <typename T>
constexpr baton_datatype_t DataTypeOf() {
  if constexpr (std::is_same_v<T, int8_t>) return baton_int8;
  else if constexpr (std::is_same_v<T, uint8_t>) return baton_uint8;
  else if constexpr (std::is_same_v<T, int32_t>) return baton_int32;
  else if constexpr (std::is_same_v<T, uint32_t>) return baton_uint32;
  else if constexpr (std::is_same_v<T, int64_t>) return baton_int64;
  else if constexpr (std::is_same_v<T, uint64_t>) return baton_uint64;
  else if constexpr (std::is_same_v<T, uint16_t>) return baton_float16;
  else if constexpr (std::is_same_v<T, float>) return baton_float32;
  else if constexpr (std::is_same_v<T, double>) return baton_float64;
  else static_assert(sizeof(T) == 0, "no Baton datatype for this type");
}

// An operation in flight; Wait() (or the destructor) completes it.
class Request {
 public:
  Request() = default;
  Request(baton_request_t r, baton_comm_t c) : req_(r), comm_(c) {}
  Request(Request&& o) noexcept : req_(std::exchange(o.req_, nullptr)), comm_(o.comm_) {}
  Request& operator=(Request&& o) noexcept {
    if (this != &o) {
      Finish();
      req_ = std::exchange(o.req_, nullptr);
      comm_ = o.comm_;
    }
    return *this;
  }
  ~Request() { Finish(); }

  // Throws on failure; returns false if timeout_ms passed first.
  bool Wait(int timeout_ms = -1) {
    if (req_ == nullptr) return true;
    baton_result_t rc = baton_wait(req_, timeout_ms);
    if (rc == baton_in_progress) return false;
    req_ = nullptr;
    Check(rc, comm_);
    return true;
  }

 private:
  void Finish() {
    if (req_ != nullptr) baton_wait(req_, -1);  // a destructor cannot throw: the error stays in async_error
    req_ = nullptr;
  }
  baton_request_t req_ = nullptr;
  baton_comm_t comm_ = nullptr;
};

class Communicator {
 public:
  // Joins rank `rank` of `nranks` (settings from the environment, see docs/environment.md).
  Communicator(const std::string& job_id, int nranks, int rank) {
    Check(baton_comm_init(&comm_, job_id.c_str(), nranks, rank));
  }
  // Joins from BATON_JOB_ID / BATON_WORLD_SIZE / BATON_RANK (as baton-run sets them).
  static Communicator FromEnv() {
    baton_comm_t c = nullptr;
    Check(baton_comm_init_from_env(&c));
    return Communicator(c);
  }
  explicit Communicator(baton_comm_t adopted) : comm_(adopted) {}
  Communicator(Communicator&& o) noexcept : comm_(std::exchange(o.comm_, nullptr)) {}
  Communicator& operator=(Communicator&& o) noexcept {
    if (this != &o) {
      if (comm_) baton_comm_destroy(comm_);
      comm_ = std::exchange(o.comm_, nullptr);
    }
    return *this;
  }
  ~Communicator() {
    if (comm_) baton_comm_destroy(comm_);
  }

  int rank() const {
    int r = 0;
    baton_comm_user_rank(comm_, &r);
    return r;
  }
  int size() const {
    int n = 0;
    baton_comm_count(comm_, &n);
    return n;
  }
  baton_comm_t get() const { return comm_; }

  // Collective; a negative color returns an empty (null) communicator.
  Communicator Split(int color, int key) {
    baton_comm_t c = nullptr;
    Check(baton_comm_split(comm_, color, key, &c), comm_);
    return Communicator(c);
  }
  explicit operator bool() const { return comm_ != nullptr; }

  template <typename T>
  void AllReduce(std::span<const T> send, std::span<T> recv, baton_redop_t op = baton_sum) {
    Check(baton_allreduce(send.data(), recv.data(), recv.size(), DataTypeOf<T>(), op, comm_, nullptr), comm_);
  }
  template <typename T>
  void AllReduce(std::span<T> inout, baton_redop_t op = baton_sum) {
    Check(baton_allreduce(inout.data(), inout.data(), inout.size(), DataTypeOf<T>(), op, comm_, nullptr), comm_);
  }
  template <typename T>
  Request AllReduceAsync(std::span<const T> send, std::span<T> recv, baton_redop_t op = baton_sum) {
    baton_request_t r = nullptr;
    Check(baton_allreduce(send.data(), recv.data(), recv.size(), DataTypeOf<T>(), op, comm_, &r), comm_);
    return Request(r, comm_);
  }
  template <typename T>
  void Broadcast(std::span<T> buf, int root) {
    Check(baton_broadcast(buf.data(), buf.data(), buf.size(), DataTypeOf<T>(), root, comm_, nullptr), comm_);
  }
  template <typename T>
  void AllGather(std::span<const T> send, std::span<T> recv) {
    Check(baton_allgather(send.data(), recv.data(), send.size(), DataTypeOf<T>(), comm_, nullptr), comm_);
  }
  template <typename T>
  void ReduceScatter(std::span<const T> send, std::span<T> recv, baton_redop_t op = baton_sum) {
    Check(baton_reducescatter(send.data(), recv.data(), recv.size(), DataTypeOf<T>(), op, comm_, nullptr), comm_);
  }
  template <typename T>
  void Send(std::span<const T> buf, int peer) {
    Check(baton_send(buf.data(), buf.size(), DataTypeOf<T>(), peer, comm_, nullptr), comm_);
  }
  template <typename T>
  void Recv(std::span<T> buf, int peer) {
    Check(baton_recv(buf.data(), buf.size(), DataTypeOf<T>(), peer, comm_, nullptr), comm_);
  }
  void Barrier() { Check(baton_barrier(comm_, nullptr), comm_); }

 private:
  baton_comm_t comm_ = nullptr;
};

// Shared memory from the daemon (zero-copy buffers), freed on destruction.
template <typename T>
class SharedBuffer {
 public:
  explicit SharedBuffer(size_t count) : count_(count) {
    void* p = nullptr;
    Check(baton_mem_alloc(&p, count * sizeof(T)));
    data_ = static_cast<T*>(p);
  }
  SharedBuffer(const SharedBuffer&) = delete;
  SharedBuffer& operator=(const SharedBuffer&) = delete;
  ~SharedBuffer() { baton_mem_free(data_); }
  T* data() { return data_; }
  size_t size() const { return count_; }
  std::span<T> span() { return {data_, count_}; }
  T& operator[](size_t i) { return data_[i]; }

 private:
  T* data_ = nullptr;
  size_t count_ = 0;
};

}  // namespace baton

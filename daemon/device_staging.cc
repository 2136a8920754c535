#include "daemon/device_staging.h"

#include <algorithm>
#include <thread>

#include "gpu/device_copy.h"

namespace baton {

Status DeviceStaging::WaitForStream(std::chrono::steady_clock::time_point deadline,
                                    const std::atomic<bool>& cancel) const {
  using Clock = std::chrono::steady_clock;
  // Spin a little (the stream is usually there already: the client queued
  // the collective right after the kernel that feeds it), then back off to
  // at most a millisecond between looks.
  auto pause = std::chrono::microseconds(0);
  const auto start = Clock::now();
  while (ready_->load(std::memory_order_acquire) == 0) {
    const auto now = Clock::now();
    if (cancel.load(std::memory_order_relaxed)) {
      return Status::Aborted("the client disconnected before its CUDA stream reached this operation");
    }
    if (now >= deadline) {
      return Status::Timeout("the client's CUDA stream did not reach this operation within the communicator's "
                             "timeout (work queued before it on the stream is still running or is blocked)");
    }
    if (now - start < std::chrono::microseconds(50)) {
      std::this_thread::yield();
      continue;
    }
    pause = std::min<std::chrono::microseconds>(pause * 2 + std::chrono::microseconds(10),
                                                std::chrono::microseconds(1000));
    std::this_thread::sleep_for(pause);
  }
  return Status::Ok();
}

Status DeviceStaging::Prepare(gpu::PinnedPool& pool, RankBuffers* bufs, std::chrono::steady_clock::time_point deadline,
                             const std::atomic<bool>& cancel, bool defer_staging) {
  if (ready_ != nullptr) BATON_RETURN_IF_ERROR(WaitForStream(deadline, cancel));
  return defer_staging ? Status::Ok() : Stage(pool, bufs);
}

Status DeviceStaging::Stage(gpu::PinnedPool& pool, RankBuffers* bufs) {
  BATON_RETURN_IF_ERROR(PointAtHostMemory(pool, bufs));
  if (send_.segment && bufs->send_bytes > 0) {
    BATON_RETURN_IF_ERROR(gpu::CopyToHost(bufs->send, send_.device_ptr, bufs->send_bytes, send_.segment->device()));
  }
  return Status::Ok();
}

Status DeviceStaging::StageLater(gpu::PinnedPool& pool, RankBuffers* bufs, std::vector<StagedSpan>* spans,
                                 bool send_used, bool recv_used) {
  BATON_RETURN_IF_ERROR(PointAtHostMemory(pool, bufs, send_used, recv_used));
  copied_back_by_pipeline_ = true;
  if (send_.segment && bufs->send_bytes > 0 && bufs->send != nullptr) {
    spans->push_back({bufs->send, send_.device_ptr, bufs->send_bytes, send_.segment->device(), true});
  }
  if (recv_.segment && bufs->recv_bytes > 0 && bufs->recv != nullptr) {
    spans->push_back({bufs->recv, recv_.device_ptr, bufs->recv_bytes, recv_.segment->device(), false});
  }
  return Status::Ok();
}

Status DeviceStaging::PointAtHostMemory(gpu::PinnedPool& pool, RankBuffers* bufs, bool send_used, bool recv_used) {
  if (staged_) return Status::Internal("a GPU operation staged twice");
  staged_ = true;
  const bool send_on_device = send_.segment && bufs->send_bytes > 0;
  const bool recv_on_device = recv_.segment && bufs->recv_bytes > 0;
  if (send_on_device && !send_used) bufs->send = nullptr;
  if (recv_on_device && !recv_used) bufs->recv = nullptr;
  if (send_on_device && recv_on_device && send_.segment == recv_.segment && (send_used || recv_used)) {
    // One allocation: overlapping ranges (in place) share one staging buffer.
    uint8_t* lo = std::min(send_.device_ptr, recv_.device_ptr);
    uint8_t* hi = std::max(send_.device_ptr + bufs->send_bytes, recv_.device_ptr + bufs->recv_bytes);
    const bool overlap = send_.device_ptr < recv_.device_ptr + bufs->recv_bytes &&
                         recv_.device_ptr < send_.device_ptr + bufs->send_bytes;
    if (overlap) {
      BATON_RETURN_IF_ERROR(pool.Acquire(static_cast<uint64_t>(hi - lo), &recv_host_));
      uint8_t* host = recv_host_.data();
      bufs->send = host + (send_.device_ptr - lo);
      bufs->recv = host + (recv_.device_ptr - lo);
      return Status::Ok();
    }
  }
  if (send_on_device && send_used) {
    BATON_RETURN_IF_ERROR(pool.Acquire(bufs->send_bytes, &send_host_));
    bufs->send = send_host_.data();
  }
  if (recv_on_device && recv_used) {
    BATON_RETURN_IF_ERROR(pool.Acquire(bufs->recv_bytes, &recv_host_));
    bufs->recv = recv_host_.data();
  }
  return Status::Ok();
}

Status DeviceStaging::Conclude(const RankBuffers& bufs) const {
  if (!staged_ || copied_back_by_pipeline_ || !recv_.segment || bufs.recv_bytes == 0) return Status::Ok();
  return gpu::CopyToDevice(recv_.device_ptr, bufs.recv, bufs.recv_bytes, recv_.segment->device());
}

}  // namespace baton

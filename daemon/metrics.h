// Metrics: daemon-wide counters for the Admin service: operations, bytes
// and a latency histogram per collective, bytes per transport.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>

#include "baton/v1/admin.pb.h"
#include "common/types.h"

namespace baton {

class Metrics {
 public:
  // Upper bounds of the latency buckets, in microseconds; a last bucket
  // takes everything slower.
  static constexpr std::array<uint64_t, 7> kBucketBoundsUs = {10, 100, 1000, 10000, 100000, 1000000, 10000000};

  void RecordOp(Collective c, uint64_t bytes, std::chrono::nanoseconds latency, bool ok);
  void RecordNetwork(uint64_t sent, uint64_t received);
  void RecordLocalCopy(uint64_t bytes);
  // Bytes the local steps of a collective moved on GPUs (device_execution.h).
  void RecordGpuCopy(uint64_t bytes);
  void RecordAuthFailure();

  void Fill(baton::v1::Counters* out) const;

 private:
  struct PerCollective {
    uint64_t ops = 0;
    uint64_t failed = 0;
    uint64_t bytes = 0;
    std::array<uint64_t, kBucketBoundsUs.size() + 1> latency{};
  };
  mutable std::mutex mu_;
  std::array<PerCollective, kNumCollectives> per_collective_{};
  uint64_t tcp_sent_ = 0;
  uint64_t tcp_received_ = 0;
  uint64_t shm_bytes_ = 0;
  uint64_t gpu_bytes_ = 0;
  uint64_t auth_failures_ = 0;
};

}  // namespace baton

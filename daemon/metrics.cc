#include "daemon/metrics.h"

namespace baton {

void Metrics::RecordOp(Collective c, uint64_t bytes, std::chrono::nanoseconds latency, bool ok) {
  const auto idx = static_cast<size_t>(c);
  if (idx >= per_collective_.size()) return;
  const uint64_t us = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(latency).count());
  size_t bucket = 0;
  while (bucket < kBucketBoundsUs.size() && us > kBucketBoundsUs[bucket]) ++bucket;
  std::lock_guard<std::mutex> lock(mu_);
  PerCollective& p = per_collective_[idx];
  ++p.ops;
  if (!ok) ++p.failed;
  p.bytes += bytes;
  ++p.latency[bucket];
}

void Metrics::RecordNetwork(uint64_t sent, uint64_t received) {
  std::lock_guard<std::mutex> lock(mu_);
  tcp_sent_ += sent;
  tcp_received_ += received;
}

void Metrics::RecordLocalCopy(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  shm_bytes_ += bytes;
}

void Metrics::RecordGpuCopy(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  gpu_bytes_ += bytes;
}

void Metrics::RecordAuthFailure() {
  std::lock_guard<std::mutex> lock(mu_);
  ++auth_failures_;
}

void Metrics::Fill(baton::v1::Counters* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  out->set_auth_failures(auth_failures_);
  for (uint64_t b : kBucketBoundsUs) out->add_latency_bucket_bounds_us(b);
  for (size_t i = 0; i < per_collective_.size(); ++i) {
    const PerCollective& p = per_collective_[i];
    if (p.ops == 0) continue;
    auto* c = out->add_collectives();
    c->set_collective(CollectiveName(static_cast<Collective>(i)));
    c->set_ops(p.ops);
    c->set_failed(p.failed);
    c->set_bytes(p.bytes);
    for (uint64_t n : p.latency) c->add_latency_buckets(n);
  }
  auto* tcp = out->add_transports();
  tcp->set_transport("tcp");
  tcp->set_bytes_sent(tcp_sent_);
  tcp->set_bytes_received(tcp_received_);
  auto* shm = out->add_transports();
  shm->set_transport("shm");
  shm->set_bytes_sent(shm_bytes_);
  shm->set_bytes_received(shm_bytes_);
  auto* gpu = out->add_transports();
  gpu->set_transport("gpu");
  gpu->set_bytes_sent(gpu_bytes_);
  gpu->set_bytes_received(gpu_bytes_);
}

}  // namespace baton

#include "daemon/link_calibration.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace baton {

// Why measure: the best algorithm for a size depends on the links' latency
// and bandwidth, which differ by orders of magnitude between loopback, a
// 10 GbE network and InfiniBand. A few exchanges on the communicator's own
// connections at creation cost milliseconds and give the cost model real
// figures. Node 0's figures are broadcast so that every node prices every
// schedule with the same numbers and picks the same algorithm.
Status MeasureLinks(Mesh& mesh, uint64_t comm_uid, int n, int me, std::chrono::steady_clock::time_point deadline,
                    LinkParams* agreed, LinkParams* measured_here) {
  using Clock = std::chrono::steady_clock;
  const MessageStamp stamp{comm_uid, 0, OpSignature{Collective::kBarrier, DataType::kUint8, RedOp::kSum, -1, 0}};
  const ReduceFn no_reduce = [](uint8_t*, const uint8_t*, const uint8_t*, uint64_t) {};
  // Messages sent to and received from each peer so far (each direction is
  // its own ordered stream; with two nodes, next and previous are one peer).
  std::vector<uint32_t> sent(static_cast<size_t>(n), 0), received(static_cast<size_t>(n), 0);
  auto timed = [&](std::vector<NetOp>& ops, double* us) -> Status {
    const auto t0 = Clock::now();
    BATON_RETURN_IF_ERROR(mesh.Exchange(ops, stamp, no_reduce, deadline));
    *us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    return Status::Ok();
  };
  // Latency: rounds of 8-byte messages with every peer.
  constexpr int kRounds = 7;
  std::vector<uint64_t> out(static_cast<size_t>(n), 0), in(static_cast<size_t>(n), 0);
  std::vector<double> rounds;
  for (int r = 0; r < kRounds; ++r) {
    std::vector<NetOp> ops;
    for (int peer = 0; peer < n; ++peer) {
      if (peer == me) continue;
      ops.push_back({NetOp::kSend, peer, reinterpret_cast<uint8_t*>(&out[peer]), 8, sent[peer]++});
      ops.push_back({NetOp::kRecv, peer, reinterpret_cast<uint8_t*>(&in[peer]), 8, received[peer]++});
    }
    double us = 0;
    BATON_RETURN_IF_ERROR(timed(ops, &us));
    rounds.push_back(us);
  }
  std::nth_element(rounds.begin(), rounds.begin() + kRounds / 2, rounds.end());
  LinkParams measured;
  measured.measured = true;
  measured.alpha_us = rounds[kRounds / 2];
  // Bandwidth: ring exchanges of 2 MiB, the median of three. Each round
  // waits for the previous node's data, which keeps the nodes in step.
  constexpr uint64_t kBytes = 2 << 20;
  std::vector<uint8_t> send_buf(kBytes, 0), recv_buf(kBytes, 0);
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  std::vector<double> ring_us(3);
  for (double& us : ring_us) {
    std::vector<NetOp> ops{{NetOp::kSend, next, send_buf.data(), kBytes, sent[next]++},
                           {NetOp::kRecv, prev, recv_buf.data(), kBytes, received[prev]++}};
    BATON_RETURN_IF_ERROR(timed(ops, &us));
  }
  std::nth_element(ring_us.begin(), ring_us.begin() + 1, ring_us.end());
  measured.link_gbps = static_cast<double>(kBytes) / (std::max(ring_us[1] - measured.alpha_us, 1.0) * 1e3);
  // Local copy bandwidth, on the same buffers.
  const auto c0 = Clock::now();
  for (int r = 0; r < 4; ++r) std::memcpy(recv_buf.data(), send_buf.data(), kBytes);
  const double copy_us = std::chrono::duration<double, std::micro>(Clock::now() - c0).count();
  measured.local_gbps = 4.0 * static_cast<double>(kBytes) / (std::max(copy_us, 1.0) * 1e3);
  // Everyone adopts node 0's figures.
  double figures[3] = {measured.alpha_us, measured.link_gbps, measured.local_gbps};
  std::vector<NetOp> share;
  for (int peer = 0; peer < n; ++peer) {
    if (peer == me || (me != 0 && peer != 0)) continue;
    share.push_back({me == 0 ? NetOp::kSend : NetOp::kRecv, peer, reinterpret_cast<uint8_t*>(figures),
                     sizeof figures, me == 0 ? sent[peer]++ : received[peer]++});
  }
  BATON_RETURN_IF_ERROR(mesh.Exchange(share, stamp, no_reduce, deadline));
  if (!std::isfinite(figures[0]) || !std::isfinite(figures[1]) || !std::isfinite(figures[2]) || figures[0] < 0 ||
      figures[1] <= 0 || figures[2] <= 0) {
    return Status::Remote("node 0 sent invalid link calibration figures");
  }
  *agreed = {figures[0], figures[1], figures[2], true};
  *measured_here = measured;
  return Status::Ok();
}

}  // namespace baton

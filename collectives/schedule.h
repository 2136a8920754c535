// Schedules: a collective as data.
//
// A schedule is what one node (one daemon) does for one collective: a list of
// phases, each a list of steps. Buffers are named, not pointed to: a region is
// (which buffer, offset, bytes) where the buffer is a local rank's send or
// receive buffer or the daemon's scratch space. The executor resolves names
// to memory, so the same schedule runs on the in-memory simulator used by the
// tests and on any transport.
//
// Execution rule, relied on by every builder:
//   * phases run one after another;
//   * inside a phase, the local steps (copy, reduce, divide) run first, in
//     order; then all network steps (send, recv, recv-reduce) run concurrently,
//     except that messages to (and from) one peer keep their order.
// So a network step may read what an earlier local step of its phase wrote,
// and a send never reads a region that a receive of the same phase writes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collectives/layout.h"
#include "common/status.h"
#include "common/types.h"

namespace baton {

enum class BufKind : uint8_t { kSend, kRecv, kScratch };

struct Region {
  BufKind buf = BufKind::kScratch;
  int rank = -1;  // owner of a send/recv buffer (a rank local to this node)
  uint64_t offset = 0;
  uint64_t bytes = 0;

  Region Sub(uint64_t off, uint64_t len) const { return {buf, rank, offset + off, len}; }
  bool operator==(const Region&) const = default;
};

enum class StepKind : uint8_t {
  kCopy,        // dst = src
  kReduce,      // dst = dst (op) src
  kDivide,      // dst = dst / divisor (the end of an average)
  kSend,        // send src to node `peer`
  kRecv,        // receive from node `peer` into dst
  kRecvReduce,  // receive from node `peer` and reduce into dst; with a src region,
                //   dst = src (op) incoming instead (dst's old contents unread)
};

struct Step {
  StepKind kind = StepKind::kCopy;
  Region src;
  Region dst;
  int peer = -1;          // node index for network steps
  uint64_t divisor = 0;   // for kDivide

  bool IsNetwork() const { return kind == StepKind::kSend || kind == StepKind::kRecv || kind == StepKind::kRecvReduce; }
  // Whether the step reads `src` and writes `dst`, as the executor runs it
  // (a fold or a division also reads its destination).
  bool ReadsSrc() const {
    return kind == StepKind::kCopy || kind == StepKind::kReduce || kind == StepKind::kSend ||
           (kind == StepKind::kRecvReduce && src.bytes > 0);
  }
  bool WritesDst() const { return kind != StepKind::kSend; }
  bool operator==(const Step&) const = default;
};

struct Phase {
  std::vector<Step> steps;
};

struct Schedule {
  std::vector<Phase> phases;
  uint64_t scratch_bytes = 0;  // scratch space the executor must provide

  std::string ToString() const;  // one line per step, for logs and tests
};

// Whether `a` and `b` have the same steps in the same order, however they
// are cut into phases (a rewrite checking that a part is the shape it knows).
bool SameSteps(const Schedule& a, const Schedule& b);

enum class Algorithm { kAuto, kRing, kRecursiveDoubling, kDirect, kHalvingDoubling, kDoubleTree };
const char* AlgorithmName(Algorithm a);
// Accepts "ring", "rd"/"recursive_doubling", "hd"/"rabenseifner"/
// "halving_doubling" (too long for a client's BATON_ALGO), "tree", "direct",
// "auto".
bool ParseAlgorithm(const std::string& name, Algorithm* out);

struct PlanInput {
  OpSignature sig;
  const NodeLayout* layout = nullptr;
  int node = 0;                      // the node this schedule is for
  Algorithm algorithm = Algorithm::kAuto;
  std::vector<int> in_place_ranks;   // local ranks whose send and recv buffers coincide (AllToAll only)
};

// Thresholds for Algorithm::kAuto, in bytes of one rank's vector.
inline constexpr uint64_t kSmallMessageBytes = 64 * 1024;
// Broadcasts larger than this are pipelined along a chain in chunks of this size.
inline constexpr uint64_t kPipelineChunkBytes = 1 << 20;

// Builds the hierarchical schedule (intra-node reduce/copy, inter-node
// exchange, intra-node copy-out) for every collective except send/recv,
// which are point-to-point and matched outside schedules.
Status BuildSchedule(const PlanInput& in, Schedule* out);

// Whether the schedule of `c` depends on the algorithm at all (Gather,
// Scatter, AllToAll and Barrier have one shape whatever is asked).
bool AlgorithmMatters(Collective c);

// The algorithm kAuto resolves to for this collective and size.
Algorithm ChooseAlgorithm(const OpSignature& sig, int num_nodes, Algorithm requested);

}  // namespace baton

// The side-by-side benchmark's common part: one sweep of AllReduce,
// AllGather, ReduceScatter and Broadcast (float32, sum) over message sizes,
// identical for every system it compares. Each system (Baton, Gloo, Open
// MPI) implements `System` in its own small main file; the sweep, the
// timing and the correctness check live here once, so that the systems are
// measured by the same code.
//
// Method (as nccl-tests): per size, warm-up runs, a barrier, then `iters`
// timed runs back to back; the time is the slowest rank's mean. Before the
// timed runs, one run on pattern data is checked element by element against
// the exact expected result (small integers, so float32 sums are exact).
#ifndef BATON_BENCH_COMPARE_SWEEP_H_
#define BATON_BENCH_COMPARE_SWEEP_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace baton::compare {

// One system's collectives on float32 buffers. Counts are in elements as in
// MPI: AllGather's `count` is what each rank contributes, ReduceScatter's
// what each rank receives. Broadcast is in place from rank 0. A method
// returns false on failure after printing why.
class System {
 public:
  virtual ~System() = default;
  virtual std::string name() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Buffers the collectives are called on; a system may place them in
  // memory it can use directly (Baton: baton_mem_alloc).
  virtual float* Allocate(size_t elements) = 0;
  virtual void Free(float* buffer) = 0;
  virtual bool AllReduce(const float* send, float* recv, size_t count) = 0;
  virtual bool AllGather(const float* send, float* recv, size_t count) = 0;
  virtual bool ReduceScatter(const float* send, float* recv, size_t count) = 0;
  virtual bool Broadcast(float* buffer, size_t count) = 0;
  virtual bool Barrier() = 0;
  // Reductions of the measurement itself across ranks.
  virtual bool MaxDouble(double* value) = 0;
  virtual bool SumU64(uint64_t* value) = 0;
};

struct SweepOptions {
  std::string ops = "allreduce,allgather,reducescatter,broadcast";
  uint64_t min_bytes = 8;
  uint64_t max_bytes = 256ull << 20;
  double factor = 4;
  int iters = 50;                 // timed runs for small sizes...
  uint64_t budget = 512ull << 20;  // ...fewer for large ones: at most this many bytes per size, at least 3
  int warmup = 3;
  std::string json;        // one JSON object per row, appended (rank 0)
  std::string label;       // the configuration, e.g. "1x4"
};

// Parses the options common to every system's main; returns false (after
// printing usage) on a bad option. Unknown options are errors.
bool ParseSweepOptions(int argc, char** argv, SweepOptions* options);

// Runs the sweep; prints a table on rank 0 and appends JSON rows. Returns
// the process exit code: 0, or 1 if a result was wrong or a call failed.
int RunSweep(System& system, const SweepOptions& options);

}  // namespace baton::compare

#endif  // BATON_BENCH_COMPARE_SWEEP_H_

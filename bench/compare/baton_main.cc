// compare-baton: the side-by-side sweep (sweep.h) on Baton. Run every rank
// under baton-run:
//   baton-run --nodes 2 --ranks-per-node 2 -- compare-baton --label 2x2
// Buffers come from baton_mem_alloc, the zero-copy path (like NCCL's
// registered buffers); --user-buffers uses plain heap memory instead, which
// the client library stages through shared memory. --idle SECONDS instead
// creates the communicator, runs one AllReduce and then sleeps: a daemon
// with connected, idle clients, whose CPU use compare.py measures.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "baton/baton.h"
#include "bench/compare/sweep.h"

namespace {

class BatonSystem : public baton::compare::System {
 public:
  BatonSystem(baton_comm_t comm, bool user_buffers) : comm_(comm), user_buffers_(user_buffers) {
    baton_comm_user_rank(comm, &rank_);
    baton_comm_count(comm, &size_);
  }
  std::string name() const override { return user_buffers_ ? "baton-user-buffers" : "baton"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  float* Allocate(size_t elements) override {
    if (user_buffers_) return static_cast<float*>(std::malloc(elements * sizeof(float)));
    void* p = nullptr;
    return Check(baton_mem_alloc(&p, elements * sizeof(float)), "baton_mem_alloc") ? static_cast<float*>(p) : nullptr;
  }
  void Free(float* buffer) override {
    if (user_buffers_) std::free(buffer);
    else baton_mem_free(buffer);
  }
  bool AllReduce(const float* send, float* recv, size_t count) override {
    return Check(baton_allreduce(send, recv, count, baton_float32, baton_sum, comm_, nullptr), "allreduce");
  }
  bool AllGather(const float* send, float* recv, size_t count) override {
    return Check(baton_allgather(send, recv, count, baton_float32, comm_, nullptr), "allgather");
  }
  bool ReduceScatter(const float* send, float* recv, size_t count) override {
    return Check(baton_reducescatter(send, recv, count, baton_float32, baton_sum, comm_, nullptr), "reducescatter");
  }
  bool Broadcast(float* buffer, size_t count) override {
    return Check(baton_broadcast(buffer, buffer, count, baton_float32, 0, comm_, nullptr), "broadcast");
  }
  bool Barrier() override { return Check(baton_barrier(comm_, nullptr), "barrier"); }
  bool MaxDouble(double* value) override {
    return Check(baton_allreduce(value, value, 1, baton_float64, baton_max, comm_, nullptr), "allreduce(max)");
  }
  bool SumU64(uint64_t* value) override {
    return Check(baton_allreduce(value, value, 1, baton_uint64, baton_sum, comm_, nullptr), "allreduce(sum)");
  }

 private:
  bool Check(baton_result_t rc, const char* what) {
    if (rc == baton_success) return true;
    std::fprintf(stderr, "baton rank %d: %s: %s\n", rank_, what, baton_get_last_error(comm_));
    return false;
  }
  baton_comm_t comm_;
  bool user_buffers_;
  int rank_ = 0;
  int size_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  // --user-buffers is this system's own option; the rest are the sweep's.
  bool user_buffers = false;
  double idle_seconds = 0;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--user-buffers") == 0) user_buffers = true;
    else if (std::strcmp(argv[i], "--idle") == 0 && i + 1 < argc) idle_seconds = std::atof(argv[++i]);
    else args.push_back(argv[i]);
  }
  baton::compare::SweepOptions options;
  if (!baton::compare::ParseSweepOptions(static_cast<int>(args.size()), args.data(), &options)) return 2;
  baton_comm_t comm = nullptr;
  if (baton_comm_init_from_env(&comm) != baton_success) {
    std::fprintf(stderr, "compare-baton: %s\n", baton_get_last_error(comm));
    return 1;
  }
  int rc = 0;
  if (idle_seconds > 0) {
    float x = 1;
    rc = baton_allreduce(&x, &x, 1, baton_float32, baton_sum, comm, nullptr) == baton_success ? 0 : 1;
    std::this_thread::sleep_for(std::chrono::duration<double>(idle_seconds));
  } else {
    BatonSystem system(comm, user_buffers);
    rc = baton::compare::RunSweep(system, options);
  }
  baton_comm_destroy(comm);
  return rc;
}

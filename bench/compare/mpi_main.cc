// compare-mpi: the side-by-side sweep (sweep.h) on MPI (Open MPI from
// Debian). Run under mpirun; which path it measures is mpirun's choice:
//   shared memory: mpirun -np 4 --mca pml ob1 --mca btl self,vader compare-mpi
//   TCP only:      mpirun -np 4 --mca pml ob1 --mca btl self,tcp compare-mpi
// The collectives are MPI's own (the tuned component's size-based choice).
#include <mpi.h>

#include <cstdio>
#include <cstdlib>

#include "bench/compare/sweep.h"

namespace {

class MpiSystem : public baton::compare::System {
 public:
  explicit MpiSystem(std::string label) : label_(std::move(label)) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  std::string name() const override { return label_; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  float* Allocate(size_t elements) override { return static_cast<float*>(std::malloc(elements * sizeof(float))); }
  void Free(float* buffer) override { std::free(buffer); }
  bool AllReduce(const float* send, float* recv, size_t count) override {
    return Check(MPI_Allreduce(send, recv, static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
  }
  bool AllGather(const float* send, float* recv, size_t count) override {
    return Check(MPI_Allgather(send, static_cast<int>(count), MPI_FLOAT, recv, static_cast<int>(count), MPI_FLOAT,
                               MPI_COMM_WORLD));
  }
  bool ReduceScatter(const float* send, float* recv, size_t count) override {
    return Check(MPI_Reduce_scatter_block(send, recv, static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
  }
  bool Broadcast(float* buffer, size_t count) override {
    return Check(MPI_Bcast(buffer, static_cast<int>(count), MPI_FLOAT, 0, MPI_COMM_WORLD));
  }
  bool Barrier() override { return Check(MPI_Barrier(MPI_COMM_WORLD)); }
  bool MaxDouble(double* value) override {
    return Check(MPI_Allreduce(MPI_IN_PLACE, value, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
  }
  bool SumU64(uint64_t* value) override {
    return Check(MPI_Allreduce(MPI_IN_PLACE, value, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD));
  }

 private:
  bool Check(int rc) {
    if (rc == MPI_SUCCESS) return true;
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    std::fprintf(stderr, "mpi rank %d: %s\n", rank_, text);
    return false;
  }
  std::string label_;
  int rank_ = 0;
  int size_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  // The system's name in the results says which path mpirun selected.
  const char* path = std::getenv("COMPARE_MPI_NAME");
  baton::compare::SweepOptions options;
  int rc = 2;
  if (baton::compare::ParseSweepOptions(argc, argv, &options)) {
    MpiSystem system(path != nullptr ? path : "openmpi");
    rc = baton::compare::RunSweep(system, options);
  }
  MPI_Finalize();
  return rc;
}

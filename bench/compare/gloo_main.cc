// compare-gloo: the side-by-side sweep (sweep.h) on Gloo (Debian's
// libgloo-dev, TCP transport), the way PyTorch's gloo backend calls it:
// gloo::allreduce (ring), gloo::allgather, gloo::broadcast, with gloo::sum.
// ReduceScatter: Gloo's new API has none and PyTorch's gloo backend (1.13)
// refuses reduce_scatter, so users (FSDP on CPU) fall back to an AllReduce
// and keep their chunk; the sweep measures that. Gloo's older
// ReduceScatterHalvingDoubling returned wrong elements in our runs (Debian
// 0.0~git20220518, 2 ranks, 128 KiB and up), so it is not used.
//
// Launch one process per rank with COMPARE_RANK, COMPARE_SIZE and
// COMPARE_STORE (a directory for Gloo's FileStore rendezvous) set;
// compare.py does that.
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <vector>

#include "bench/compare/sweep.h"

namespace {

class GlooSystem : public baton::compare::System {
 public:
  explicit GlooSystem(std::shared_ptr<gloo::Context> context) : context_(std::move(context)) {}
  std::string name() const override { return "gloo"; }
  int rank() const override { return context_->rank; }
  int size() const override { return context_->size; }
  float* Allocate(size_t elements) override { return static_cast<float*>(std::malloc(elements * sizeof(float))); }
  void Free(float* buffer) override { std::free(buffer); }

  bool AllReduce(const float* send, float* recv, size_t count) override {
    return Guard("allreduce", [&] {
      gloo::AllreduceOptions opts(context_);
      opts.setInput(const_cast<float*>(send), count);
      opts.setOutput(recv, count);
      opts.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
      opts.setTag(next_tag_++);
      gloo::allreduce(opts);
    });
  }
  bool AllGather(const float* send, float* recv, size_t count) override {
    return Guard("allgather", [&] {
      gloo::AllgatherOptions opts(context_);
      opts.setInput(const_cast<float*>(send), count);
      opts.setOutput(recv, count * context_->size);
      opts.setTag(next_tag_++);
      gloo::allgather(opts);
    });
  }
  bool ReduceScatter(const float* send, float* recv, size_t count) override {
    return Guard("reducescatter", [&] {
      const size_t total = count * context_->size;
      if (work_.size() < total) work_.resize(total);
      gloo::AllreduceOptions opts(context_);
      opts.setInput(const_cast<float*>(send), total);
      opts.setOutput(work_.data(), total);
      opts.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
      opts.setTag(next_tag_++);
      gloo::allreduce(opts);
      std::memcpy(recv, work_.data() + count * context_->rank, count * sizeof(float));
    });
  }
  bool Broadcast(float* buffer, size_t count) override {
    return Guard("broadcast", [&] {
      gloo::BroadcastOptions opts(context_);
      opts.setOutput(buffer, count);
      opts.setRoot(0);
      opts.setTag(next_tag_++);
      gloo::broadcast(opts);
    });
  }
  bool Barrier() override {
    return Guard("barrier", [&] {
      gloo::BarrierOptions opts(context_);
      opts.setTag(next_tag_++);
      gloo::barrier(opts);
    });
  }
  bool MaxDouble(double* value) override {
    return Guard("allreduce(max)", [&] {
      gloo::AllreduceOptions opts(context_);
      opts.setOutput(value, 1);
      opts.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::max<double>));
      opts.setTag(next_tag_++);
      gloo::allreduce(opts);
    });
  }
  bool SumU64(uint64_t* value) override {
    return Guard("allreduce(sum)", [&] {
      gloo::AllreduceOptions opts(context_);
      opts.setOutput(value, 1);
      opts.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<uint64_t>));
      opts.setTag(next_tag_++);
      gloo::allreduce(opts);
    });
  }

 private:
  template <typename F>
  bool Guard(const char* what, F&& call) {
    try {
      call();
      return true;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gloo rank %d: %s: %s\n", context_->rank, what, e.what());
      return false;
    }
  }
  std::shared_ptr<gloo::Context> context_;
  std::vector<float> work_;  // ReduceScatter's full AllReduce result
  uint32_t next_tag_ = 1;
};

int EnvInt(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::atoi(v) : -1;
}

}  // namespace

int main(int argc, char** argv) {
  baton::compare::SweepOptions options;
  if (!baton::compare::ParseSweepOptions(argc, argv, &options)) return 2;
  const int rank = EnvInt("COMPARE_RANK"), size = EnvInt("COMPARE_SIZE");
  const char* store_dir = std::getenv("COMPARE_STORE");
  if (rank < 0 || size <= 0 || store_dir == nullptr) {
    std::fprintf(stderr, "compare-gloo: set COMPARE_RANK, COMPARE_SIZE and COMPARE_STORE (see compare.py)\n");
    return 2;
  }
  try {
    gloo::transport::tcp::attr attr("127.0.0.1");
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    gloo::rendezvous::FileStore store(store_dir);
    context->connectFullMesh(store, device);
    GlooSystem system(context);
    return baton::compare::RunSweep(system, options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "compare-gloo rank %d: %s\n", rank, e.what());
    return 1;
  }
}

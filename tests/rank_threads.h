// RunRanks: runs one thread per rank against a LocalCluster, each with its
// own communicator on the daemon of its node, and joins them.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "baton/baton.h"
#include "common/unique_fd.h"
#include "tools/launcher/local_cluster.h"

namespace baton::test {

using launcher::LocalCluster;

// Where a program the tests start lives: $BATON_TEST_BIN_DIR/NAME when that
// is set (a relocated build, such as the bundle scripts/gpu-check.sh runs on
// a GPU machine that has no build tree), else where CMake built it.
std::string TestProgram(const char* name, const char* built_path);

// A cluster of `nodes` daemons built from this tree's batond.
std::unique_ptr<LocalCluster> StartCluster(int nodes, std::vector<std::string> extra_args = {},
                                           std::vector<launcher::NodeLaunch> launch = {});

// node_of_rank[r]: the node (daemon) rank r talks to.
// Returns the init error of the first rank that failed to init ("" if none).
// With destroy == false the body owns the communicator (destroys or aborts it).
std::string RunRanks(const LocalCluster& cluster, const std::vector<int>& node_of_rank, const std::string& job,
                     const std::function<void(int rank, baton_comm_t comm)>& body, double timeout_seconds = 60,
                     bool destroy = true);

// Creates rank `rank` of `world` in `job` through the daemon of `node`
// (communicator `name`, job `secret`: null takes the defaults).
baton_result_t InitRank(const LocalCluster& cluster, int node, const std::string& job, int world, int rank,
                        baton_comm_t* comm, double timeout_seconds = 60, const char* name = nullptr,
                        const char* secret = nullptr);

// What a rank saw from one call: result, message, and how long it took
// (printed when a check fails; speed is never asserted, it belongs in the
// benchmarks).
struct Outcome {
  baton_result_t code = baton_success;
  std::string message;
  double seconds = 0;
};

// One float32 AllReduce of a single element, timed: the call fault tests
// watch fail (how, with which message, after how long).
Outcome TimedAllReduce(baton_comm_t comm);

// Starts tests/helpers/test_rank as rank `rank` of `world` in `job`, on the
// daemon of `node`, a process of its own; `mode` says what it does there
// ("allreduce", "hang", "exit", "alloc": see test_rank.cc). Reap it with
// waitpid. With `stdout_pipe`, its standard output comes to the test
// through that pipe (see FirstLine), so that a test can wait for what the
// rank says instead of guessing how long it takes.
pid_t SpawnRank(const LocalCluster& cluster, int node, const std::string& job, int world, int rank, const char* mode,
                UniqueFd* stdout_pipe = nullptr);

// The first line read from `fd` (without its newline): blocks until one has
// come or the writer is gone.
std::string FirstLine(int fd);

// A unique job id per call, so tests never collide in rendezvous.
std::string UniqueJob(const std::string& prefix);

// Runs this tree's batonctl with `args`; returns its output (stdout and
// stderr) and sets *rc to its exit status.
std::string Batonctl(const std::string& args, int* rc = nullptr);

}  // namespace baton::test

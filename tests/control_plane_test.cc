// The control plane against real daemons: straggler reports while an
// operation waits, coordinated abort that carries the diagnosis to every
// node, a killed peer daemon, and the standard health service.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include "control/grpc_security.h"
#include "gpu/cuda_support.h"
#include "tests/rank_threads.h"

namespace baton::test {
namespace {

// The uid of the first communicator in `batonctl comms` output: the first 16
// characters of the row under the "UID" header. Anything printed before the
// table (a sanitizer's exit report reaches the pipe before stdout is flushed)
// is skipped. Empty when no communicator is listed.
std::string FirstCommUid(const std::string& comms_output) {
  const size_t header = comms_output.rfind("UID ");
  if (header == std::string::npos || (header != 0 && comms_output[header - 1] != '\n')) return "";
  const size_t row = comms_output.find('\n', header);
  if (row == std::string::npos || comms_output.size() < row + 1 + 16) return "";
  const std::string uid = comms_output.substr(row + 1, 16);
  return uid.find_first_not_of("0123456789abcdef") == std::string::npos ? uid : "";
}

// Runs one int32 AllReduce (rank r gives r) of ranks on `node_of_rank` in
// which the last rank calls only once `batonctl stragglers`, asked at the
// first node's daemon, has reported it (its output contains `wanted`), or
// after 15 s. Returns that output and `batonctl inflight` at the same moment
// ("" if it never came); `sums` gets each rank's result.
std::string ReportWhileLastRankIsLate(const LocalCluster& cluster, const std::vector<int>& node_of_rank,
                                      const std::string& wanted, std::vector<int32_t>* sums,
                                      std::chrono::milliseconds linger = {}) {
  const int late = static_cast<int>(node_of_rank.size()) - 1;
  sums->assign(node_of_rank.size(), -1);
  std::atomic<bool> seen{false};
  std::string report;
  std::thread observer([&] {
    for (int i = 0; i < 300 && !seen; ++i) {
      std::string out = Batonctl("--address " + cluster.rendezvous() + " stragglers");
      if (out.find(wanted) != std::string::npos) {
        report = out + Batonctl("--address " + cluster.rendezvous() + " inflight");
        std::this_thread::sleep_for(linger);
        seen = true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    seen = true;  // give up; the caller's assertions will say so
  });
  const std::string err = RunRanks(cluster, node_of_rank, UniqueJob("straggler"), [&](int rank, baton_comm_t comm) {
    if (rank == late) {
      while (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    int32_t v = rank;
    baton_allreduce(&v, &(*sums)[rank], 1, baton_int32, baton_sum, comm, nullptr);
  });
  observer.join();
  EXPECT_EQ(err, "");
  return report;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ControlPlane, HealthServiceAnswersServing) {
  auto cluster = StartCluster(1);
  ASSERT_TRUE(cluster->status().ok());
  int rc = -1;
  EXPECT_EQ(Batonctl("--address " + cluster->rendezvous() + " health", &rc), "SERVING\n");
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(Batonctl("--address " + cluster->rendezvous() + " health baton.v1.Admin", &rc), "SERVING\n");
  std::string out = Batonctl("--address " + cluster->rendezvous() + " health no.such.Service", &rc);
  EXPECT_NE(rc, 0) << out;
}

// `batonctl status` lists the data paths, GPU support among them, with why
// a path is unavailable.
TEST(ControlPlane, StatusSaysWhetherGpuBuffersAreServedAndWhyNot) {
  auto cluster = StartCluster(1);
  ASSERT_TRUE(cluster->status().ok());
  int rc = -1;
  const std::string out = Batonctl("--address " + cluster->rendezvous() + " status", &rc);
  EXPECT_EQ(rc, 0) << out;
  const gpu::CudaSupport& gpus = gpu::GetCudaSupport();
  const std::string want = gpus.available ? "transport   cuda  available   " + std::to_string(gpus.device_count) +
                                                " device(s)"
                                          : "transport   cuda  unavailable  " + gpus.reason;
  EXPECT_NE(out.find(want), std::string::npos) << "want '" << want << "' in:\n" << out;
  EXPECT_NE(out.find("transport   tcp   available"), std::string::npos) << out;
  EXPECT_NE(out.find("connections per peer; congestion control "), std::string::npos) << out;
  EXPECT_NE(out.find("transport   fast  available    blocking collectives of up to 16384 B per rank"),
            std::string::npos)
      << out;
}

TEST(ControlPlane, StatusShowsTheTcpCongestionControlSocketBuffersAndAFastPathTurnedOff) {
  auto cluster = StartCluster(1, {"--tcp-congestion", "reno", "--fast-path-max-bytes", "0", "--tcp-buffer-bytes", "0"});
  ASSERT_TRUE(cluster->status().ok());
  int rc = -1;
  const std::string out = Batonctl("--address " + cluster->rendezvous() + " status", &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("congestion control reno; socket buffers autotuned by the kernel"), std::string::npos) << out;
  EXPECT_NE(out.find("transport   fast  unavailable  turned off (--fast-path-max-bytes 0)"), std::string::npos) << out;
}

TEST(ControlPlane, StragglerIsReportedWhileLateAndTheOperationThenCompletes) {
  auto cluster = StartCluster(2, {"--straggler-warning", "0.3"});
  ASSERT_TRUE(cluster->status().ok());
  // Node 0's daemon is asked: its own ranks arrived; node 1 must tell it about rank 3.
  std::vector<int32_t> sums;
  // Linger so that the late rank's daemon logs its line too.
  const std::string report = ReportWhileLastRankIsLate(*cluster, {0, 0, 1, 1}, "for rank 3 (node n1", &sums,
                                                       std::chrono::milliseconds(500));
  EXPECT_NE(report.find("allreduce seq 1 on comm \"world\""), std::string::npos) << report;
  EXPECT_NE(report.find("for rank 3 (node n1, last completed seq 0)"), std::string::npos) << report;
  for (int r = 0; r < 4; ++r) EXPECT_EQ(sums[r], 6) << "rank " << r;
  // The late rank's own daemon logged it too.
  const std::string log = ReadFile(cluster->dir() + "/node1.log");
  EXPECT_NE(log.find("waiting"), std::string::npos);
  EXPECT_NE(log.find("for rank 3 (node n1, last completed seq 0)"), std::string::npos) << log;
}

// Small collectives of ranks on one node run without batond (the fast
// path), yet batonctl still shows which rank keeps one waiting.
TEST(ControlPlane, StragglerOnTheFastPathIsReported) {
  auto cluster = StartCluster(1, {"--straggler-warning", "0.3"});
  ASSERT_TRUE(cluster->status().ok());
  std::vector<int32_t> sums;
  const std::string report = ReportWhileLastRankIsLate(*cluster, {0, 0, 0}, "for rank 2 (node n0", &sums);
  EXPECT_NE(report.find("allreduce seq 1 on comm \"world\""), std::string::npos) << report;
  EXPECT_NE(report.find("for rank 2 (node n0"), std::string::npos) << report;
  EXPECT_NE(report.find("allreduce(count=1, dtype=int32, op=sum) (fast path op #1"), std::string::npos) << report;
  for (int r = 0; r < 3; ++r) EXPECT_EQ(sums[r], 3) << "rank " << r;
}

// Small collectives on a one-node communicator never reach batond's worker,
// so `ops_completed` does not see them; `batonctl comms` reports them from
// the shared region. Five small AllReduces and a Barrier on the fast path,
// one large AllReduce through batond.
TEST(ControlPlane, CommsCountsFastPathOperationsApartFromDaemonOnes) {
  auto cluster = StartCluster(1);
  ASSERT_TRUE(cluster->status().ok());
  std::atomic<int> ready{0};
  std::atomic<bool> listed{false};
  std::string json;
  std::thread operator_thread([&] {
    while (ready < 2) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    json = Batonctl("--address " + cluster->rendezvous() + " --json comms");
    listed = true;
  });
  std::vector<float> big_in(1 << 16, 1.0f);  // 256 KiB: above the fast path's 16 KiB
  std::string err = RunRanks(*cluster, {0, 0}, UniqueJob("fastcount"), [&](int rank, baton_comm_t comm) {
    std::vector<float> big_out(big_in.size());
    int32_t v = rank, sum = 0;
    for (int i = 0; i < 5; ++i) baton_allreduce(&v, &sum, 1, baton_int32, baton_sum, comm, nullptr);
    baton_allreduce(big_in.data(), big_out.data(), big_in.size(), baton_float32, baton_sum, comm, nullptr);
    baton_barrier(comm, nullptr);
    ++ready;
    while (!listed) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  });
  operator_thread.join();
  ASSERT_EQ(err, "");
  EXPECT_NE(json.find("\"fastPathOps\": \"6\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"opsCompleted\": \"1\""), std::string::npos) << json;
}

TEST(ControlPlane, TimeoutDiagnosisReachesRanksOnEveryNode) {
  auto cluster = StartCluster(2);
  ASSERT_TRUE(cluster->status().ok());
  std::vector<Outcome> out(4);
  std::atomic<int> finished{0};
  std::string err = RunRanks(*cluster, {0, 0, 1, 1}, UniqueJob("timeout"), [&](int rank, baton_comm_t comm) {
    if (rank == 1) {  // never arrives; leaves once the others gave up
      while (finished < 3) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      return;
    }
    out[rank] = TimedAllReduce(comm);
    ++finished;
  }, /*timeout_seconds=*/2);
  ASSERT_EQ(err, "");
  for (int r : {0, 2, 3}) {
    EXPECT_EQ(out[r].code, baton_timeout) << "rank " << r << " after " << out[r].seconds << " s: " << out[r].message;
    EXPECT_NE(out[r].message.find("rank 1 on node n0 did not call it"), std::string::npos)
        << "rank " << r << ": " << out[r].message;
    EXPECT_NE(out[r].message.find("allreduce(count=1"), std::string::npos) << "rank " << r << ": " << out[r].message;
  }
}

// Node 0's ranks call one thing, node 1's another: each node agrees
// locally, so only the message headers can tell. Every rank must hear it.
struct MismatchCase {
  const char* name;
  std::function<baton_result_t(int rank, int32_t* buf, baton_comm_t comm)> call;
  const char* side0;  // what the message must say node 0's ranks called
  const char* side1;
};

TEST(ControlPlane, MismatchOfCountTypeOpOrRootIsReportedOnEveryRank) {
  auto cluster = StartCluster(2);
  ASSERT_TRUE(cluster->status().ok());
  const std::vector<MismatchCase> cases = {
      {"count",
       [](int r, int32_t* b, baton_comm_t c) { return baton_allreduce(b, b, r < 2 ? 64 : 32, baton_int32, baton_sum, c, nullptr); },
       "count=64", "count=32"},
      {"dtype",
       [](int r, int32_t* b, baton_comm_t c) {
         return baton_allreduce(b, b, 16, r < 2 ? baton_int32 : baton_float32, baton_sum, c, nullptr);
       },
       "dtype=int32", "dtype=float32"},
      {"op",
       [](int r, int32_t* b, baton_comm_t c) { return baton_allreduce(b, b, 64, baton_int32, r < 2 ? baton_sum : baton_max, c, nullptr); },
       "op=sum", "op=max"},
      {"root",
       [](int r, int32_t* b, baton_comm_t c) { return baton_broadcast(b, b, 64, baton_int32, r < 2 ? 0 : 3, c, nullptr); },
       "root=0", "root=3"},
  };
  for (const auto& mc : cases) {
    std::vector<std::string> messages(4);
    std::vector<baton_result_t> codes(4, baton_success);
    std::string err = RunRanks(*cluster, {0, 0, 1, 1}, UniqueJob(std::string("mm-") + mc.name), [&](int rank, baton_comm_t comm) {
      std::vector<int32_t> buf(64, 1);
      codes[rank] = mc.call(rank, buf.data(), comm);
      messages[rank] = baton_get_last_error(comm);
    });
    ASSERT_EQ(err, "");
    for (int r = 0; r < 4; ++r) {
      EXPECT_EQ(codes[r], baton_mismatch) << mc.name << " rank " << r << ": " << messages[r];
      EXPECT_NE(messages[r].find(mc.side0), std::string::npos) << mc.name << " rank " << r << ": " << messages[r];
      EXPECT_NE(messages[r].find(mc.side1), std::string::npos) << mc.name << " rank " << r << ": " << messages[r];
    }
  }
}

TEST(ControlPlane, KilledPeerDaemonIsNamedToTheSurvivingRanks) {
  auto cluster = StartCluster(2);
  ASSERT_TRUE(cluster->status().ok());
  Outcome outcome;
  std::string err = RunRanks(*cluster, {0, 1}, UniqueJob("deadpeer"), [&](int rank, baton_comm_t comm) {
    if (rank == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      cluster->Kill(1);  // the daemon of rank 1's node dies mid-collective
      return;
    }
    outcome = TimedAllReduce(comm);
  });
  ASSERT_EQ(err, "");
  EXPECT_EQ(outcome.code, baton_remote_error) << "after " << outcome.seconds << " s: " << outcome.message;
  EXPECT_NE(outcome.message.find("node 1 (n1"), std::string::npos) << outcome.message;
  EXPECT_TRUE(cluster->Alive(0));
}

TEST(ControlPlane, OperatorAbortReachesEveryRankWithTheReason) {
  auto cluster = StartCluster(2);
  ASSERT_TRUE(cluster->status().ok());
  std::vector<std::string> messages(2);
  std::vector<baton_result_t> codes(2, baton_success);
  std::atomic<bool> aborted{false};
  std::thread op([&] {
    // Find the communicator and abort it by uid.
    for (int i = 0; i < 200 && !aborted; ++i) {
      std::string comms = Batonctl("--address " + cluster->rendezvous() + " comms");
      const std::string uid = FirstCommUid(comms);
      if (!uid.empty() && comms.find("ready") != std::string::npos) {
        Batonctl("--address " + cluster->rendezvous() + " abort " + uid + " 'maintenance'");
        aborted = true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  std::string err = RunRanks(*cluster, {0, 1}, UniqueJob("opabort"), [&](int rank, baton_comm_t comm) {
    while (!aborted) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    float x = 1;
    codes[rank] = baton_allreduce(&x, &x, 1, baton_float32, baton_sum, comm, nullptr);
    messages[rank] = baton_get_last_error(comm);
  });
  op.join();
  ASSERT_EQ(err, "");
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(codes[r], baton_aborted) << messages[r];
    EXPECT_NE(messages[r].find("aborted by an operator on node n0"), std::string::npos) << messages[r];
    EXPECT_NE(messages[r].find("maintenance"), std::string::npos) << messages[r];
  }
  // Once the ranks destroyed it, nothing of the communicator is left.
  std::string status;
  for (int i = 0; i < 100; ++i) {
    status = Batonctl("--address " + cluster->rendezvous() + " status");
    if (status.find("communicators 0") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_NE(status.find("communicators 0"), std::string::npos) << status;
}


// A hung node keeps its TCP connections open: only heartbeats notice.
TEST(ControlPlane, HungPeerDaemonIsDeclaredDeadByHeartbeats) {
  auto cluster = StartCluster(2, {"--heartbeat", "0.2", "--peer-timeout", "1.5"});
  ASSERT_TRUE(cluster->status().ok());
  Outcome outcome;
  std::atomic<bool> done{false};
  std::string err = RunRanks(*cluster, {0, 1}, UniqueJob("hung"), [&](int rank, baton_comm_t comm) {
    if (rank == 1) {
      ::kill(cluster->pid(1), SIGSTOP);  // node 1 hangs; its sockets stay open
      while (!done) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      ::kill(cluster->pid(1), SIGCONT);  // wake it so this rank can leave cleanly
      baton_comm_destroy(comm);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    outcome = TimedAllReduce(comm);
    done = true;
    baton_comm_destroy(comm);
  }, /*timeout_seconds=*/60, /*destroy=*/false);
  ASSERT_EQ(err, "");
  EXPECT_EQ(outcome.code, baton_remote_error) << "after " << outcome.seconds << " s: " << outcome.message;
  EXPECT_NE(outcome.message.find("node n1"), std::string::npos) << outcome.message;
  EXPECT_NE(outcome.message.find("missed heartbeats"), std::string::npos) << outcome.message;
}


// Events named `name` in a Chrome trace.
int CountEvents(const google::protobuf::Struct& trace, const std::string& name) {
  int n = 0;
  for (const auto& e : trace.fields().at("traceEvents").list_value().values()) {
    const auto& f = e.struct_value().fields();
    if (f.count("name") && f.at("name").string_value() == name) ++n;
  }
  return n;
}

TEST(ControlPlane, FlightRecorderDumpIsChromeTraceJsonWithTheOperations) {
  const std::string traces = "/tmp/baton-traces-" + std::to_string(::getpid());
  auto cluster = StartCluster(2, {"--trace-dir", traces});
  ASSERT_TRUE(cluster->status().ok());
  std::atomic<int> done{0};
  std::atomic<bool> checked{false};
  std::string trace_text;
  std::thread inspector([&] {
    while (done < 4) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::string comms = Batonctl("--address " + cluster->rendezvous() + " comms");
    const std::string uid = FirstCommUid(comms);
    EXPECT_FALSE(uid.empty()) << comms;
    const std::string file = cluster->dir() + "/trace.json";
    Batonctl("--address " + cluster->rendezvous() + " trace " + uid + " -o " + file);
    trace_text = ReadFile(file);
    Batonctl("--address " + cluster->rendezvous() + " abort " + uid + " 'end of test'");
    checked = true;
  });
  std::string err = RunRanks(*cluster, {0, 0, 1, 1}, UniqueJob("trace"), [&](int rank, baton_comm_t comm) {
    float x[8] = {};
    for (int i = 0; i < 3; ++i) baton_allreduce(x, x, 8, baton_float32, baton_sum, comm, nullptr);
    baton_broadcast(x, x, 8, baton_float32, 0, comm, nullptr);
    ++done;
    while (!checked) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    baton_barrier(comm, nullptr);  // fails: aborted
  });
  inspector.join();
  ASSERT_EQ(err, "");
  google::protobuf::Struct trace;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(trace_text, &trace).ok()) << trace_text;
  // Node 0 has ranks 0 and 1: one slice per rank per op, plus the exchange.
  EXPECT_EQ(CountEvents(trace, "allreduce #1"), 2) << trace_text;
  EXPECT_EQ(CountEvents(trace, "allreduce #3"), 2) << trace_text;
  EXPECT_EQ(CountEvents(trace, "broadcast #4"), 2) << trace_text;
  EXPECT_EQ(CountEvents(trace, "allreduce #2 exchange"), 1) << trace_text;
  // The abort made both daemons dump their recorder.
  int dumps = 0;
  for (int i = 0; i < 100 && dumps < 2; ++i) {
    dumps = 0;
    for (const auto& f : std::filesystem::directory_iterator(traces)) dumps += f.path().extension() == ".json";
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(dumps, 2);
  std::filesystem::remove_all(traces);
}


// batond tells systemd it is ready (Type=notify) and pings the watchdog.
TEST(ControlPlane, NotifiesSystemdReadinessAndWatchdog) {
  const std::string path = "/tmp/baton-notify-" + std::to_string(::getpid()) + ".sock";
  ::unlink(path.c_str());
  int fd = ::socket(AF_UNIX, SOCK_DGRAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setenv("NOTIFY_SOCKET", path.c_str(), 1);
  ::setenv("WATCHDOG_USEC", "200000", 1);
  auto cluster = StartCluster(1);
  ::unsetenv("NOTIFY_SOCKET");
  ::unsetenv("WATCHDOG_USEC");
  ASSERT_TRUE(cluster->status().ok());
  std::string got;
  char buf[512];
  for (int i = 0; i < 5 && got.find("WATCHDOG=1") == std::string::npos; ++i) {
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n)).push_back('|');
  }
  ::close(fd);
  ::unlink(path.c_str());
  EXPECT_NE(got.find("READY=1"), std::string::npos) << got;
  EXPECT_NE(got.find("WATCHDOG=1"), std::string::npos) << got;
}


TEST(ControlPlane, CountersCountOperationsBytesAndTraffic) {
  auto cluster = StartCluster(2);
  ASSERT_TRUE(cluster->status().ok());
  std::string err = RunRanks(*cluster, {0, 1}, UniqueJob("counters"), [&](int, baton_comm_t comm) {
    std::vector<float> x(1000, 1.0f);
    for (int i = 0; i < 5; ++i) baton_allreduce(x.data(), x.data(), x.size(), baton_float32, baton_sum, comm, nullptr);
    baton_broadcast(x.data(), x.data(), x.size(), baton_float32, 0, comm, nullptr);
  });
  ASSERT_EQ(err, "");
  const std::string out = Batonctl("--address " + cluster->rendezvous() + " --json counters");
  google::protobuf::Struct c;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out, &c).ok()) << out;
  std::map<std::string, double> ops, bytes;
  for (const auto& v : c.fields().at("collectives").list_value().values()) {
    const auto& f = v.struct_value().fields();
    // uint64 fields come as JSON strings.
    ops[f.at("collective").string_value()] = std::stod(f.at("ops").string_value());
    bytes[f.at("collective").string_value()] = std::stod(f.at("bytes").string_value());
  }
  EXPECT_EQ(ops["allreduce"], 5);
  EXPECT_EQ(bytes["allreduce"], 5 * 4000);  // node 0's one rank contributed 4000 bytes each time
  EXPECT_EQ(ops["broadcast"], 1);
  double tcp_sent = 0;
  for (const auto& v : c.fields().at("transports").list_value().values()) {
    const auto& f = v.struct_value().fields();
    if (f.at("transport").string_value() == "tcp") tcp_sent = std::stod(f.at("bytesSent").string_value());
  }
  EXPECT_GT(tcp_sent, 5 * 2000) << out;  // every algorithm sends at least half of each vector to the other node
}


// What is really on this machine, through the daemon.
TEST(ControlPlane, TopologyOfThisMachine) {
  auto cluster = StartCluster(1);
  ASSERT_TRUE(cluster->status().ok());
  const std::string tree = Batonctl("--address " + cluster->rendezvous() + " topo");
  EXPECT_NE(tree.find("NUMA node 0: "), std::string::npos) << tree;
  EXPECT_TRUE(tree.find("GPUs: none (") != std::string::npos || tree.find("GPU0 ") != std::string::npos) << tree;
  EXPECT_TRUE(tree.find("RDMA: none (") != std::string::npos || tree.find("RDMA ") != std::string::npos) << tree;
  google::protobuf::Struct json;
  const std::string text = Batonctl("--address " + cluster->rendezvous() + " --json topo");
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(text, &json).ok()) << text;
  EXPECT_GE(json.fields().at("numa").list_value().values_size(), 1);
}


TEST(ControlPlane, LogFileAndTopologyDumpFromSettings) {
  const std::string dir = "/tmp/baton-logs-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  auto cluster = StartCluster(1, {"--debug-file", dir + "/%h-%p.log", "--debug", "DEBUG", "--topo-dump-file",
                                  dir + "/topo.json"});
  ASSERT_TRUE(cluster->status().ok());
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string log = dir + "/" + host + "-" + std::to_string(cluster->pid(0)) + ".log";
  std::string text;
  for (int i = 0; i < 100 && text.find("topology:") == std::string::npos; ++i) {
    text = ReadFile(log);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_NE(text.find("topology:"), std::string::npos) << log << ":\n" << text;
  EXPECT_NE(text.find(std::string("[") + host + " batond "), std::string::npos) << text;  // host on every line
  google::protobuf::Struct topo;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(ReadFile(dir + "/topo.json"), &topo).ok());
  std::filesystem::remove_all(dir);
}

// A CA, a daemon certificate for 127.0.0.1, and two operator certificates
// ("ops", allowed to abort; "intruder", not), made with the openssl CLI.
std::string MakeCertificates() {
  const std::string dir = "/tmp/baton-tls-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string script =
      "set -e; cd " + dir + "; "
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.pem "
      "-days 2 -subj /CN=baton-test-ca 2>/dev/null; "
      "for n in batond ops intruder; do "
      "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout $n.key -out $n.csr "
      "-subj /CN=$n 2>/dev/null; "
      "printf 'subjectAltName=IP:127.0.0.1\n' > san.ext; "
      "openssl x509 -req -in $n.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out $n.pem -days 2 "
      "-extfile san.ext 2>/dev/null; done";
  std::ofstream(dir + "/make.sh") << script << "\n";
  return std::system(("bash " + dir + "/make.sh").c_str()) == 0 ? dir : "";
}

TEST(ControlPlane, TlsGrpcCarriesTheJobAndOnlyListedCertificatesMayAbort) {
  const std::string certs = MakeCertificates();
  ASSERT_FALSE(certs.empty()) << "openssl could not make the test certificates";
  auto cluster = StartCluster(2, {"--tls-cert", certs + "/batond.pem", "--tls-key", certs + "/batond.key", "--tls-ca",
                                  certs + "/ca.pem", "--admin-cns", "ops"});
  ASSERT_TRUE(cluster->status().ok()) << cluster->status().ToString();
  const std::string addr = "--address " + cluster->rendezvous() + " ";
  const std::string ca = "--tls-ca " + certs + "/ca.pem ";
  auto as = [&](const std::string& who) {
    return ca + "--tls-cert " + certs + "/" + who + ".pem --tls-key " + certs + "/" + who + ".key ";
  };

  std::atomic<int> done{0};
  std::atomic<bool> checked{false};
  std::string plaintext, listed, no_cert, intruder, ops;
  int rc_plain = 0, rc_listed = 0, rc_no_cert = 0, rc_intruder = 0, rc_ops = 0;
  std::thread operator_thread([&] {
    while (done < 2) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    plaintext = Batonctl(addr + "--timeout 2 comms", &rc_plain);
    listed = Batonctl(addr + ca + "comms", &rc_listed);
    const std::string uid = FirstCommUid(listed);
    no_cert = Batonctl(addr + ca + "abort " + uid, &rc_no_cert);
    intruder = Batonctl(addr + as("intruder") + "abort " + uid, &rc_intruder);
    ops = Batonctl(addr + as("ops") + "abort " + uid + " 'maintenance'", &rc_ops);
    checked = true;
  });
  std::vector<Outcome> first(2), last(2);
  std::string err = RunRanks(*cluster, {0, 1}, UniqueJob("tls"), [&](int rank, baton_comm_t comm) {
    first[rank] = TimedAllReduce(comm);  // rendezvous and peers over TLS
    ++done;
    while (!checked) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    last[rank] = TimedAllReduce(comm);
  });
  operator_thread.join();
  ASSERT_EQ(err, "");
  for (int r = 0; r < 2; ++r) EXPECT_EQ(first[r].code, baton_success) << first[r].message;
  EXPECT_NE(rc_plain, 0) << "plaintext gRPC was served: " << plaintext;
  EXPECT_EQ(rc_listed, 0) << listed;
  EXPECT_NE(FirstCommUid(listed), "") << "no communicator row in: " << listed;
  EXPECT_NE(rc_no_cert, 0);
  EXPECT_NE(no_cert.find("admin actions need a client certificate"), std::string::npos) << no_cert;
  EXPECT_NE(rc_intruder, 0);
  EXPECT_NE(intruder.find("certificate 'intruder' may not take admin actions"), std::string::npos) << intruder;
  EXPECT_EQ(rc_ops, 0) << ops;
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(last[r].code, baton_aborted) << last[r].message;
    EXPECT_NE(last[r].message.find("maintenance"), std::string::npos) << last[r].message;
  }
  std::system(("rm -rf " + certs).c_str());
}

TEST(ControlPlane, WithoutTlsOnlyLocalCallersMayAbort) {
  EXPECT_TRUE(IsLocalPeer("ipv4:127.0.0.1:5123"));
  EXPECT_TRUE(IsLocalPeer("ipv6:[::1]:5123"));
  EXPECT_TRUE(IsLocalPeer("unix:/run/baton/x"));
  EXPECT_FALSE(IsLocalPeer("ipv4:10.0.0.7:5123"));
  EXPECT_FALSE(IsLocalPeer("ipv6:[fe80::1]:5123"));
  EXPECT_FALSE(IsLocalPeer("ipv4:1.27.0.0:1"));
}

}  // namespace
}  // namespace baton::test

// A rank process for fault and security tests: joins the job from its
// environment (BATON_* as baton-run sets them), then behaves as argv[1] says:
//   hang      - never calls a collective (the test kills it mid-collective)
//   exit      - exits without destroying its communicator
//   allreduce - sums its rank + 1 with the others and checks the result
//   alloc     - (no communicator) allocates BATON_TEST_ALLOC bytes of shared
//               memory, prints "ready" and waits to be killed
// With BATON_TEST_UID set it first becomes that user (uid = gid = the value,
// no supplementary groups), so that tests can play a second local user.
// BATON_TEST_COMM names the communicator (default "world").
// Exit status: 0 success, 10 + baton_result_t when init fails (the message
// on stderr), 2 when the allreduce fails or is wrong.
#include <grp.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "baton/baton.h"

int main(int argc, char** argv) {
  if (const char* uid = std::getenv("BATON_TEST_UID")) {
    const auto id = static_cast<uid_t>(std::strtoul(uid, nullptr, 10));
    if (::setgroups(0, nullptr) != 0 || ::setgid(id) != 0 || ::setuid(id) != 0) {
      std::perror("test_rank: cannot become BATON_TEST_UID");
      return 3;
    }
  }
  const char* mode = argc > 1 ? argv[1] : "exit";
  if (std::strcmp(mode, "alloc") == 0) {
    void* p = nullptr;
    const char* bytes = std::getenv("BATON_TEST_ALLOC");
    if (baton_result_t r = baton_mem_alloc(&p, bytes ? std::strtoull(bytes, nullptr, 10) : 4096); r != baton_success) {
      std::fprintf(stderr, "test_rank: alloc failed: %s\n", baton_get_last_error(nullptr));
      return 10 + r;
    }
    std::printf("ready\n");
    std::fflush(stdout);
    for (;;) ::pause();
  }
  baton_config_t config = BATON_CONFIG_INITIALIZER;
  config.name = std::getenv("BATON_TEST_COMM");
  const char* world = std::getenv("BATON_WORLD_SIZE");
  const char* my_rank = std::getenv("BATON_RANK");
  baton_comm_t comm = nullptr;
  if (baton_result_t r = baton_comm_init_config(&comm, world ? std::atoi(world) : 1, my_rank ? std::atoi(my_rank) : 0,
                                                &config);
      r != baton_success) {
    std::fprintf(stderr, "test_rank: init failed: %s\n", baton_get_last_error(nullptr));
    return 10 + r;
  }
  std::printf("ready\n");
  std::fflush(stdout);
  if (std::strcmp(mode, "hang") == 0) {
    for (;;) ::pause();
  }
  if (std::strcmp(mode, "allreduce") == 0) {
    int rank = 0;
    int size = 0;
    baton_comm_user_rank(comm, &rank);
    baton_comm_count(comm, &size);
    int64_t value = rank + 1;
    if (baton_allreduce(&value, &value, 1, baton_int64, baton_sum, comm, nullptr) != baton_success) {
      std::fprintf(stderr, "test_rank: allreduce failed: %s\n", baton_get_last_error(comm));
      return 2;
    }
    if (value != static_cast<int64_t>(size) * (size + 1) / 2) {
      std::fprintf(stderr, "test_rank: allreduce gave %lld\n", static_cast<long long>(value));
      return 2;
    }
    baton_comm_destroy(comm);
  }
  if (std::strcmp(mode, "exit") == 0) _exit(0);  // as a crash would: no destroy, no cleanup
  return 0;
}

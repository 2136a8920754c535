// A rank process for fault tests: joins the job from its environment
// (BATON_* as baton-run sets them), then behaves as argv[1] says:
//   hang   - never calls a collective (the test kills it mid-collective)
//   exit   - exits without destroying its communicator
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "baton/baton.h"

int main(int argc, char** argv) {
  baton_comm_t comm = nullptr;
  if (baton_comm_init_from_env(&comm) != baton_success) {
    std::fprintf(stderr, "test_rank: init failed: %s\n", baton_get_last_error(nullptr));
    return 1;
  }
  std::printf("ready\n");
  std::fflush(stdout);
  if (argc > 1 && std::strcmp(argv[1], "hang") == 0) {
    for (;;) ::pause();
  }
  return 0;  // "exit": leave without baton_comm_destroy
}

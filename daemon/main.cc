// batond: the Baton node daemon. See `batond --help` and docs/operations.md.
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "common/logging.h"
#include "daemon/daemon.h"

int main(int argc, char** argv) {
  baton::DaemonOptions options;
  baton::Status st = baton::ParseDaemonOptions(argc, argv, &options);
  if (!st.ok()) {
    std::fprintf(stderr, "batond: %s\n", st.message().c_str());
    return 2;
  }
  if (options.help) {
    std::fputs(baton::DaemonUsage(), stdout);
    return 0;
  }
  if (options.print_config) {
    std::fputs(baton::PrintConfig(options).c_str(), stdout);
    return 0;
  }
  std::signal(SIGPIPE, SIG_IGN);
  st = baton::InitLogging("batond", {options.debug, options.debug_subsys, options.debug_file});
  if (!st.ok()) {
    std::fprintf(stderr, "batond: %s\n", st.message().c_str());
    return 2;
  }
  baton::Daemon daemon(options);
  st = daemon.Start();
  if (!st.ok()) {
    spdlog::critical("cannot start: {}", st.ToString());
    return 1;
  }
  daemon.Run();
  spdlog::info("stopped");
  spdlog::default_logger()->flush();
  // Communicator workers are detached threads that may still be finishing;
  // exit without running destructors under them. The OS reclaims every
  // mapping, socket and thread, and clients see their connection close.
  std::_Exit(0);
}

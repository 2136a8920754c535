// Logging: spdlog, configured once from BATON_DEBUG / BATON_DEBUG_SUBSYS.
//   BATON_DEBUG=WARN|INFO|DEBUG|TRACE   (default WARN; the daemon defaults to INFO)
//   BATON_DEBUG_SUBSYS=INIT,NET,COLL,... (a leading ^ excludes the listed ones)
#pragma once

#include <spdlog/spdlog.h>

#include <string>
#include <string_view>

#include "common/status.h"

namespace baton {

enum class Subsys : unsigned {
  kInit = 1, kNet = 2, kColl = 4, kRendezvous = 8, kClient = 16, kAlloc = 32, kTopo = 64, kTuning = 128
};

struct LogSettings {
  std::string level = "INFO";  // ERROR, WARN, INFO, DEBUG, TRACE
  std::string subsys;          // "INIT,NET" or "^ALLOC"; "" = all
  std::string file;            // "" = stderr; %h -> host name, %p -> pid
};

// Configures the default logger. Under systemd (JOURNAL_STREAM set) lines
// carry no timestamp: the journal adds its own.
Status InitLogging(std::string_view program, const LogSettings& settings);
bool SubsysEnabled(Subsys s);

}  // namespace baton

#define BATON_LOG(level, subsys, ...)                                           \
  do {                                                                          \
    if (spdlog::should_log(level) && ::baton::SubsysEnabled(subsys)) {          \
      spdlog::log(level, __VA_ARGS__);                                          \
    }                                                                           \
  } while (0)
#define BATON_INFO(subsys, ...) BATON_LOG(spdlog::level::info, ::baton::Subsys::subsys, __VA_ARGS__)
#define BATON_DEBUG(subsys, ...) BATON_LOG(spdlog::level::debug, ::baton::Subsys::subsys, __VA_ARGS__)
#define BATON_WARN(...) spdlog::warn(__VA_ARGS__)
#define BATON_ERROR(...) spdlog::error(__VA_ARGS__)

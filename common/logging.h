// Logging: spdlog, configured once from BATON_DEBUG / BATON_DEBUG_SUBSYS.
//   BATON_DEBUG=WARN|INFO|DEBUG|TRACE   (default WARN; the daemon defaults to INFO)
//   BATON_DEBUG_SUBSYS=INIT,NET,COLL,... (a leading ^ excludes the listed ones)
#pragma once

#include <spdlog/spdlog.h>

#include <string_view>

namespace baton {

enum class Subsys : unsigned { kInit = 1, kNet = 2, kColl = 4, kRendezvous = 8, kClient = 16, kAlloc = 32 };

// Configures the default logger. `default_level` applies when BATON_DEBUG is unset.
void InitLogging(std::string_view program, spdlog::level::level_enum default_level);
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

#include "common/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <atomic>
#include <cstdlib>
#include <string>

namespace baton {
namespace {

std::atomic<unsigned> g_subsys_mask{~0u};

unsigned ParseSubsys(std::string_view list) {
  bool exclude = !list.empty() && list[0] == '^';
  if (exclude) list.remove_prefix(1);
  unsigned mask = 0;
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    if (item == "INIT") mask |= static_cast<unsigned>(Subsys::kInit);
    else if (item == "NET") mask |= static_cast<unsigned>(Subsys::kNet);
    else if (item == "COLL") mask |= static_cast<unsigned>(Subsys::kColl);
    else if (item == "RENDEZVOUS") mask |= static_cast<unsigned>(Subsys::kRendezvous);
    else if (item == "CLIENT") mask |= static_cast<unsigned>(Subsys::kClient);
    else if (item == "ALLOC") mask |= static_cast<unsigned>(Subsys::kAlloc);
    else if (item == "ALL") mask = ~0u;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return exclude ? ~mask : mask;
}

}  // namespace

void InitLogging(std::string_view program, spdlog::level::level_enum default_level) {
  auto level = default_level;
  if (const char* env = std::getenv("BATON_DEBUG")) {
    std::string v(env);
    if (v == "TRACE") level = spdlog::level::trace;
    else if (v == "DEBUG") level = spdlog::level::debug;
    else if (v == "INFO") level = spdlog::level::info;
    else if (v == "WARN") level = spdlog::level::warn;
    else if (v == "ERROR") level = spdlog::level::err;
  }
  if (const char* env = std::getenv("BATON_DEBUG_SUBSYS")) g_subsys_mask = ParseSubsys(env);
  auto logger = spdlog::get(std::string(program));
  if (!logger) logger = spdlog::stderr_color_mt(std::string(program));
  logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%n %P] [%^%l%$] %v");
  logger->set_level(level);
  spdlog::set_default_logger(logger);
}

bool SubsysEnabled(Subsys s) { return (g_subsys_mask.load(std::memory_order_relaxed) & static_cast<unsigned>(s)) != 0; }

}  // namespace baton

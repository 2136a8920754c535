#include "common/logging.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <unistd.h>

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
    else if (item == "TOPO") mask |= static_cast<unsigned>(Subsys::kTopo);
    else if (item == "TUNING") mask |= static_cast<unsigned>(Subsys::kTuning);
    else if (item == "ALL") mask = ~0u;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return exclude ? ~mask : mask;
}

}  // namespace

namespace {
// BATON_DEBUG_FILE's %h and %p.
std::string ExpandLogPath(const std::string& pattern) {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size() && (pattern[i + 1] == 'h' || pattern[i + 1] == 'p')) {
      out += pattern[i + 1] == 'h' ? std::string(host) : std::to_string(::getpid());
      ++i;
    } else {
      out += pattern[i];
    }
  }
  return out;
}

}  // namespace

Status InitLogging(std::string_view program, const LogSettings& settings) {
  auto level = spdlog::level::info;
  if (settings.level == "TRACE") level = spdlog::level::trace;
  else if (settings.level == "DEBUG") level = spdlog::level::debug;
  else if (settings.level == "WARN") level = spdlog::level::warn;
  else if (settings.level == "ERROR") level = spdlog::level::err;
  g_subsys_mask = settings.subsys.empty() ? ~0u : ParseSubsys(settings.subsys);
  const std::string name(program);
  spdlog::drop(name);
  std::shared_ptr<spdlog::logger> logger;
  if (!settings.file.empty()) {
    const std::string path = ExpandLogPath(settings.file);
    try {
      logger = spdlog::basic_logger_mt(name, path);
    } catch (const spdlog::spdlog_ex& e) {
      return Status::System("cannot open log file " + path + ": " + e.what());
    }
  } else {
    logger = spdlog::stderr_color_mt(name);
  }
  const bool journal = std::getenv("JOURNAL_STREAM") != nullptr && settings.file.empty();
  // Every line names the host, so logs gathered from many nodes stay readable.
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::string safe_host;
  for (const char* c = host; *c; ++c) safe_host += *c == '%' ? '_' : *c;
  logger->set_pattern(journal ? "[%l] %v" : "[%Y-%m-%d %H:%M:%S.%e] [" + safe_host + " %n %P] [%^%l%$] %v");
  logger->set_level(level);
  logger->flush_on(settings.file.empty() ? spdlog::level::warn : spdlog::level::info);  // files: readable while running
  spdlog::set_default_logger(logger);
  return Status::Ok();
}

bool SubsysEnabled(Subsys s) { return (g_subsys_mask.load(std::memory_order_relaxed) & static_cast<unsigned>(s)) != 0; }

}  // namespace baton

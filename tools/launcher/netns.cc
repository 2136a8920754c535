#include "tools/launcher/netns.h"

#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>
#include <filesystem>

namespace baton::launcher {

Status RunCommand(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) return Status::Errno("fork", errno);
  if (pid == 0) {
    const int null_fd = ::open("/dev/null", O_WRONLY);
    if (null_fd >= 0) ::dup2(null_fd, 1);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return Status::Ok();
  std::string cmd;
  for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
  return Status::System("'" + cmd + "' failed (exit status " + std::to_string(WEXITSTATUS(status)) + ")");
}

Status NetnsSet::Create(int nodes) {
  if (::geteuid() != 0) return Status::InvalidArgument("network namespaces need root (CAP_NET_ADMIN)");
  for (const char* p : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"}) {
    if (std::filesystem::exists(p)) {
      ip_ = p;
      break;
    }
  }
  if (ip_.empty()) return Status::Unavailable("the ip command (iproute2) is not installed");
  const int pid = ::getpid();
  const std::string tag = std::to_string(pid % 100000);
  const int subnet = pid % 250 + 1;
  bridge_ = "bb" + tag;
  BATON_RETURN_IF_ERROR(RunCommand({ip_, "link", "add", bridge_, "type", "bridge"}));
  BATON_RETURN_IF_ERROR(RunCommand({ip_, "link", "set", bridge_, "up"}));
  for (int n = 0; n < nodes; ++n) {
    const std::string ns = "baton-" + tag + "-n" + std::to_string(n);
    const std::string inner = "bv" + tag + "n" + std::to_string(n);
    const std::string outer = "bp" + tag + "n" + std::to_string(n);
    const std::string addr = "10.250." + std::to_string(subnet) + "." + std::to_string(n + 1);
    BATON_RETURN_IF_ERROR(RunCommand({ip_, "netns", "add", ns}));
    names_.push_back(ns);
    BATON_RETURN_IF_ERROR(RunCommand({ip_, "link", "add", inner, "type", "veth", "peer", "name", outer}));
    host_links_.push_back(outer);
    BATON_RETURN_IF_ERROR(RunCommand({ip_, "link", "set", inner, "netns", ns}));
    BATON_RETURN_IF_ERROR(RunCommand({ip_, "link", "set", outer, "master", bridge_}));
    BATON_RETURN_IF_ERROR(RunCommand({ip_, "link", "set", outer, "up"}));
    BATON_RETURN_IF_ERROR(RunCommand({ip_, "-n", ns, "addr", "add", addr + "/24", "dev", inner}));
    BATON_RETURN_IF_ERROR(RunCommand({ip_, "-n", ns, "link", "set", inner, "up"}));
    BATON_RETURN_IF_ERROR(RunCommand({ip_, "-n", ns, "link", "set", "lo", "up"}));
    addresses_.push_back(addr);
  }
  return Status::Ok();
}

std::vector<std::string> NetnsSet::ExecPrefix(int node) const { return {ip_, "netns", "exec", names_[node]}; }

Status NetnsSet::SetLink(int node, bool up) {
  return RunCommand({ip_, "link", "set", host_links_[node], up ? "up" : "down"});
}

NetnsSet::~NetnsSet() {
  for (const auto& ns : names_) (void)RunCommand({ip_, "netns", "delete", ns});  // removes its veth pair
  if (!bridge_.empty()) (void)RunCommand({ip_, "link", "delete", bridge_});
}

}  // namespace baton::launcher

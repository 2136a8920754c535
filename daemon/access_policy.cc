#include "daemon/access_policy.h"

#include <grp.h>
#include <pwd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

#include "daemon/options.h"

namespace baton {

ClientIdentity ClientIdentity::FromPeer(pid_t pid, uid_t uid, gid_t gid) {
  ClientIdentity id{pid, uid, gid, {}};
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("Groups:", 0) != 0) continue;
    std::istringstream in(line.substr(7));
    for (gid_t g; in >> g;) id.groups.push_back(g);
    break;
  }
  return id;
}

AccessPolicy::AccessPolicy(std::vector<uid_t> allow_uids, std::vector<gid_t> allow_gids, UserLimits limits)
    : allow_uids_(std::move(allow_uids)), allow_gids_(std::move(allow_gids)), limits_(limits) {}

bool AccessPolicy::MayUseOthersJobs(const ClientIdentity& who) const {
  if (who.uid == 0) return true;
  if (std::find(allow_uids_.begin(), allow_uids_.end(), who.uid) != allow_uids_.end()) return true;
  for (gid_t g : allow_gids_) {
    if (g == who.gid || std::find(who.groups.begin(), who.groups.end(), g) != who.groups.end()) return true;
  }
  return false;
}

Status AccessPolicy::AcquireJob(const std::string& job, const ClientIdentity& who) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, created] = jobs_.try_emplace(job, Job{who.uid, 0});
  if (!created && it->second.owner != who.uid && !MayUseOthersJobs(who)) {
    return Status::PermissionDenied("job '" + job + "' belongs to uid " + std::to_string(it->second.owner) +
                                    " on this node; uid " + std::to_string(who.uid) + " (pid " +
                                    std::to_string(who.pid) +
                                    ") may not join it: use another job id, run as that user, or have the operator "
                                    "add you to batond's allow-users or allow-groups");
  }
  ++it->second.refs;
  return Status::Ok();
}

void AccessPolicy::ReleaseJob(const std::string& job) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(job);
  if (it != jobs_.end() && --it->second.refs <= 0) jobs_.erase(it);
}

Status AccessPolicy::ChargeMemory(uid_t uid, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t& used = usage_[uid].bytes;
  if (used + bytes > limits_.bytes) {
    const uint64_t in_use = used;
    ForgetIfIdle(uid);
    return Status::Exhausted("allocating " + std::to_string(bytes) + " bytes would exceed uid " + std::to_string(uid) +
                             "'s shared-memory limit of " + std::to_string(limits_.bytes) + " bytes on this node (" +
                             std::to_string(in_use) + " in use by its processes); free buffers, end other jobs, or "
                             "raise batond --max-user-memory");
  }
  used += bytes;
  return Status::Ok();
}

void AccessPolicy::ReleaseMemory(uid_t uid, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = usage_.find(uid);
  if (it == usage_.end()) return;
  it->second.bytes -= std::min(it->second.bytes, bytes);
  ForgetIfIdle(uid);
}

Status AccessPolicy::AddClient(uid_t uid) {
  std::lock_guard<std::mutex> lock(mu_);
  int held = 0;
  if (!TryIncrement(uid, &Usage::clients, limits_.clients, &held)) {
    return Status::Exhausted("uid " + std::to_string(uid) + " already has " + std::to_string(held) +
                             " client processes connected to this daemon, its limit (batond --max-user-clients)");
  }
  return Status::Ok();
}

void AccessPolicy::RemoveClient(uid_t uid) {
  std::lock_guard<std::mutex> lock(mu_);
  Decrement(uid, &Usage::clients);
}

Status AccessPolicy::ChargeComm(uid_t uid) {
  std::lock_guard<std::mutex> lock(mu_);
  int held = 0;
  if (!TryIncrement(uid, &Usage::comms, limits_.comms, &held)) {
    return Status::Exhausted("uid " + std::to_string(uid) + " already holds or is joining " + std::to_string(held) +
                             " communicators on this daemon, its limit (batond --max-user-comms); destroy "
                             "communicators it no longer uses");
  }
  return Status::Ok();
}

void AccessPolicy::ReleaseComm(uid_t uid) {
  std::lock_guard<std::mutex> lock(mu_);
  Decrement(uid, &Usage::comms);
}

bool AccessPolicy::TryIncrement(uid_t uid, int Usage::*counter, int limit, int* held) {
  int& n = usage_[uid].*counter;
  *held = n;
  if (n >= limit) return false;
  ++n;
  return true;
}

void AccessPolicy::Decrement(uid_t uid, int Usage::*counter) {
  auto it = usage_.find(uid);
  if (it == usage_.end()) return;
  if (it->second.*counter > 0) --(it->second.*counter);
  ForgetIfIdle(uid);
}

void AccessPolicy::ForgetIfIdle(uid_t uid) {
  auto it = usage_.find(uid);
  if (it != usage_.end() && it->second.bytes == 0 && it->second.clients == 0 && it->second.comms == 0) {
    usage_.erase(it);
  }
}

namespace {

bool AsNumber(const std::string& s, unsigned* out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

}  // namespace

Status ParseUserList(const std::string& text, std::vector<uid_t>* out) {
  out->clear();
  for (const std::string& item : SplitList(text)) {
    unsigned n = 0;
    if (AsNumber(item, &n)) {
      out->push_back(n);
    } else if (const passwd* pw = ::getpwnam(item.c_str())) {
      out->push_back(pw->pw_uid);
    } else {
      return Status::InvalidArgument("allow-users: '" + item + "' is neither a uid nor a user name on this node");
    }
  }
  return Status::Ok();
}

Status ParseGroupList(const std::string& text, std::vector<gid_t>* out) {
  out->clear();
  for (const std::string& item : SplitList(text)) {
    unsigned n = 0;
    if (AsNumber(item, &n)) {
      out->push_back(n);
    } else if (const group* gr = ::getgrnam(item.c_str())) {
      out->push_back(gr->gr_gid);
    } else {
      return Status::InvalidArgument("allow-groups: '" + item + "' is neither a gid nor a group name on this node");
    }
  }
  return Status::Ok();
}

}  // namespace baton

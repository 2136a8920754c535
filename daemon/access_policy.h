// AccessPolicy: what each local user may do on this daemon.
//
// A job belongs to the local user (uid, from SO_PEERCRED) whose client first
// joined it here; it stays theirs while any client holds it. A client of
// another uid may join only if it is root, or the operator allowed its uid
// (--allow-users) or one of its groups (--allow-groups). Shared memory is
// also accounted per user (--max-user-memory), and so are client processes
// (--max-user-clients, each with at most 256 operations in flight) and
// communicators (--max-user-comms), so one user cannot exhaust the node by
// opening many clients.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"

namespace baton {

// A connected client process, as the kernel vouches for it.
struct ClientIdentity {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups (from /proc/PID/status)

  // Reads the supplementary groups of `pid`; missing /proc leaves them empty.
  static ClientIdentity FromPeer(pid_t pid, uid_t uid, gid_t gid);
};

class AccessPolicy {
 public:
  struct UserLimits {
    uint64_t bytes = 32ull << 30;
    int clients = 1024;
    int comms = 4096;
  };
  AccessPolicy(std::vector<uid_t> allow_uids, std::vector<gid_t> allow_gids, UserLimits limits);

  // Takes a reference on `job` for `who`: the first one makes `who` its
  // owner. PermissionDenied (naming the owner) if `who` may not use it.
  Status AcquireJob(const std::string& job, const ClientIdentity& who);
  // Drops one reference; the job is forgotten with its last one.
  void ReleaseJob(const std::string& job);

  // Charges `bytes` of shared memory to `uid`; ResourceExhausted past the limit.
  Status ChargeMemory(uid_t uid, uint64_t bytes);
  void ReleaseMemory(uid_t uid, uint64_t bytes);
  // One more connected client / communicator (or pending join) of `uid`.
  Status AddClient(uid_t uid);
  void RemoveClient(uid_t uid);
  Status ChargeComm(uid_t uid);
  void ReleaseComm(uid_t uid);

 private:
  struct Job {
    uid_t owner = 0;
    int refs = 0;
  };
  bool MayUseOthersJobs(const ClientIdentity& who) const;

  const std::vector<uid_t> allow_uids_;
  const std::vector<gid_t> allow_gids_;
  struct Usage {
    uint64_t bytes = 0;
    int clients = 0;
    int comms = 0;
  };
  // mu_ held for these three. TryIncrement: one more of `counter` unless it
  // is at `limit` (`held` gets the count before).
  bool TryIncrement(uid_t uid, int Usage::*counter, int limit, int* held);
  void Decrement(uid_t uid, int Usage::*counter);
  void ForgetIfIdle(uid_t uid);

  const UserLimits limits_;
  std::mutex mu_;
  std::map<std::string, Job> jobs_;
  std::map<uid_t, Usage> usage_;
};

// Parses "alice,1001" (user names or uids) and "research,2000" (group names
// or gids) as --allow-users and --allow-groups take them.
Status ParseUserList(const std::string& text, std::vector<uid_t>* out);
Status ParseGroupList(const std::string& text, std::vector<gid_t>* out);

}  // namespace baton

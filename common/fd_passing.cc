#include "common/fd_passing.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "common/ipc_protocol.h"

namespace baton {
namespace {
constexpr size_t kMaxFds = ipc::kMaxDevicePieces;  // a RegisterDevice of a span
}

Status SendWithFds(int sock, const void* data, size_t len, const std::vector<int>& fds) {
  if (fds.size() > kMaxFds) return Status::Internal("too many fds in one message");
  iovec iov{const_cast<void*>(data), len};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(int) * kMaxFds)];
  if (!fds.empty()) {
    std::memset(ctrl, 0, sizeof ctrl);
    msg.msg_control = ctrl;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  for (int waits = 0;;) {
    ssize_t n = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
    if (n == static_cast<ssize_t>(len)) return Status::Ok();
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {  // non-blocking socket, peer slow to read
      if (++waits > 10) return Status::System("peer has not read its messages for 10 s");
      pollfd p{sock, POLLOUT, 0};
      ::poll(&p, 1, 1000);
      continue;
    }
    if (n < 0) return Status::Errno("sendmsg", errno);
    return Status::System("short sendmsg on a seqpacket socket");
  }
}

Status RecvWithFds(int sock, void* data, size_t cap, size_t* len, std::vector<UniqueFd>* fds, bool* would_block) {
  *len = 0;
  if (would_block != nullptr) *would_block = false;
  iovec iov{data, cap};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char ctrl[CMSG_SPACE(sizeof(int) * kMaxFds)];
  msg.msg_control = ctrl;
  msg.msg_controllen = sizeof ctrl;
  ssize_t n;
  do {
    n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | (would_block != nullptr ? MSG_DONTWAIT : 0));
  } while (n < 0 && errno == EINTR);
  if (n < 0 && would_block != nullptr && (errno == EAGAIN || errno == EWOULDBLOCK)) {
    *would_block = true;
    return Status::Ok();
  }
  if (n < 0) return Status::Errno("recvmsg", errno);
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      fds->emplace_back(fd);
    }
  }
  if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) return Status::System("message or fds truncated");
  *len = static_cast<size_t>(n);
  return Status::Ok();
}

}  // namespace baton

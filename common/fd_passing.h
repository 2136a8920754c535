// Sending and receiving one message with file descriptors (SCM_RIGHTS).
#pragma once

#include <cstddef>
#include <vector>

#include "common/status.h"
#include "common/unique_fd.h"

namespace baton {

Status SendWithFds(int sock, const void* data, size_t len, const std::vector<int>& fds);
// Receives one packet (at most `cap` bytes); received fds are owned by `fds`.
// Returns the packet length in *len (0 = peer closed). With `would_block`
// the call does not wait: if no packet is queued it sets *would_block and
// returns OK with *len = 0. More than 16 fds, or a longer packet, is an
// error (the fds that came are still owned, so closed).
Status RecvWithFds(int sock, void* data, size_t cap, size_t* len, std::vector<UniqueFd>* fds,
                   bool* would_block = nullptr);

}  // namespace baton

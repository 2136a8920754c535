// Mutual authentication of a data connection between two daemons of a job:
// each side proves it knows the job secret (HMAC-SHA256 over the other's
// random nonce and the connection's Hello) before any data is accepted, so
// a process that does not know the secret cannot join or feed a
// communicator. The secret itself never crosses the wire.
//
//   dialer   -> Hello, nonce_d
//   listener -> nonce_l, HMAC(secret, "L" | nonce_d | Hello)
//   dialer   -> HMAC(secret, "D" | nonce_l | Hello)
//   listener -> 1 byte: accepted
#pragma once

#include <chrono>
#include <string>

#include "common/status.h"
#include "transports/tcp/wire.h"

namespace baton::tcp {

using Deadline = std::chrono::steady_clock::time_point;

// Dialer side, in two halves: Start right after sending `hello` (it does not
// wait for the peer), Finish once this node has served its own incoming
// connections. Lower node indices dial higher ones; splitting the dialer's
// side keeps every wait pointing at a lower node, so a ring of daemons that
// dial each other cannot deadlock.
class DialerHandshake {
 public:
  Status Start(int fd, Deadline deadline);
  Status Finish(int fd, const std::string& secret, const Hello& hello, Deadline deadline);

 private:
  uint8_t nonce_[32] = {};
};
// Listener side, when the communicator claims the connection (it knows the secret).
Status AuthenticateListener(int fd, const std::string& secret, const Hello& hello, Deadline deadline);

}  // namespace baton::tcp

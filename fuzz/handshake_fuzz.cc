// The listener's side of the job-secret handshake against a peer that sends
// anything: it must refuse (never accept without the right proof), never
// crash, and give up at its deadline.
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

#include "fuzz/fuzz_input.h"
#include "transports/tcp/handshake.h"

using namespace baton;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) return 0;
  // The peer's bytes are all there, then it hangs up.
  size_t off = 0;
  while (off < size) {
    const ssize_t n = ::write(fds[1], data + off, size - off);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  ::shutdown(fds[1], SHUT_WR);
  tcp::Hello hello{tcp::kHelloMagic, tcp::kWireVersion, 1, 42, 1, 0};
  const Status st = tcp::AuthenticateListener(fds[0], "the job secret", hello,
                                              std::chrono::steady_clock::now() + std::chrono::milliseconds(20));
  // Without the secret no input can produce the dialer's proof.
  if (st.ok()) std::abort();
  ::close(fds[0]);
  ::close(fds[1]);
  return 0;
}

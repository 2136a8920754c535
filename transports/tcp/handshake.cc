#include "transports/tcp/handshake.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

namespace baton::tcp {
namespace {

constexpr size_t kNonce = 32;
constexpr size_t kMac = 32;
using Nonce = std::array<uint8_t, kNonce>;
using Mac = std::array<uint8_t, kMac>;

int MillisLeft(Deadline d) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(d - std::chrono::steady_clock::now());
  return static_cast<int>(std::max<int64_t>(0, left.count()));
}

// Blocking-style transfer on a socket that may be non-blocking, bounded by `deadline`.
Status Transfer(int fd, uint8_t* buf, size_t len, bool write, Deadline deadline) {
  size_t done = 0;
  while (done < len) {
    pollfd p{fd, static_cast<short>(write ? POLLOUT : POLLIN), 0};
    const int ready = ::poll(&p, 1, MillisLeft(deadline));
    if (ready == 0) return Status::Timeout("authentication handshake timed out");
    if (ready < 0 && errno != EINTR) return Status::Errno("poll", errno);
    if (ready < 0) continue;
    const ssize_t n = write ? ::send(fd, buf + done, len - done, MSG_NOSIGNAL) : ::recv(fd, buf + done, len - done, 0);
    if (n == 0) return Status::Remote("the peer closed the connection during authentication");
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
      return Status::Errno("authentication handshake", errno);
    }
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status Send(int fd, const void* data, size_t len, Deadline d) {
  return Transfer(fd, static_cast<uint8_t*>(const_cast<void*>(data)), len, true, d);
}
Status Recv(int fd, void* data, size_t len, Deadline d) { return Transfer(fd, static_cast<uint8_t*>(data), len, false, d); }

Status RandomNonce(Nonce* n) {
  if (RAND_bytes(n->data(), static_cast<int>(n->size())) != 1) return Status::Internal("RAND_bytes failed");
  return Status::Ok();
}

Mac Compute(const std::string& secret, char role, const Nonce& nonce, const Hello& hello) {
  uint8_t msg[1 + kNonce + sizeof(Hello)];
  msg[0] = static_cast<uint8_t>(role);
  std::memcpy(msg + 1, nonce.data(), kNonce);
  std::memcpy(msg + 1 + kNonce, &hello, sizeof hello);
  Mac mac{};
  unsigned len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()), msg, sizeof msg, mac.data(), &len);
  return mac;
}

bool Equal(const Mac& a, const Mac& b) { return CRYPTO_memcmp(a.data(), b.data(), kMac) == 0; }

const char* kWrongSecret = "authentication failed: the peer does not know this job's secret "
                           "(another job, a forged connection, or ranks started with different BATON_JOB_SECRET)";

}  // namespace

Status DialerHandshake::Start(int fd, Deadline deadline) {
  Nonce mine;
  BATON_RETURN_IF_ERROR(RandomNonce(&mine));
  std::memcpy(nonce_, mine.data(), kNonce);
  return Send(fd, mine.data(), kNonce, deadline);
}

Status DialerHandshake::Finish(int fd, const std::string& secret, const Hello& hello, Deadline deadline) {
  Nonce mine;
  std::memcpy(mine.data(), nonce_, kNonce);
  Nonce theirs;
  Mac proof;
  BATON_RETURN_IF_ERROR(Recv(fd, theirs.data(), kNonce, deadline));
  BATON_RETURN_IF_ERROR(Recv(fd, proof.data(), kMac, deadline));
  if (!Equal(proof, Compute(secret, 'L', mine, hello))) return Status::Remote(kWrongSecret);
  const Mac answer = Compute(secret, 'D', theirs, hello);
  BATON_RETURN_IF_ERROR(Send(fd, answer.data(), kMac, deadline));
  uint8_t verdict = 0;
  BATON_RETURN_IF_ERROR(Recv(fd, &verdict, 1, deadline));
  if (verdict != 1) return Status::Remote(kWrongSecret);
  return Status::Ok();
}

Status AuthenticateListener(int fd, const std::string& secret, const Hello& hello, Deadline deadline) {
  Nonce theirs;
  BATON_RETURN_IF_ERROR(Recv(fd, theirs.data(), kNonce, deadline));
  Nonce mine;
  BATON_RETURN_IF_ERROR(RandomNonce(&mine));
  const Mac proof = Compute(secret, 'L', theirs, hello);
  BATON_RETURN_IF_ERROR(Send(fd, mine.data(), kNonce, deadline));
  BATON_RETURN_IF_ERROR(Send(fd, proof.data(), kMac, deadline));
  Mac answer;
  BATON_RETURN_IF_ERROR(Recv(fd, answer.data(), kMac, deadline));
  const uint8_t verdict = Equal(answer, Compute(secret, 'D', mine, hello)) ? 1 : 0;
  BATON_RETURN_IF_ERROR(Send(fd, &verdict, 1, deadline));
  if (verdict != 1) return Status::Remote(kWrongSecret);
  return Status::Ok();
}

}  // namespace baton::tcp

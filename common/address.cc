#include "common/address.h"

#include <charconv>

namespace baton {

std::string HostPort::ToString() const {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

Status ParseHostPort(const std::string& text, HostPort* out) {
  std::string host;
  std::string port;
  if (!text.empty() && text[0] == '[') {
    const size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return Status::InvalidArgument("'" + text + "' is not [ipv6]:port");
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string::npos) return Status::InvalidArgument("'" + text + "' is not host:port");
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  unsigned value = 0;
  auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (host.empty() || ec != std::errc() || ptr != port.data() + port.size() || value > 65535) {
    return Status::InvalidArgument("'" + text + "' is not host:port with a port in 0..65535");
  }
  out->host = host;
  out->port = static_cast<uint16_t>(value);
  return Status::Ok();
}

}  // namespace baton

// host:port parsing ("10.0.0.1:7100", "[::1]:7100", "node3:7100").
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace baton {

struct HostPort {
  std::string host;
  uint16_t port = 0;
  std::string ToString() const;  // brackets IPv6 literals
};

Status ParseHostPort(const std::string& text, HostPort* out);

}  // namespace baton

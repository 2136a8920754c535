// Boost.Asio, with the include Boost 1.74's awaitable.hpp forgets under C++20.
#pragma once

#include <utility>  // must precede boost/asio.hpp (std::exchange in awaitable.hpp)

#include <boost/asio.hpp>

#include <sys/un.h>

#include <cstring>
#include <string>

namespace baton {

// Unix SOCK_SEQPACKET sockets (Boost 1.74 has no local::seq_packet_protocol).
using UnixSeqPacket = boost::asio::generic::seq_packet_protocol;

inline UnixSeqPacket::endpoint UnixSeqPacketEndpoint(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  return UnixSeqPacket::endpoint(&addr, sizeof addr, 0);
}

}  // namespace baton

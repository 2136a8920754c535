// TcpListener: accepts data connections from peer daemons on the daemon's
// io_context, reads their Hello (bounded in time and size) and hands them
// to the ConnectionBroker.
#pragma once

#include "common/asio.h"
#include <atomic>
#include <string>

#include "common/status.h"
#include "transports/tcp/connection_broker.h"

namespace baton::tcp {

class TcpListener {
 public:
  TcpListener(boost::asio::io_context& io, ConnectionBroker& broker) : io_(io), broker_(broker), acceptor_(io) {}

  // Binds host:port (port 0 picks one); `bound` gets the actual address.
  Status Listen(const std::string& host_port, std::string* bound);
  void Stop();
  uint64_t rejected() const { return rejected_.load(); }

 private:
  void AcceptNext();

  boost::asio::io_context& io_;
  ConnectionBroker& broker_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::atomic<uint64_t> rejected_{0};
};

}  // namespace baton::tcp

#include "transports/tcp/tcp_listener.h"

#include "common/address.h"
#include "common/logging.h"

namespace baton::tcp {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {
constexpr auto kHelloTimeout = std::chrono::seconds(10);

// One accepted connection until its Hello is read.
struct Greeting : std::enable_shared_from_this<Greeting> {
  Greeting(asio::io_context& io, tcp::socket s) : socket(std::move(s)), timer(io) {}
  tcp::socket socket;
  asio::steady_timer timer;
  Hello hello{};
};
}  // namespace

Status TcpListener::Listen(const std::string& host_port, std::string* bound) {
  HostPort hp;
  BATON_RETURN_IF_ERROR(ParseHostPort(host_port, &hp));
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(hp.host == "*" ? "0.0.0.0" : hp.host, ec);
  if (ec) return Status::InvalidArgument("--listen needs a numeric IP address, got '" + hp.host + "'");
  tcp::endpoint ep(addr, hp.port);
  acceptor_.open(ep.protocol(), ec);
  if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor_.bind(ep, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Status::System("cannot listen on " + host_port + ": " + ec.message());
  auto local = acceptor_.local_endpoint();
  *bound = HostPort{local.address().to_string(), local.port()}.ToString();
  AcceptNext();
  return Status::Ok();
}

void TcpListener::Stop() {
  boost::system::error_code ignored;
  acceptor_.close(ignored);
}

void TcpListener::AcceptNext() {
  acceptor_.async_accept([this](const boost::system::error_code& ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted) return;
    if (!ec) {
      auto g = std::make_shared<Greeting>(io_, std::move(socket));
      g->timer.expires_after(kHelloTimeout);
      g->timer.async_wait([g](const boost::system::error_code& tec) {
        if (!tec) {
          boost::system::error_code ignored;
          g->socket.close(ignored);
        }
      });
      asio::async_read(g->socket, asio::buffer(&g->hello, sizeof g->hello),
                       [this, g](const boost::system::error_code& rec, size_t) {
                         g->timer.cancel();
                         const Hello& h = g->hello;
                         if (rec || !IsValidHello(h)) {
                           ++rejected_;
                           BATON_WARN("rejected a data connection: {}",
                                      rec ? rec.message() : std::string("bad hello (not a Baton daemon, or another version)"));
                           return;
                         }
                         BATON_DEBUG(kNet, "data connection for comm {:x} from node {}", h.comm_uid, h.from_node);
                         TuneDataSocket(g->socket.native_handle());
                         broker_.Deliver(h.comm_uid, static_cast<Channel>(h.channel), h.from_node,
                                         UniqueFd(g->socket.release()));
                       });
    }
    AcceptNext();
  });
}

}  // namespace baton::tcp

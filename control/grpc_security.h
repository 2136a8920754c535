// GrpcSecurity: TLS for every gRPC connection of a daemon (rendezvous,
// peer control, admin) and who may take admin actions.
//
// Without TLS files, gRPC runs in plaintext, as before. Admin actions
// (abort) are then allowed only to callers on this host (loopback or a
// Unix socket).
//
// With tls-cert/tls-key/tls-ca, the server speaks TLS only. It asks every
// caller for a certificate and verifies any it gets against tls-ca. Daemons
// present their own certificate when they call each other. Then:
//   - peer-control calls need a verified certificate (another daemon);
//   - admin actions need a verified certificate whose common name is listed
//     in admin-cns;
//   - read-only admin queries need no certificate, only TLS.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace baton {

struct TlsFiles {
  std::string cert;  // PEM certificate (chain) of this daemon
  std::string key;   // its private key
  std::string ca;    // PEM bundle that signs every daemon's and operator's certificate
  bool enabled() const { return !cert.empty() || !key.empty() || !ca.empty(); }
};

class GrpcSecurity {
 public:
  // Reads the files (all three, or none) once at start; `admin_cns` are the
  // certificate common names allowed to take admin actions.
  static Status Configure(const TlsFiles& files, std::vector<std::string> admin_cns);

  static bool tls();
  static std::shared_ptr<grpc::ServerCredentials> ServerCredentials();
  // For this daemon's calls to other daemons.
  static std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials();

  // OK, or PermissionDenied saying what the caller lacks.
  static Status AuthorizeAdmin(const grpc::ServerContext& ctx);
  static Status AuthorizePeer(const grpc::ServerContext& ctx);
};

// True for callers on this host: "ipv4:127.*", "ipv6:[::1]", "unix:".
bool IsLocalPeer(const std::string& grpc_peer);

// Reads a PEM file whole (InvalidArgument naming the setting if unreadable).
Status ReadPem(const std::string& path, const char* setting, std::string* out);

}  // namespace baton

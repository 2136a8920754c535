#include "control/grpc_security.h"

#include <grpc/grpc_security_constants.h>

#include <algorithm>
#include <fstream>
#include <iterator>

namespace baton {
namespace {

struct Config {
  bool tls = false;
  std::string cert, key, ca;
  std::vector<std::string> admin_cns;
};

Config& Global() {
  static Config config;
  return config;
}

// The verified certificate's common name, or "" if the caller sent none.
std::string VerifiedCommonName(const grpc::ServerContext& ctx) {
  auto auth = ctx.auth_context();
  if (!auth || !auth->IsPeerAuthenticated()) return "";
  for (const auto& v : auth->FindPropertyValues(GRPC_X509_CN_PROPERTY_NAME)) return std::string(v.data(), v.size());
  return "";
}

}  // namespace

Status ReadPem(const std::string& path, const char* setting, std::string* out) {
  std::ifstream in(path);
  if (!in) return Status::InvalidArgument(std::string(setting) + " " + path + " cannot be read");
  out->assign(std::istreambuf_iterator<char>(in), {});
  if (out->find("-----BEGIN") == std::string::npos) {
    return Status::InvalidArgument(std::string(setting) + " " + path + " is not a PEM file");
  }
  return Status::Ok();
}

Status GrpcSecurity::Configure(const TlsFiles& files, std::vector<std::string> admin_cns) {
  Config c;
  c.admin_cns = std::move(admin_cns);
  if (files.enabled()) {
    if (files.cert.empty() || files.key.empty() || files.ca.empty()) {
      return Status::InvalidArgument("TLS needs all of tls-cert, tls-key and tls-ca (got only some of them)");
    }
    BATON_RETURN_IF_ERROR(ReadPem(files.cert, "tls-cert", &c.cert));
    BATON_RETURN_IF_ERROR(ReadPem(files.key, "tls-key", &c.key));
    BATON_RETURN_IF_ERROR(ReadPem(files.ca, "tls-ca", &c.ca));
    c.tls = true;
  }
  Global() = std::move(c);
  return Status::Ok();
}

bool GrpcSecurity::tls() { return Global().tls; }

std::shared_ptr<grpc::ServerCredentials> GrpcSecurity::ServerCredentials() {
  const Config& c = Global();
  if (!c.tls) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions opts(GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
  opts.pem_root_certs = c.ca;
  opts.pem_key_cert_pairs.push_back({c.key, c.cert});
  return grpc::SslServerCredentials(opts);
}

std::shared_ptr<grpc::ChannelCredentials> GrpcSecurity::ChannelCredentials() {
  const Config& c = Global();
  if (!c.tls) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions opts;
  opts.pem_root_certs = c.ca;
  opts.pem_private_key = c.key;
  opts.pem_cert_chain = c.cert;
  return grpc::SslCredentials(opts);
}

Status GrpcSecurity::AuthorizeAdmin(const grpc::ServerContext& ctx) {
  const Config& c = Global();
  if (!c.tls) {
    if (IsLocalPeer(ctx.peer())) return Status::Ok();
    // A peer gRPC could not name (an in-process call, as the fuzzer makes) is not local either.
    const std::string peer = ctx.peer().empty() ? "an unknown peer" : ctx.peer();
    return Status::PermissionDenied("admin actions from " + peer +
                                    " are refused: without TLS only callers on this host may take them "
                                    "(configure tls-cert/tls-key/tls-ca and admin-cns for remote operators)");
  }
  const std::string cn = VerifiedCommonName(ctx);
  if (cn.empty()) {
    return Status::PermissionDenied("admin actions need a client certificate signed by this daemon's tls-ca "
                                    "(batonctl --tls-cert/--tls-key) whose common name is in admin-cns");
  }
  if (std::find(c.admin_cns.begin(), c.admin_cns.end(), cn) == c.admin_cns.end()) {
    return Status::PermissionDenied("certificate '" + cn + "' may not take admin actions on this daemon (admin-cns)");
  }
  return Status::Ok();
}

Status GrpcSecurity::AuthorizePeer(const grpc::ServerContext& ctx) {
  if (!Global().tls || !VerifiedCommonName(ctx).empty()) return Status::Ok();
  return Status::PermissionDenied("peer-control calls need a daemon certificate signed by tls-ca");
}

bool IsLocalPeer(const std::string& peer) {
  return peer.rfind("ipv4:127.", 0) == 0 || peer.rfind("ipv6:[::1]", 0) == 0 || peer.rfind("unix:", 0) == 0 ||
         peer.rfind("ipv6:[::ffff:127.", 0) == 0;
}

}  // namespace baton

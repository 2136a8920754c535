// gRPC Join requests as any network peer can send them (the serialized
// protobuf), handled by the real rendezvous service. Waits are cut to 1 ms so
// that joins that wait for other ranks time out at once.
#include <grpcpp/server_context.h>

#include "control/rendezvous_service.h"

using namespace baton;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static RendezvousService* service = new RendezvousService();  // state across inputs, like a long-lived daemon
  baton::v1::JoinRequest req;
  if (!req.ParseFromArray(data, static_cast<int>(size))) return 0;
  req.set_timeout_ms(1);
  grpc::ServerContext ctx;
  baton::v1::JoinResponse resp;
  (void)service->Join(&ctx, &req, &resp);
  return 0;
}

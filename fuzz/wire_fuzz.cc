// What a remote daemon sends on a data connection: Hello, collective
// headers against what this node expects, point-to-point headers against a
// posted receive.
#include "daemon/p2p_link.h"
#include "fuzz/fuzz_input.h"
#include "transports/tcp/wire.h"

using namespace baton;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  (void)tcp::IsValidHello(in.Take<tcp::Hello>());

  const auto got = in.Take<tcp::DataHeader>();
  MessageStamp want;
  want.comm_uid = in.Take<uint64_t>();
  want.seq = in.Take<uint64_t>();
  want.sig = {static_cast<Collective>(in.Take<uint8_t>() % 10), static_cast<DataType>(in.Take<uint8_t>() % 10),
              static_cast<RedOp>(in.Take<uint8_t>() % 5), in.Take<int32_t>(), in.Take<uint64_t>()};
  (void)tcp::CheckHeader(got, want, in.Take<uint32_t>(), in.Take<uint64_t>(), "node n1 (10.0.0.2:7100)");

  const auto p2p = in.Take<tcp::P2pHeader>();
  LocalOp recv;
  recv.sig = {Collective::kRecv, static_cast<DataType>(in.Take<uint8_t>() % 10), RedOp::kSum, 0, in.Take<uint64_t>()};
  recv.bufs.recv_bytes = in.Take<uint64_t>();
  (void)P2pLink::CheckSizes(p2p, recv);
  return 0;
}

// A client's shared-memory descriptor, as the daemon checks it: any bytes,
// any communicator shape. Accepted descriptors must describe buffers that
// fit the sizes their collective implies.
#include <cstdlib>

#include "daemon/descriptor_check.h"
#include "fuzz/fuzz_input.h"

using namespace baton;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  const auto d = in.Take<ipc::Descriptor>();
  const int nranks = 1 + in.Take<uint16_t>() % 4096;
  const int rank = in.Take<uint16_t>() % nranks;
  CheckedDescriptor out;
  if (!CheckDescriptor(d, nranks, rank, &out).ok()) return 0;
  // Accepted: the signature is the descriptor's, and sizes are whole elements.
  const uint64_t esize = DataTypeSize(out.sig.dtype);
  if (static_cast<uint32_t>(out.sig.collective) != d.collective || out.send_bytes % esize != 0 ||
      out.recv_bytes % esize != 0) {
    std::abort();
  }
  // The range check never accepts a buffer that runs past its segment.
  const uint64_t segment = in.Take<uint64_t>();
  if (CheckBufferRange(d.send.offset, out.send_bytes, segment, "send").ok() &&
      (d.send.offset > segment || out.send_bytes > segment - d.send.offset)) {
    std::abort();
  }
  return 0;
}

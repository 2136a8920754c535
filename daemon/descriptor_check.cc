#include "daemon/descriptor_check.h"

#include <cstdio>
#include <string>

namespace baton {
namespace {

std::string ToHex(uint32_t v) {
  char text[16];
  std::snprintf(text, sizeof text, "%x", v);
  return text;
}

}  // namespace

Status CheckDescriptor(const ipc::Descriptor& d, int nranks, int my_rank, CheckedDescriptor* out) {
  if (!IsValidCollective(d.collective) || d.collective == static_cast<uint32_t>(Collective::kSplit)) {
    return Status::InvalidArgument("unknown collective " + std::to_string(d.collective));
  }
  if ((d.flags & ~ipc::kKnownDescriptorFlags) != 0) {
    return Status::InvalidArgument("unknown descriptor flags 0x" + ToHex(d.flags & ~ipc::kKnownDescriptorFlags));
  }
  out->stream_ordered = (d.flags & ipc::kDescStreamOrdered) != 0;
  if (!IsValidDataType(d.dtype)) return Status::InvalidArgument("unknown data type " + std::to_string(d.dtype));
  const auto coll = static_cast<Collective>(d.collective);
  if (IsReduction(coll) && !IsValidRedOp(d.redop)) {
    return Status::InvalidArgument("unknown reduction " + std::to_string(d.redop));
  }
  const bool has_peer = coll == Collective::kSend || coll == Collective::kRecv;
  if ((HasRoot(coll) || has_peer) && (d.root < 0 || d.root >= nranks)) {
    return Status::InvalidArgument(std::string(has_peer ? "peer " : "root ") + std::to_string(d.root) +
                                   " is not a rank of the communicator (size " + std::to_string(nranks) + ")");
  }
  out->sig = {coll, static_cast<DataType>(d.dtype), IsReduction(coll) ? static_cast<RedOp>(d.redop) : RedOp::kSum,
              HasRoot(coll) || has_peer ? d.root : -1, coll == Collective::kBarrier ? 0 : d.count};
  BufferExtents ext;
  const uint64_t esize = DataTypeSize(out->sig.dtype);
  if (!ComputeExtents(coll, out->sig.count, nranks, my_rank, out->sig.root, &ext) ||
      __builtin_mul_overflow(ext.send_elems, esize, &out->send_bytes) ||
      __builtin_mul_overflow(ext.recv_elems, esize, &out->recv_bytes)) {
    return Status::InvalidArgument("count " + std::to_string(d.count) + " overflows the buffer size");
  }
  return Status::Ok();
}

Status CheckBufferRange(uint64_t offset, uint64_t bytes, uint64_t segment_size, const char* which) {
  if (offset > segment_size || bytes > segment_size - offset) {
    return Status::InvalidArgument(std::string(which) + " buffer [offset " + std::to_string(offset) + ", " +
                                   std::to_string(bytes) + " bytes) runs past the end of its " +
                                   std::to_string(segment_size) + "-byte segment");
  }
  return Status::Ok();
}

}  // namespace baton

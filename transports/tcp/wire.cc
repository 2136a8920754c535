#include "transports/tcp/wire.h"

namespace baton::tcp {

bool IsValidHello(const Hello& h) {
  return h.magic == kHelloMagic && h.version == kWireVersion &&
         (h.channel == static_cast<uint16_t>(Channel::kCollective) ||
          h.channel == static_cast<uint16_t>(Channel::kPointToPoint) ||
          (h.channel > 16 && h.channel < 16 + kMaxSocketsPerPeer));
}

DataHeader MakeHeader(const MessageStamp& stamp, uint32_t index, uint64_t bytes) {
  DataHeader h{};
  h.magic = kDataMagic;
  h.index = index;
  h.comm_uid = stamp.comm_uid;
  h.seq = stamp.seq;
  h.bytes = bytes;
  h.count = stamp.sig.count;
  h.collective = static_cast<uint32_t>(stamp.sig.collective);
  h.dtype = static_cast<uint32_t>(stamp.sig.dtype);
  h.redop = static_cast<uint32_t>(stamp.sig.redop);
  h.root = stamp.sig.root;
  return h;
}

bool HeaderMatches(const DataHeader& got, const MessageStamp& want, uint32_t want_index, uint64_t want_bytes) {
  return got.magic == kDataMagic && got.comm_uid == want.comm_uid && got.seq == want.seq &&
         got.index == want_index && got.bytes == want_bytes &&
         got.collective == static_cast<uint32_t>(want.sig.collective) &&
         got.dtype == static_cast<uint32_t>(want.sig.dtype) && got.redop == static_cast<uint32_t>(want.sig.redop) &&
         got.root == want.sig.root && got.count == want.sig.count;
}

Status CheckHeader(const DataHeader& got, const MessageStamp& want, uint32_t want_index, uint64_t want_bytes,
                   const std::string& peer_desc) {
  if (got.magic != kDataMagic || got.comm_uid != want.comm_uid) {
    return Status::Remote("corrupt or foreign message from " + peer_desc + " (bad magic or communicator id)");
  }
  if (!IsValidCollective(got.collective) || !IsValidDataType(got.dtype) || !IsValidRedOp(got.redop)) {
    return Status::Remote("malformed message header from " + peer_desc);
  }
  OpSignature theirs{static_cast<Collective>(got.collective), static_cast<DataType>(got.dtype),
                     static_cast<RedOp>(got.redop), got.root, got.count};
  if (got.seq != want.seq || !(theirs == want.sig)) {
    return Status::Mismatch("collective mismatch: ranks on " + peer_desc + " called " + theirs.ToString() + " as op #" +
                            std::to_string(got.seq) + " while this node's ranks called " + want.sig.ToString() +
                            " as op #" + std::to_string(want.seq));
  }
  if (got.index != want_index || got.bytes != want_bytes) {
    return Status::Internal("schedule disagreement with " + peer_desc + ": message " + std::to_string(got.index) +
                            " of " + std::to_string(got.bytes) + " bytes, expected message " +
                            std::to_string(want_index) + " of " + std::to_string(want_bytes) +
                            " bytes (are both daemons the same Baton version and algorithm setting?)");
  }
  return Status::Ok();
}

}  // namespace baton::tcp

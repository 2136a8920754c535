// The vocabulary shared by client, daemon, schedules and wire format:
// data types, reductions, collectives. Numeric values are part of the client
// ABI (baton.h) and of the daemon-to-daemon wire format: never renumber.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace baton {

enum class DataType : uint32_t {
  kInt8 = 0, kUint8 = 1, kInt32 = 2, kUint32 = 3, kInt64 = 4, kUint64 = 5,
  kFloat16 = 6, kBfloat16 = 7, kFloat32 = 8, kFloat64 = 9,
};
inline constexpr uint32_t kNumDataTypes = 10;

enum class RedOp : uint32_t { kSum = 0, kProd = 1, kMin = 2, kMax = 3, kAvg = 4 };
inline constexpr uint32_t kNumRedOps = 5;

enum class Collective : uint32_t {
  kAllReduce = 0, kBroadcast = 1, kReduce = 2, kAllGather = 3, kReduceScatter = 4,
  kScatter = 5, kGather = 6, kAllToAll = 7, kSend = 8, kRecv = 9, kBarrier = 10,
  // Internal: the all-gather of (color, key) behind baton_comm_split. Never
  // accepted in a client descriptor.
  kSplit = 11,
};
inline constexpr uint32_t kNumCollectives = 12;

size_t DataTypeSize(DataType t);
const char* DataTypeName(DataType t);
const char* RedOpName(RedOp op);
const char* CollectiveName(Collective c);

std::optional<DataType> ParseDataType(std::string_view name);
std::optional<RedOp> ParseRedOp(std::string_view name);
std::optional<Collective> ParseCollective(std::string_view name);

inline bool IsValidDataType(uint32_t v) { return v < kNumDataTypes; }
inline bool IsValidRedOp(uint32_t v) { return v < kNumRedOps; }
inline bool IsValidCollective(uint32_t v) { return v < kNumCollectives; }

// True for collectives that combine values with a reduction.
bool IsReduction(Collective c);
// True for collectives that name a root rank.
bool HasRoot(Collective c);

// What every rank of a collective must agree on at one sequence number. Two
// ranks whose signatures differ have made mismatched calls.
struct OpSignature {
  Collective collective = Collective::kAllReduce;
  DataType dtype = DataType::kFloat32;
  RedOp redop = RedOp::kSum;
  int32_t root = 0;  // -1 when the collective has no root
  uint64_t count = 0;

  bool operator==(const OpSignature&) const = default;
  // "allreduce(count=1024, dtype=float32, op=sum)"
  std::string ToString() const;
};

// Element counts of a rank's send and receive buffers for a collective of
// `count` elements over `nranks` ranks (see docs/api.md for the table).
struct BufferExtents {
  uint64_t send_elems = 0;
  uint64_t recv_elems = 0;
};
// Returns false if the sizes overflow 64 bits.
bool ComputeExtents(Collective c, uint64_t count, int nranks, int rank, int root,
                    BufferExtents* out);

}  // namespace baton

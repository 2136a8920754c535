#include "common/types.h"

#include <array>

namespace baton {
namespace {

constexpr std::array<const char*, kNumDataTypes> kTypeNames = {
    "int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "bfloat16", "float32", "float64"};
constexpr std::array<size_t, kNumDataTypes> kTypeSizes = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
constexpr std::array<const char*, kNumRedOps> kOpNames = {"sum", "prod", "min", "max", "avg"};
constexpr std::array<const char*, kNumCollectives> kCollNames = {
    "allreduce", "broadcast", "reduce", "allgather", "reducescatter", "scatter",
    "gather", "alltoall", "send", "recv", "barrier", "split"};

template <typename E, size_t N>
std::optional<E> ParseName(const std::array<const char*, N>& names, std::string_view name) {
  for (size_t i = 0; i < N; ++i) {
    if (name == names[i]) return static_cast<E>(i);
  }
  return std::nullopt;
}

}  // namespace

size_t DataTypeSize(DataType t) { return kTypeSizes.at(static_cast<size_t>(t)); }
const char* DataTypeName(DataType t) {
  return IsValidDataType(static_cast<uint32_t>(t)) ? kTypeNames[static_cast<size_t>(t)] : "?";
}
const char* RedOpName(RedOp op) {
  return IsValidRedOp(static_cast<uint32_t>(op)) ? kOpNames[static_cast<size_t>(op)] : "?";
}
const char* CollectiveName(Collective c) {
  return IsValidCollective(static_cast<uint32_t>(c)) ? kCollNames[static_cast<size_t>(c)] : "?";
}

std::optional<DataType> ParseDataType(std::string_view name) {
  if (name == "float" || name == "fp32") return DataType::kFloat32;
  if (name == "double" || name == "fp64") return DataType::kFloat64;
  if (name == "half" || name == "fp16") return DataType::kFloat16;
  if (name == "bf16") return DataType::kBfloat16;
  return ParseName<DataType>(kTypeNames, name);
}
std::optional<RedOp> ParseRedOp(std::string_view name) { return ParseName<RedOp>(kOpNames, name); }
std::optional<Collective> ParseCollective(std::string_view name) {
  return ParseName<Collective>(kCollNames, name);
}

bool IsReduction(Collective c) {
  return c == Collective::kAllReduce || c == Collective::kReduce || c == Collective::kReduceScatter;
}

bool HasRoot(Collective c) {
  return c == Collective::kBroadcast || c == Collective::kReduce || c == Collective::kScatter ||
         c == Collective::kGather;
}

std::string OpSignature::ToString() const {
  std::string s = CollectiveName(collective);
  s += "(count=" + std::to_string(count) + ", dtype=" + DataTypeName(dtype);
  if (IsReduction(collective)) s += std::string(", op=") + RedOpName(redop);
  if (HasRoot(collective)) s += ", root=" + std::to_string(root);
  if (collective == Collective::kSend || collective == Collective::kRecv) {
    s += ", peer=" + std::to_string(root);
  }
  return s + ")";
}

bool ComputeExtents(Collective c, uint64_t count, int nranks, int rank, int root,
                    BufferExtents* out) {
  const uint64_t n = static_cast<uint64_t>(nranks);
  uint64_t all = 0;
  if (__builtin_mul_overflow(count, n, &all)) return false;
  const bool is_root = rank == root;
  BufferExtents e;
  switch (c) {
    case Collective::kAllReduce: e = {count, count}; break;
    case Collective::kBroadcast: e = {is_root ? count : 0, count}; break;
    case Collective::kReduce: e = {count, is_root ? count : 0}; break;
    case Collective::kAllGather:
    case Collective::kSplit: e = {count, all}; break;
    case Collective::kReduceScatter: e = {all, count}; break;
    case Collective::kScatter: e = {is_root ? all : 0, count}; break;
    case Collective::kGather: e = {count, is_root ? all : 0}; break;
    case Collective::kAllToAll: e = {all, all}; break;
    case Collective::kSend: e = {count, 0}; break;
    case Collective::kRecv: e = {0, count}; break;
    case Collective::kBarrier: e = {0, 0}; break;
  }
  *out = e;
  return true;
}

}  // namespace baton

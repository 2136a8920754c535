#include "collectives/reference.h"

#include <cstring>
#include <string>

#include "collectives/half.h"
#include "collectives/reduce.h"

namespace baton::reference {
namespace {

// memcpy, but a zero-length copy may involve empty buffers (null pointers).
void CopyBytes(void* dst, const void* src, size_t n) {
  if (n > 0) std::memcpy(dst, src, n);
}


void Store(DataType dtype, int64_t v, uint8_t* p) {
  switch (dtype) {
    case DataType::kInt8: { auto x = static_cast<int8_t>(v); std::memcpy(p, &x, 1); break; }
    case DataType::kUint8: { auto x = static_cast<uint8_t>(v); std::memcpy(p, &x, 1); break; }
    case DataType::kInt32: { auto x = static_cast<int32_t>(v); std::memcpy(p, &x, 4); break; }
    case DataType::kUint32: { auto x = static_cast<uint32_t>(v); std::memcpy(p, &x, 4); break; }
    case DataType::kInt64: { auto x = static_cast<int64_t>(v); std::memcpy(p, &x, 8); break; }
    case DataType::kUint64: { auto x = static_cast<uint64_t>(v); std::memcpy(p, &x, 8); break; }
    case DataType::kFloat16: { auto x = FloatToHalf(static_cast<float>(v)); std::memcpy(p, &x, 2); break; }
    case DataType::kBfloat16: { auto x = FloatToBfloat16(static_cast<float>(v)); std::memcpy(p, &x, 2); break; }
    case DataType::kFloat32: { auto x = static_cast<float>(v); std::memcpy(p, &x, 4); break; }
    case DataType::kFloat64: { auto x = static_cast<double>(v); std::memcpy(p, &x, 8); break; }
  }
}

bool IsUnsigned(DataType t) { return t == DataType::kUint8 || t == DataType::kUint32 || t == DataType::kUint64; }

double Load(DataType dtype, const uint8_t* p) {
  switch (dtype) {
    case DataType::kInt8: { int8_t x; std::memcpy(&x, p, 1); return x; }
    case DataType::kUint8: { uint8_t x; std::memcpy(&x, p, 1); return x; }
    case DataType::kInt32: { int32_t x; std::memcpy(&x, p, 4); return x; }
    case DataType::kUint32: { uint32_t x; std::memcpy(&x, p, 4); return x; }
    case DataType::kInt64: { int64_t x; std::memcpy(&x, p, 8); return static_cast<double>(x); }
    case DataType::kUint64: { uint64_t x; std::memcpy(&x, p, 8); return static_cast<double>(x); }
    case DataType::kFloat16: { uint16_t x; std::memcpy(&x, p, 2); return HalfToFloat(x); }
    case DataType::kBfloat16: { uint16_t x; std::memcpy(&x, p, 2); return Bfloat16ToFloat(x); }
    case DataType::kFloat32: { float x; std::memcpy(&x, p, 4); return x; }
    case DataType::kFloat64: { double x; std::memcpy(&x, p, 8); return x; }
  }
  return 0;
}

}  // namespace

void FillPattern(DataType dtype, RedOp op, int rank, uint64_t salt, uint64_t count, uint8_t* out) {
  const size_t es = DataTypeSize(dtype);
  for (uint64_t i = 0; i < count; ++i) {
    int64_t v;
    if (op == RedOp::kProd) {
      v = 1 + static_cast<int64_t>((static_cast<uint64_t>(rank) + i + salt) % 2);
    } else {
      v = static_cast<int64_t>((static_cast<uint64_t>(rank) * 7 + i * 3 + salt * 5) % 11);
      if (!IsUnsigned(dtype)) v -= 5;
    }
    Store(dtype, v, out + i * es);
  }
}

Bytes MakeSendBuffer(const OpSignature& sig, int nranks, int rank) {
  BufferExtents ext;
  ComputeExtents(sig.collective, sig.count, nranks, rank, sig.root, &ext);
  Bytes b(ext.send_elems * DataTypeSize(sig.dtype));
  FillPattern(sig.dtype, sig.redop, rank, 0, ext.send_elems, b.data());
  return b;
}

Bytes Expected(const OpSignature& sig, int nranks, int rank, const std::vector<Bytes>& sends) {
  const uint64_t es = DataTypeSize(sig.dtype);
  const uint64_t blk = sig.count * es;
  BufferExtents ext;
  ComputeExtents(sig.collective, sig.count, nranks, rank, sig.root, &ext);
  Bytes out(ext.recv_elems * es);
  auto reduce_all = [&](uint64_t bytes) {
    Bytes acc = sends[0];
    acc.resize(bytes);
    for (int r = 1; r < nranks; ++r) ReduceInto(sig.dtype, sig.redop, acc.data(), sends[r].data(), bytes / es);
    if (sig.redop == RedOp::kAvg) DivideBy(sig.dtype, acc.data(), bytes / es, static_cast<uint64_t>(nranks));
    return acc;
  };
  switch (sig.collective) {
    case Collective::kAllReduce: out = reduce_all(blk); break;
    case Collective::kReduce: if (rank == sig.root) out = reduce_all(blk); break;
    case Collective::kBroadcast: out = sends[sig.root]; break;
    case Collective::kAllGather:
      for (int r = 0; r < nranks; ++r) CopyBytes(out.data() + r * blk, sends[r].data(), blk);
      break;
    case Collective::kReduceScatter: {
      Bytes all = reduce_all(blk * nranks);
      CopyBytes(out.data(), all.data() + rank * blk, blk);
      break;
    }
    case Collective::kGather:
      if (rank == sig.root) {
        for (int r = 0; r < nranks; ++r) CopyBytes(out.data() + r * blk, sends[r].data(), blk);
      }
      break;
    case Collective::kScatter: CopyBytes(out.data(), sends[sig.root].data() + rank * blk, blk); break;
    case Collective::kAllToAll:
      for (int j = 0; j < nranks; ++j) CopyBytes(out.data() + j * blk, sends[j].data() + rank * blk, blk);
      break;
    default: break;
  }
  return out;
}

int64_t FirstMismatch(DataType dtype, const Bytes& got, const Bytes& want, std::string* out_msg) {
  if (got.size() != want.size()) {
    *out_msg = "size " + std::to_string(got.size()) + " != expected " + std::to_string(want.size());
    return 0;
  }
  const size_t es = DataTypeSize(dtype);
  for (size_t i = 0; i < got.size() / es; ++i) {
    if (std::memcmp(got.data() + i * es, want.data() + i * es, es) != 0) {
      *out_msg = "element " + std::to_string(i) + ": got " + std::to_string(Load(dtype, got.data() + i * es)) +
                 ", expected " + std::to_string(Load(dtype, want.data() + i * es));
      return static_cast<int64_t>(i);
    }
  }
  return -1;
}

}  // namespace baton::reference

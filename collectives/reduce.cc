#include "collectives/reduce.h"

#include <algorithm>
#include <type_traits>

#include "collectives/half.h"

namespace baton {
namespace {

// Arithmetic on signed integers goes through the unsigned type so that
// overflow wraps instead of being undefined behaviour.
template <typename T>
T WrapAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}

template <typename T>
T WrapMul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    // Promote to at least unsigned int so uint8 * uint8 does not promote to
    // (signed) int and overflow.
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}

template <typename T>
void ReduceTyped(RedOp op, T* __restrict dst, const T* __restrict src, size_t n) {
  switch (op) {
    case RedOp::kSum:
    case RedOp::kAvg:
      for (size_t i = 0; i < n; ++i) dst[i] = WrapAdd(dst[i], src[i]);
      break;
    case RedOp::kProd:
      for (size_t i = 0; i < n; ++i) dst[i] = WrapMul(dst[i], src[i]);
      break;
    case RedOp::kMin:
      for (size_t i = 0; i < n; ++i) dst[i] = std::min(dst[i], src[i]);
      break;
    case RedOp::kMax:
      for (size_t i = 0; i < n; ++i) dst[i] = std::max(dst[i], src[i]);
      break;
  }
}

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void Reduce16(RedOp op, uint16_t* __restrict dst, const uint16_t* __restrict src, size_t n) {
  // Work in blocks so the float conversions vectorise and stay in cache.
  constexpr size_t kBlock = 256;
  float a[kBlock];
  float b[kBlock];
  for (size_t base = 0; base < n; base += kBlock) {
    const size_t m = std::min(kBlock, n - base);
    for (size_t i = 0; i < m; ++i) {
      a[i] = ToFloat(dst[base + i]);
      b[i] = ToFloat(src[base + i]);
    }
    ReduceTyped<float>(op, a, b, m);
    for (size_t i = 0; i < m; ++i) dst[base + i] = FromFloat(a[i]);
  }
}

template <typename T>
void DivideTyped(T* dst, size_t n, uint64_t divisor) {
  if constexpr (std::is_integral_v<T>) {
    if constexpr (std::is_signed_v<T>) {
      const auto d = static_cast<int64_t>(divisor);
      for (size_t i = 0; i < n; ++i) dst[i] = static_cast<T>(static_cast<int64_t>(dst[i]) / d);
    } else {
      for (size_t i = 0; i < n; ++i) dst[i] = static_cast<T>(static_cast<uint64_t>(dst[i]) / divisor);
    }
  } else {
    const T d = static_cast<T>(divisor);
    for (size_t i = 0; i < n; ++i) dst[i] = dst[i] / d;
  }
}

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void Divide16(uint16_t* dst, size_t n, uint64_t divisor) {
  const float d = static_cast<float>(divisor);
  for (size_t i = 0; i < n; ++i) dst[i] = FromFloat(ToFloat(dst[i]) / d);
}

}  // namespace

void ReduceInto(DataType dtype, RedOp op, void* dst, const void* src, size_t count) {
  switch (dtype) {
    case DataType::kInt8: return ReduceTyped(op, static_cast<int8_t*>(dst), static_cast<const int8_t*>(src), count);
    case DataType::kUint8: return ReduceTyped(op, static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), count);
    case DataType::kInt32: return ReduceTyped(op, static_cast<int32_t*>(dst), static_cast<const int32_t*>(src), count);
    case DataType::kUint32: return ReduceTyped(op, static_cast<uint32_t*>(dst), static_cast<const uint32_t*>(src), count);
    case DataType::kInt64: return ReduceTyped(op, static_cast<int64_t*>(dst), static_cast<const int64_t*>(src), count);
    case DataType::kUint64: return ReduceTyped(op, static_cast<uint64_t*>(dst), static_cast<const uint64_t*>(src), count);
    case DataType::kFloat16:
      return Reduce16<HalfToFloat, FloatToHalf>(op, static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), count);
    case DataType::kBfloat16:
      return Reduce16<Bfloat16ToFloat, FloatToBfloat16>(op, static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), count);
    case DataType::kFloat32: return ReduceTyped(op, static_cast<float*>(dst), static_cast<const float*>(src), count);
    case DataType::kFloat64: return ReduceTyped(op, static_cast<double*>(dst), static_cast<const double*>(src), count);
  }
}

void DivideBy(DataType dtype, void* dst, size_t count, uint64_t divisor) {
  switch (dtype) {
    case DataType::kInt8: return DivideTyped(static_cast<int8_t*>(dst), count, divisor);
    case DataType::kUint8: return DivideTyped(static_cast<uint8_t*>(dst), count, divisor);
    case DataType::kInt32: return DivideTyped(static_cast<int32_t*>(dst), count, divisor);
    case DataType::kUint32: return DivideTyped(static_cast<uint32_t*>(dst), count, divisor);
    case DataType::kInt64: return DivideTyped(static_cast<int64_t*>(dst), count, divisor);
    case DataType::kUint64: return DivideTyped(static_cast<uint64_t*>(dst), count, divisor);
    case DataType::kFloat16: return Divide16<HalfToFloat, FloatToHalf>(static_cast<uint16_t*>(dst), count, divisor);
    case DataType::kBfloat16: return Divide16<Bfloat16ToFloat, FloatToBfloat16>(static_cast<uint16_t*>(dst), count, divisor);
    case DataType::kFloat32: return DivideTyped(static_cast<float*>(dst), count, divisor);
    case DataType::kFloat64: return DivideTyped(static_cast<double*>(dst), count, divisor);
  }
}

}  // namespace baton

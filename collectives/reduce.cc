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

// dst[i] = f(a[i], b[i]). Two loops so that each can promise the compiler
// no aliasing (and vectorise): in place (dst is a), or three separate arrays.
template <typename T, typename F>
void Elementwise(T* dst, const T* a, const T* b, size_t n, F f) {
  if (dst == a) {
    T* __restrict d = dst;
    const T* __restrict y = b;
    for (size_t i = 0; i < n; ++i) d[i] = f(d[i], y[i]);
  } else {
    T* __restrict d = dst;
    const T* __restrict x = a;
    const T* __restrict y = b;
    for (size_t i = 0; i < n; ++i) d[i] = f(x[i], y[i]);
  }
}

template <typename T>
void CombineTyped(RedOp op, T* dst, const T* a, const T* b, size_t n) {
  switch (op) {
    case RedOp::kSum:
    case RedOp::kAvg:
      return Elementwise(dst, a, b, n, [](T x, T y) { return WrapAdd(x, y); });
    case RedOp::kProd:
      return Elementwise(dst, a, b, n, [](T x, T y) { return WrapMul(x, y); });
    case RedOp::kMin:
      return Elementwise(dst, a, b, n, [](T x, T y) { return std::min(x, y); });
    case RedOp::kMax:
      return Elementwise(dst, a, b, n, [](T x, T y) { return std::max(x, y); });
  }
}

template <typename T>
void CombineAs(RedOp op, void* dst, const void* a, const void* b, size_t n) {
  CombineTyped(op, static_cast<T*>(dst), static_cast<const T*>(a), static_cast<const T*>(b), n);
}

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void Combine16(RedOp op, uint16_t* dst, const uint16_t* a, const uint16_t* b, size_t n) {
  // Work in blocks so the float conversions vectorise and stay in cache. A
  // block of a is read before the same block of dst is written, so dst may
  // be a.
  constexpr size_t kBlock = 256;
  float x[kBlock];
  float y[kBlock];
  for (size_t base = 0; base < n; base += kBlock) {
    const size_t m = std::min(kBlock, n - base);
    for (size_t i = 0; i < m; ++i) {
      x[i] = ToFloat(a[base + i]);
      y[i] = ToFloat(b[base + i]);
    }
    CombineTyped<float>(op, x, x, y, m);
    for (size_t i = 0; i < m; ++i) dst[base + i] = FromFloat(x[i]);
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

void CombineInto(DataType dtype, RedOp op, void* dst, const void* a, const void* b, size_t count) {
  switch (dtype) {
    case DataType::kInt8: return CombineAs<int8_t>(op, dst, a, b, count);
    case DataType::kUint8: return CombineAs<uint8_t>(op, dst, a, b, count);
    case DataType::kInt32: return CombineAs<int32_t>(op, dst, a, b, count);
    case DataType::kUint32: return CombineAs<uint32_t>(op, dst, a, b, count);
    case DataType::kInt64: return CombineAs<int64_t>(op, dst, a, b, count);
    case DataType::kUint64: return CombineAs<uint64_t>(op, dst, a, b, count);
    case DataType::kFloat32: return CombineAs<float>(op, dst, a, b, count);
    case DataType::kFloat64: return CombineAs<double>(op, dst, a, b, count);
    case DataType::kFloat16:
      return Combine16<HalfToFloat, FloatToHalf>(op, static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(a),
                                                 static_cast<const uint16_t*>(b), count);
    case DataType::kBfloat16:
      return Combine16<Bfloat16ToFloat, FloatToBfloat16>(op, static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(a),
                                                         static_cast<const uint16_t*>(b), count);
  }
}

void ReduceInto(DataType dtype, RedOp op, void* dst, const void* src, size_t count) {
  CombineInto(dtype, op, dst, dst, src, count);
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

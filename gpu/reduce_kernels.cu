// Reduction kernels. Why they look like this:
//  - A reduction reads two arrays and writes one, so it is bound by memory
//    bandwidth; each thread moves 16 bytes per load (uint4) when all three
//    pointers are 16-byte aligned, which is what lets it approach the
//    device's copy bandwidth. Misaligned or tail elements go one at a time.
//  - A grid-stride loop with a grid sized to the device (a few blocks per
//    SM) covers any count with one launch.
//  - Signed integers are combined through their unsigned type so overflow
//    wraps (as on the host) instead of being undefined.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "gpu/reduce_launch.h"

namespace baton::gpu::kernels {
namespace {

// Values of baton::RedOp (common/types.h).
constexpr uint32_t kSum = 0, kProd = 1, kMin = 2, kMax = 3, kAvg = 4;

template <typename T> struct Unsigned;
template <> struct Unsigned<int8_t> { using type = uint32_t; };
template <> struct Unsigned<uint8_t> { using type = uint32_t; };
template <> struct Unsigned<int32_t> { using type = uint32_t; };
template <> struct Unsigned<uint32_t> { using type = uint32_t; };
template <> struct Unsigned<int64_t> { using type = uint64_t; };
template <> struct Unsigned<uint64_t> { using type = uint64_t; };

// How an element type is computed with: floats as themselves, 16-bit
// floats in float32, integers wrapping through the unsigned type.
template <typename T> struct Arith {
  __device__ static T Sum(T a, T b) {
    using U = typename Unsigned<T>::type;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  }
  __device__ static T Prod(T a, T b) {
    using U = typename Unsigned<T>::type;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  }
  __device__ static T Min(T a, T b) { return b < a ? b : a; }
  __device__ static T Max(T a, T b) { return a < b ? b : a; }
};

template <typename F> struct FloatArith {
  __device__ static F Sum(F a, F b) { return a + b; }
  __device__ static F Prod(F a, F b) { return a * b; }
  __device__ static F Min(F a, F b) { return b < a ? b : a; }
  __device__ static F Max(F a, F b) { return a < b ? b : a; }
};
template <> struct Arith<float> : FloatArith<float> {};
template <> struct Arith<double> : FloatArith<double> {};

template <typename H> struct HalfArith {
  __device__ static float F(H x) { return static_cast<float>(x); }
  __device__ static H Sum(H a, H b) { return H(F(a) + F(b)); }
  __device__ static H Prod(H a, H b) { return H(F(a) * F(b)); }
  __device__ static H Min(H a, H b) { return F(b) < F(a) ? b : a; }
  __device__ static H Max(H a, H b) { return F(a) < F(b) ? b : a; }
};
template <> struct Arith<__half> : HalfArith<__half> {};
template <> struct Arith<__nv_bfloat16> : HalfArith<__nv_bfloat16> {};

template <typename T, uint32_t kOp>
__device__ T Combine(T a, T b) {
  if constexpr (kOp == kSum || kOp == kAvg) return Arith<T>::Sum(a, b);
  if constexpr (kOp == kProd) return Arith<T>::Prod(a, b);
  if constexpr (kOp == kMin) return Arith<T>::Min(a, b);
  if constexpr (kOp == kMax) return Arith<T>::Max(a, b);
}

union Vec16 {
  uint4 raw;
  unsigned char bytes[16];
};

template <typename T, uint32_t kOp, bool kVector>
__global__ void ReduceKernel(T* dst, const T* a, const T* b, uint64_t count) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  uint64_t first = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  uint64_t scalar_from = 0;
  if constexpr (kVector) {
    constexpr uint64_t kPer = 16 / sizeof(T);
    const uint64_t vectors = count / kPer;
    const auto* va = reinterpret_cast<const uint4*>(a);
    const auto* vb = reinterpret_cast<const uint4*>(b);
    auto* vd = reinterpret_cast<uint4*>(dst);
    for (uint64_t v = first; v < vectors; v += stride) {
      Vec16 x, y, out;
      x.raw = va[v];
      y.raw = vb[v];
      const T* xs = reinterpret_cast<const T*>(x.bytes);
      const T* ys = reinterpret_cast<const T*>(y.bytes);
      T* os = reinterpret_cast<T*>(out.bytes);
#pragma unroll
      for (uint64_t k = 0; k < kPer; ++k) os[k] = Combine<T, kOp>(xs[k], ys[k]);
      vd[v] = out.raw;
    }
    scalar_from = vectors * kPer;
  }
  for (uint64_t i = scalar_from + first; i < count; i += stride) dst[i] = Combine<T, kOp>(a[i], b[i]);
}

// A fold's operands, passed by value (kernel parameters live in constant
// memory, read by every thread at no cost).
struct FoldOperands {
  const void* p[kMaxFoldOperands];
  int n;
};

// dst = p[0] (op) p[1] (op) ... element by element, left to right, the
// accumulator rounded to T after every combination as ReduceKernel's dst is:
// the bits of n-1 ReduceKernel launches, from one pass that reads each
// operand once and writes dst once.
template <typename T, uint32_t kOp, bool kVector>
__global__ void FoldKernel(T* dst, FoldOperands in, uint64_t count) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  uint64_t first = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  uint64_t scalar_from = 0;
  if constexpr (kVector) {
    constexpr uint64_t kPer = 16 / sizeof(T);
    const uint64_t vectors = count / kPer;
    auto* vd = reinterpret_cast<uint4*>(dst);
    for (uint64_t v = first; v < vectors; v += stride) {
      Vec16 acc;
      acc.raw = reinterpret_cast<const uint4*>(in.p[0])[v];
      T* as = reinterpret_cast<T*>(acc.bytes);
      for (int s = 1; s < in.n; ++s) {
        Vec16 x;
        x.raw = reinterpret_cast<const uint4*>(in.p[s])[v];
        const T* xs = reinterpret_cast<const T*>(x.bytes);
#pragma unroll
        for (uint64_t k = 0; k < kPer; ++k) as[k] = Combine<T, kOp>(as[k], xs[k]);
      }
      vd[v] = acc.raw;
    }
    scalar_from = vectors * kPer;
  }
  for (uint64_t i = scalar_from + first; i < count; i += stride) {
    T acc = static_cast<const T*>(in.p[0])[i];
    for (int s = 1; s < in.n; ++s) acc = Combine<T, kOp>(acc, static_cast<const T*>(in.p[s])[i]);
    dst[i] = acc;
  }
}

template <typename T>
__global__ void DivideKernel(T* dst, uint64_t count, uint64_t divisor) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    if constexpr (sizeof(T) == 2 && !std::is_integral_v<T>) {
      dst[i] = T(static_cast<float>(dst[i]) / static_cast<float>(divisor));
    } else if constexpr (std::is_floating_point_v<T>) {
      dst[i] = dst[i] / static_cast<T>(divisor);
    } else if constexpr (std::is_signed_v<T>) {
      dst[i] = static_cast<T>(static_cast<int64_t>(dst[i]) / static_cast<int64_t>(divisor));
    } else {
      dst[i] = static_cast<T>(static_cast<uint64_t>(dst[i]) / divisor);
    }
  }
}

constexpr int kThreads = 512;

// Enough blocks to fill the device (4 per SM), never more than the work.
int GridFor(uint64_t units) {
  static const int max_blocks = [] {
    int device = 0, sms = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || sms <= 0) {
      cudaGetLastError();
      return 1024;
    }
    return sms * 4;
  }();
  const uint64_t needed = (units + kThreads - 1) / kThreads;
  return static_cast<int>(needed < static_cast<uint64_t>(max_blocks) ? (needed == 0 ? 1 : needed) : max_blocks);
}

bool Aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

template <typename T, uint32_t kOp>
void Launch(void* dst, const void* a, const void* b, uint64_t count, cudaStream_t s) {
  auto* d = static_cast<T*>(dst);
  const auto* x = static_cast<const T*>(a);
  const auto* y = static_cast<const T*>(b);
  if (Aligned16(dst) && Aligned16(a) && Aligned16(b)) {
    ReduceKernel<T, kOp, true><<<GridFor(count / (16 / sizeof(T)) + 1), kThreads, 0, s>>>(d, x, y, count);
  } else {
    ReduceKernel<T, kOp, false><<<GridFor(count), kThreads, 0, s>>>(d, x, y, count);
  }
}

template <typename T>
void LaunchTyped(uint32_t op, void* dst, const void* a, const void* b, uint64_t count, cudaStream_t s) {
  switch (op) {
    case kSum: return Launch<T, kSum>(dst, a, b, count, s);
    case kAvg: return Launch<T, kAvg>(dst, a, b, count, s);
    case kProd: return Launch<T, kProd>(dst, a, b, count, s);
    case kMin: return Launch<T, kMin>(dst, a, b, count, s);
    case kMax: return Launch<T, kMax>(dst, a, b, count, s);
  }
}

template <typename T, uint32_t kOp>
void LaunchFoldOp(void* dst, const FoldOperands& in, uint64_t count, cudaStream_t s) {
  bool aligned = Aligned16(dst);
  for (int k = 0; k < in.n; ++k) aligned = aligned && Aligned16(in.p[k]);
  if (aligned) {
    FoldKernel<T, kOp, true><<<GridFor(count / (16 / sizeof(T)) + 1), kThreads, 0, s>>>(static_cast<T*>(dst), in,
                                                                                      count);
  } else {
    FoldKernel<T, kOp, false><<<GridFor(count), kThreads, 0, s>>>(static_cast<T*>(dst), in, count);
  }
}

template <typename T>
void FoldTyped(uint32_t op, void* dst, const FoldOperands& in, uint64_t count, cudaStream_t s) {
  switch (op) {
    case kSum: return LaunchFoldOp<T, kSum>(dst, in, count, s);
    case kAvg: return LaunchFoldOp<T, kAvg>(dst, in, count, s);
    case kProd: return LaunchFoldOp<T, kProd>(dst, in, count, s);
    case kMin: return LaunchFoldOp<T, kMin>(dst, in, count, s);
    case kMax: return LaunchFoldOp<T, kMax>(dst, in, count, s);
  }
}

template <typename T>
void DivideTyped(void* dst, uint64_t count, uint64_t divisor, cudaStream_t s) {
  DivideKernel<T><<<GridFor(count), kThreads, 0, s>>>(static_cast<T*>(dst), count, divisor);
}

// Expands CASE(dtype value, CUDA type) for every data type of common/types.h.
#define BATON_FOR_EACH_TYPE(CASE) \
  CASE(0, int8_t)                 \
  CASE(1, uint8_t)                \
  CASE(2, int32_t)                \
  CASE(3, uint32_t)               \
  CASE(4, int64_t)                \
  CASE(5, uint64_t)               \
  CASE(6, __half)                 \
  CASE(7, __nv_bfloat16)          \
  CASE(8, float)                  \
  CASE(9, double)

}  // namespace

int LaunchReduce(uint32_t dtype, uint32_t op, void* dst, const void* a, const void* b, uint64_t count, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  switch (dtype) {
#define CASE(value, type)                          \
  case value:                                      \
    LaunchTyped<type>(op, dst, a, b, count, s);    \
    break;
    BATON_FOR_EACH_TYPE(CASE)
#undef CASE
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

int LaunchFold(uint32_t dtype, uint32_t op, void* dst, const void* const* srcs, int n, uint64_t count, void* stream) {
  if (n < 2 || n > kMaxFoldOperands) return cudaErrorInvalidValue;
  FoldOperands in{};
  for (int k = 0; k < n; ++k) in.p[k] = srcs[k];
  in.n = n;
  auto s = static_cast<cudaStream_t>(stream);
  switch (dtype) {
#define CASE(value, type)                          \
  case value:                                      \
    FoldTyped<type>(op, dst, in, count, s);        \
    break;
    BATON_FOR_EACH_TYPE(CASE)
#undef CASE
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

int LaunchDivide(uint32_t dtype, void* dst, uint64_t count, uint64_t divisor, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  switch (dtype) {
#define CASE(value, type)                          \
  case value:                                      \
    DivideTyped<type>(dst, count, divisor, s);     \
    break;
    BATON_FOR_EACH_TYPE(CASE)
#undef CASE
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace baton::gpu::kernels

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "collectives/half.h"
#include "collectives/reduce.h"
#include "collectives/reference.h"

namespace baton {
namespace {

TEST(Reduce, Int8SumWrapsLikeTwosComplement) {
  std::vector<int8_t> a = {100, -100, 5};
  std::vector<int8_t> b = {100, -100, -7};
  ReduceInto(DataType::kInt8, RedOp::kSum, a.data(), b.data(), a.size());
  EXPECT_EQ(a[0], static_cast<int8_t>(-56));
  EXPECT_EQ(a[1], static_cast<int8_t>(56));
  EXPECT_EQ(a[2], -2);
}

TEST(Reduce, Uint8ProdWraps) {
  std::vector<uint8_t> a = {16, 3};
  std::vector<uint8_t> b = {17, 5};
  ReduceInto(DataType::kUint8, RedOp::kProd, a.data(), b.data(), a.size());
  EXPECT_EQ(a[0], static_cast<uint8_t>(16 * 17 % 256));
  EXPECT_EQ(a[1], 15);
}

TEST(Reduce, MinMaxOnInt64AndDouble) {
  std::vector<int64_t> a = {std::numeric_limits<int64_t>::min(), 5, -3};
  std::vector<int64_t> b = {0, 7, -4};
  ReduceInto(DataType::kInt64, RedOp::kMax, a.data(), b.data(), a.size());
  EXPECT_EQ(a, (std::vector<int64_t>{0, 7, -3}));
  std::vector<double> x = {1.5, -2.25};
  std::vector<double> y = {0.5, -3.0};
  ReduceInto(DataType::kFloat64, RedOp::kMin, x.data(), y.data(), x.size());
  EXPECT_EQ(x, (std::vector<double>{0.5, -3.0}));
}

TEST(Reduce, AvgIsASumUntilDivided) {
  std::vector<int32_t> a = {3, -3, 10};
  std::vector<int32_t> b = {4, -4, 1};
  ReduceInto(DataType::kInt32, RedOp::kAvg, a.data(), b.data(), a.size());
  EXPECT_EQ(a, (std::vector<int32_t>{7, -7, 11}));
  DivideBy(DataType::kInt32, a.data(), a.size(), 2);
  EXPECT_EQ(a, (std::vector<int32_t>{3, -3, 5}));  // truncation toward zero
  std::vector<float> f = {1.0f, 3.0f};
  DivideBy(DataType::kFloat32, f.data(), f.size(), 4);
  EXPECT_EQ(f, (std::vector<float>{0.25f, 0.75f}));
}

TEST(Half, RoundTripsEveryFiniteHalf) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint16_t v = static_cast<uint16_t>(h);
    if ((v & 0x7c00u) == 0x7c00u && (v & 0x3ffu) != 0) continue;  // NaN payloads
    ASSERT_EQ(FloatToHalf(HalfToFloat(v)), v) << "half bits " << h;
  }
}

TEST(Half, RoundsToNearestEven) {
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(1.0f + 1.0f / 2048), 0x3c00);              // halfway, stays even
  EXPECT_EQ(FloatToHalf(1.0f + 3.0f / 2048), 0x3c02);              // halfway, rounds up to even
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);                        // largest finite
  EXPECT_EQ(FloatToHalf(70000.0f), 0x7c00);                        // overflow to inf
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -24)), 0x0001);           // smallest subnormal
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -25)), 0x0000);           // halfway to zero: even
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000);
}

TEST(Bfloat16, RoundTripAndRounding) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint16_t v = static_cast<uint16_t>(h);
    if ((v & 0x7f80u) == 0x7f80u && (v & 0x7fu) != 0) continue;
    ASSERT_EQ(FloatToBfloat16(Bfloat16ToFloat(v)), v) << "bf16 bits " << h;
  }
  EXPECT_EQ(FloatToBfloat16(1.0f + 1.0f / 256), 0x3f80);  // halfway, even
  EXPECT_EQ(FloatToBfloat16(1.0f + 3.0f / 256), 0x3f82);
}

TEST(Reduce, Float16SumAccumulatesInFloat32AndRoundsOnce) {
  std::vector<uint16_t> a = {FloatToHalf(1024.0f), FloatToHalf(0.5f)};
  std::vector<uint16_t> b = {FloatToHalf(0.5f), FloatToHalf(0.25f)};
  ReduceInto(DataType::kFloat16, RedOp::kSum, a.data(), b.data(), a.size());
  EXPECT_EQ(HalfToFloat(a[0]), 1024.0f);  // 1024.5 is a tie between 1024 and 1025: even wins
  EXPECT_EQ(HalfToFloat(a[1]), 0.75f);
}

// CombineInto (dst = a op b, used where a received chunk is reduced with a
// rank's input into its output) against the reference AllReduce of two
// ranks, for every type and operation, out of place and in place; an odd
// count exercises vector remainders and the 16-bit blocks' tail.
TEST(Reduce, CombineMatchesTheReferenceOutOfPlaceAndInPlace) {
  const DataType types[] = {DataType::kInt8,    DataType::kUint8,   DataType::kInt32,    DataType::kUint32,
                            DataType::kInt64,   DataType::kUint64,  DataType::kFloat16,  DataType::kBfloat16,
                            DataType::kFloat32, DataType::kFloat64};
  for (DataType dtype : types) {
    for (RedOp op : {RedOp::kSum, RedOp::kProd, RedOp::kMin, RedOp::kMax}) {
      SCOPED_TRACE(std::string(DataTypeName(dtype)) + " " + RedOpName(op));
      const OpSignature sig{Collective::kAllReduce, dtype, op, -1, 1000 + 37};
      const std::vector<reference::Bytes> sends = {reference::MakeSendBuffer(sig, 2, 0),
                                                   reference::MakeSendBuffer(sig, 2, 1)};
      const reference::Bytes want = reference::Expected(sig, 2, 0, sends);
      std::string msg;

      reference::Bytes out(want.size(), 0xEE);
      CombineInto(dtype, op, out.data(), sends[0].data(), sends[1].data(), sig.count);
      EXPECT_EQ(reference::FirstMismatch(dtype, out, want, &msg), -1) << "out of place: " << msg;
      EXPECT_EQ(sends[0], reference::MakeSendBuffer(sig, 2, 0)) << "the first operand was written";

      reference::Bytes in_place = sends[0];
      CombineInto(dtype, op, in_place.data(), in_place.data(), sends[1].data(), sig.count);
      EXPECT_EQ(reference::FirstMismatch(dtype, in_place, want, &msg), -1) << "in place: " << msg;
    }
  }
}

}  // namespace
}  // namespace baton

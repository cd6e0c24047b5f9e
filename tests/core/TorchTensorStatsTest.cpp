// The statistics of LibTorch tensors (replay's op values, the demo runs' activation ranges) come
// from the one statistics kernel. Replay had a naive sum / sum-of-squares of its own, which lost
// the spread of values with a large mean.
#include "core/torch/TensorRange.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace nanscope;

TEST(TorchTensorStats, SpreadSurvivesALargeMean)
{
    torch::manual_seed(3);
    const torch::Tensor values = 1e8 + torch::randn({100000}, torch::kDouble);
    const TensorStats s = torchutil::tensorStats(values);
    ASSERT_TRUE(s.std.has_value());
    EXPECT_NEAR(*s.std, values.std().item<double>(), 1e-3) << "a naive sum of squares gives garbage here";
    EXPECT_NEAR(*s.mean, 1e8, 0.05);
}

TEST(TorchTensorStats, CountsNonFiniteAndReadsHalfPrecisionInPlace)
{
    torch::Tensor values = torch::tensor({1.0, 2.0, std::nan(""), std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(), -3.0}).to(torch::kHalf);
    const TensorStats s = torchutil::tensorStats(values);
    EXPECT_EQ(s.dtype, DType::Float16);
    EXPECT_EQ(s.nan, 1);
    EXPECT_EQ(s.posinf, 1);
    EXPECT_EQ(s.neginf, 1);
    EXPECT_EQ(s.min, -3.0);
    EXPECT_EQ(s.max, 2.0);
    EXPECT_EQ(s.absmax, 3.0);
    EXPECT_EQ(s.inf(), 2);
    EXPECT_FLOAT_EQ(torchutil::runFileFigure(s.mean), 0.0f);
    EXPECT_TRUE(std::isnan(torchutil::runFileFigure(torchutil::tensorStats(values.slice(0, 2, 3)).mean)))
        << "a run file stores NaN for a statistic of no finite element";
}

namespace {

// The figures of `view` must be those of the same elements copied out contiguously: counts,
// extremes and shape exactly, moments to rounding (a float32 block sums in float: its order shows
// in the eighth digit).
void expectSameFiguresAsACopy(const torch::Tensor& view)
{
    const TensorStats inPlace = torchutil::tensorStats(view);
    const TensorStats copied = torchutil::tensorStats(view.contiguous());
    EXPECT_EQ(inPlace.shape, view.sizes().vec());
    EXPECT_EQ(inPlace.numel, copied.numel);
    EXPECT_EQ(inPlace.nan, copied.nan);
    EXPECT_EQ(inPlace.posinf, copied.posinf);
    EXPECT_EQ(inPlace.neginf, copied.neginf);
    EXPECT_EQ(inPlace.zero, copied.zero);
    EXPECT_EQ(inPlace.min, copied.min);
    EXPECT_EQ(inPlace.max, copied.max);
    EXPECT_EQ(inPlace.nonzeroAbsmin, copied.nonzeroAbsmin);
    ASSERT_TRUE(inPlace.mean && copied.mean && inPlace.std && copied.std);
    EXPECT_NEAR(*inPlace.mean, *copied.mean, 1e-6 * (1 + std::fabs(*copied.mean)));
    EXPECT_NEAR(*inPlace.std, *copied.std, 1e-6 * (1 + *copied.std));
}

} // namespace

// A replay measures strided op outputs and gradients at every other op (a transposed head split, a
// third of a fused q-k-v projection): they are read in place, and must read as their elements do.
TEST(TorchTensorStats, StridedTensorsReadInPlaceAsTheirElements)
{
    torch::manual_seed(5);
    torch::Tensor qkv = 3 + torch::randn({4, 16, 3 * 96});
    qkv[1][2][100] = std::numeric_limits<float>::quiet_NaN(); // in the middle third
    qkv[2][5][5] = std::numeric_limits<float>::infinity();    // in the first third only
    qkv[3][7][200] = 0;
    const auto thirds = qkv.split(96, -1);
    for (const auto& third : thirds) {
        ASSERT_FALSE(third.is_contiguous());
        expectSameFiguresAsACopy(third);
    }
    EXPECT_EQ(torchutil::tensorStats(thirds[1]).nan, 1);
    EXPECT_EQ(torchutil::tensorStats(thirds[1]).posinf, 0) << "a slice counts only its own elements";
    EXPECT_EQ(torchutil::tensorStats(thirds[0]).posinf, 1);
    // A head split: a permutation of a dense block.
    const torch::Tensor heads = thirds[2].reshape({4, 16, 4, 24}).transpose(1, 2);
    expectSameFiguresAsACopy(heads);
    expectSameFiguresAsACopy(qkv[0].t());
    // Float16 runs, and runs over two outer dims.
    expectSameFiguresAsACopy(qkv.to(torch::kHalf).slice(2, 0, 128));
    expectSameFiguresAsACopy(qkv.slice(1, 0, 16, 2).slice(2, 96, 192));
}

TEST(TorchTensorStats, AnExpandedTensorCountsEveryRepeat)
{
    const torch::Tensor row = torch::tensor({1.0f, std::numeric_limits<float>::quiet_NaN(), -2.0f}).repeat({40});
    const torch::Tensor expanded = row.unsqueeze(0).expand({5, 120});
    const TensorStats s = torchutil::tensorStats(expanded);
    EXPECT_EQ(s.numel, 600);
    EXPECT_EQ(s.nan, 200) << "each of the 40 NaNs, five times";
    expectSameFiguresAsACopy(expanded);
}

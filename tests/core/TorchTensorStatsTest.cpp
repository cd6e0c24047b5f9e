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

// The gradient statistics a replay takes in backward (core/torch/SeenTensors): a view's gradient
// is the one its input's producer receives when the input has no other use, and is then not
// measured twice; with another use, the gradients differ and each is measured.
#include "core/torch/SeenTensors.h"

#include <gtest/gtest.h>

using namespace nanscope;
using namespace nanscope::replaytorch;

namespace {

struct Watched
{
    GradientStatistics gradients;
    std::vector<SeenTensor> seen;

    const SeenTensor& watch(const torch::Tensor& value)
    {
        seen.push_back(see(value));
        gradients.watch(seen.back());
        return seen.back();
    }
};

} // namespace

TEST(GradientStatistics, AViewPassesBackTheGradientItReceived)
{
    torch::manual_seed(2);
    const torch::Tensor x = torch::randn({8, 6}, torch::requires_grad());
    Watched watched;
    const torch::Tensor doubled = x * 2;
    const torch::Tensor flat = doubled.view({48});
    const SeenTensor seenDoubled = watched.watch(doubled);
    const SeenTensor seenFlat = watched.watch(flat);
    (flat * torch::arange(48, torch::kFloat)).sum().backward();

    const auto ofDoubled = watched.gradients.of(seenDoubled);
    const auto ofFlat = watched.gradients.of(seenFlat);
    ASSERT_TRUE(ofDoubled && ofFlat);
    EXPECT_EQ(ofFlat->shape, std::vector<int64_t>{48});
    EXPECT_EQ(ofDoubled->shape, (std::vector<int64_t>{8, 6})) << "the same elements, in the shape of their own value";
    EXPECT_EQ(ofDoubled->max, 47.0);
    EXPECT_EQ(ofDoubled->min, 0.0);
    EXPECT_EQ(ofDoubled->mean, ofFlat->mean);
}

TEST(GradientStatistics, AValueWithAnotherUseGetsItsOwnGradient)
{
    const torch::Tensor x = torch::ones({4, 4}, torch::requires_grad());
    Watched watched;
    const torch::Tensor doubled = x * 2;
    const torch::Tensor transposed = doubled.t();
    const SeenTensor seenDoubled = watched.watch(doubled);
    const SeenTensor seenTransposed = watched.watch(transposed);
    // doubled reaches the loss twice: its gradient is the sum of both paths' (1 + 3 = 4).
    ((transposed * 1).sum() + (doubled * 3).sum()).backward();

    const auto ofDoubled = watched.gradients.of(seenDoubled);
    const auto ofTransposed = watched.gradients.of(seenTransposed);
    ASSERT_TRUE(ofDoubled && ofTransposed);
    EXPECT_EQ(ofTransposed->max, 1.0);
    EXPECT_EQ(ofDoubled->max, 4.0);
    EXPECT_EQ(ofDoubled->min, 4.0);
    EXPECT_EQ(x.grad().max().item<float>(), 8.0f) << "backward itself is unchanged by the hooks";
}

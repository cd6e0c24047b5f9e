// The judgement over replay signatures (issue 14): precision headroom and dynamic range from the
// kernel's statistics, the attention-logit and float16-headroom thresholds, a loss in low precision.
#include "core/replay/ReplaySignatures.h"
#include "core/scan/Diagnosis.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace nanscope;

namespace {
TensorStats statsOf(std::vector<float> values, std::vector<int64_t> shape = {})
{
    if (shape.empty())
        shape = {int64_t(values.size())};
    return computeContiguousStats("", reinterpret_cast<const uint8_t*>(values.data()), DType::Float32, shape);
}

ReplayOp opWith(int index, const std::string& kind, TensorStats output)
{
    ReplayOp op;
    op.index = index;
    op.op = kind;
    op.module = "attn";
    op.output = output;
    op.headroom = precisionHeadroomOf(op.output);
    return op;
}
} // namespace

TEST(ReplaySignatures, DynamicRangeAndHeadroomOfAKnownTensor)
{
    const TensorStats s = statsOf({0.f, 0.25f, -1024.f, 0.f, 3.f});
    ASSERT_TRUE(s.nonzeroAbsmin);
    EXPECT_EQ(*s.nonzeroAbsmin, 0.25) << "the smallest nonzero magnitude, not the zeros";
    const PrecisionHeadroom h = precisionHeadroomOf(s);
    ASSERT_TRUE(h.dynamicRangeBits && h.float16Bits && h.bfloat16Bits);
    EXPECT_DOUBLE_EQ(*h.dynamicRangeBits, 12.0); // log2(1024 / 0.25)
    EXPECT_DOUBLE_EQ(*h.float16Bits, std::log2(65504.0 / 1024.0));
    EXPECT_NEAR(*h.bfloat16Bits, 128.0 - 10.0, 0.01);

    EXPECT_FALSE(precisionHeadroomOf(statsOf({0.f, 0.f})).float16Bits) << "all zeros: no headroom to speak of";
    EXPECT_FALSE(precisionHeadroomOf(std::nullopt).dynamicRangeBits);
}

TEST(ReplaySignatures, SmallestNonzeroMagnitudeSurvivesBlocksOfZerosAndNonFiniteValues)
{
    // Blocks of the kernel hold 4096 values: zeros in one, a NaN in another, the smallest nonzero
    // value in a third.
    std::vector<float> values(3 * 4096, 1.f);
    for (int i = 0; i < 4096; ++i)
        values[size_t(i)] = 0.f;
    values[4096 + 7] = std::nanf("");
    values[4096 + 8] = 1e-3f;
    values[2 * 4096 + 100] = -5e-4f;
    const TensorStats s = statsOf(values);
    ASSERT_TRUE(s.nonzeroAbsmin);
    EXPECT_FLOAT_EQ(float(*s.nonzeroAbsmin), 5e-4f);
}

TEST(ReplaySignatures, AttentionLogitsThatGrewAreFlaggedAndAConfidentClassifierIsNot)
{
    ReplayOp softmax = opWith(4, "aten::softmax", statsOf(std::vector<float>(2 * 3 * 4, 0.25f), {2, 3, 4}));
    softmax.softmax = SoftmaxSignature{900.0, 0.02, std::log(4.0)};
    auto findings = judgeReplaySignatures({softmax}, std::nullopt);
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings.front().signal, ReplaySignal::AttentionLogits);
    EXPECT_EQ(findings.front().opIndex, 4);
    EXPECT_NE(findings.front().cause.find("'attn'"), std::string::npos) << findings.front().cause;
    EXPECT_NE(findings.front().suggestion.find("z-loss"), std::string::npos);

    ReplayOp classifier = opWith(4, "aten::softmax", statsOf(std::vector<float>(8, 0.5f), {2, 4}));
    classifier.softmax = softmax.softmax;
    EXPECT_TRUE(judgeReplaySignatures({classifier}, std::nullopt).empty()) << "[batch, classes] is not attention";

    softmax.softmax->entropy = 0.9 * std::log(4.0);
    EXPECT_TRUE(judgeReplaySignatures({softmax}, std::nullopt).empty()) << "large logits, rows still spread";
}

TEST(ReplaySignatures, Float16HeadroomFlagsTheFirstOpWithinFourBits)
{
    const ReplayOp safe = opWith(0, "aten::linear", statsOf({1.f, -300.f}));
    const ReplayOp close = opWith(1, "aten::mul", statsOf({2.f, 9000.f}));  // log2(65504/9000) = 2.9 bits
    const ReplayOp closer = opWith(2, "aten::add", statsOf({2.f, 30000.f}));
    ASSERT_TRUE(lowFloat16Headroom(close.headroom));
    EXPECT_FALSE(lowFloat16Headroom(safe.headroom));
    const auto findings = judgeReplaySignatures({safe, close, closer}, std::nullopt);
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings.front().signal, ReplaySignal::Float16Headroom);
    EXPECT_EQ(findings.front().opIndex, 1);
    EXPECT_NE(findings.front().cause.find("2 op(s)"), std::string::npos) << findings.front().cause;
}

TEST(ReplaySignatures, ALossOpReadingFloat16IsALossInLowPrecision)
{
    std::vector<uint16_t> halves{0x3c00, 0x4000}; // 1.0, 2.0 in float16
    ReplayOp loss = opWith(3, "aten::cross_entropy_loss", statsOf({0.7f}, {}));
    loss.inputs = {computeContiguousStats("", reinterpret_cast<const uint8_t*>(halves.data()), DType::Float16, {2})};
    const auto findings = judgeReplaySignatures({}, loss);
    ASSERT_EQ(findings.size(), 1u);
    EXPECT_EQ(findings.front().signal, ReplaySignal::LossInLowPrecision);
    EXPECT_NE(findings.front().cause.find("float16"), std::string::npos);
    EXPECT_NE(findings.front().suggestion.find("float32"), std::string::npos);

    loss.inputs = {statsOf({1.f, 2.f})};
    EXPECT_TRUE(judgeReplaySignatures({}, loss).empty());
}

// Issue 27: an op 15 bits past float16's largest value read "come within 4 bits of it".
TEST(ReplaySignatures, AValuePastFloat16IsSaidToBeBeyondIt)
{
    nanscope::scan::Float16HeadroomFacts facts;
    facts.first = {3, "aten::matmul", "attn"};
    facts.absmax = 65504.0 * 32768.0;
    facts.bits = -15;
    facts.thresholdBits = 4;
    const std::string text = nanscope::scan::diagnoseReplayFloat16Headroom(facts).cause;
    EXPECT_NE(text.find("15 bits beyond it"), std::string::npos) << text;
    EXPECT_EQ(text.find("-15"), std::string::npos) << text;
    facts.bits = 2.5;
    const std::string near = nanscope::scan::diagnoseReplayFloat16Headroom(facts).cause;
    EXPECT_NE(near.find("2.5 bits of headroom"), std::string::npos) << near;
}

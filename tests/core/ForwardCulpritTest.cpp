// Which op a replay names as the first non-finite one (core/replay/ReplayJudgement), the same for
// the TorchScript, exported-program and eager engines: values made from constants and weights
// alone (a position table, a mask) are the model's design unless something computed from the batch
// carries their NaN or Inf on; a non-finite input is followed back to the op that made it.
#include "core/replay/ReplayJudgement.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace nanscope;

namespace {
constexpr float kInf = std::numeric_limits<float>::infinity();

TensorStats statsOf(std::vector<float> values)
{
    return computeContiguousStats("", reinterpret_cast<const uint8_t*>(values.data()), DType::Float32,
                                  {int64_t(values.size())});
}

ReplayOp opOf(int index, const std::string& kind, bool fromData, std::vector<TensorStats> inputs, TensorStats output)
{
    ReplayOp op;
    op.index = index;
    op.op = kind;
    op.source = "model.py:" + std::to_string(10 + index);
    op.fromData = fromData;
    for (auto& input : inputs)
        op.inputs.push_back(std::move(input));
    op.output = std::move(output);
    return op;
}
} // namespace

TEST(ForwardCulprit, ALogOfZeroInAPositionTableThatNothingCarriesOnIsNoCulprit)
{
    // T5: log(0) over relative positions is -inf, cast to an index and replaced; the data stays finite.
    const TensorStats positions = statsOf({0.f, 1.f, 2.f});
    const TensorStats logs = statsOf({-kInf, 0.f, 0.69f});
    const std::vector<ReplayOp> ops = {
        opOf(0, "aten::log", false, {positions}, logs),
        opOf(1, "aten::linear", true, {statsOf({0.5f, 1.f})}, statsOf({0.2f, 0.3f})),
    };
    std::vector<std::string> notes;
    EXPECT_FALSE(forwardCulprit(ops, notes));
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].find("op #0 aten::log at model.py:10"), std::string::npos) << notes[0];
    EXPECT_NE(notes[0].find("not a fault"), std::string::npos) << notes[0];
}

TEST(ForwardCulprit, APoisonedWeightAfterThePositionTableIsNamedNotTheTable)
{
    const TensorStats weight = statsOf({kInf, 1.f});
    const std::vector<ReplayOp> ops = {
        opOf(0, "aten::log", false, {statsOf({0.f, 1.f})}, statsOf({-kInf, 0.f})),
        opOf(1, "aten::relu", true, {statsOf({0.5f, 1.f})}, statsOf({0.5f, 1.f})),
        opOf(2, "aten::linear", true, {statsOf({0.5f, 1.f}), weight}, statsOf({kInf, 2.f})),
        opOf(3, "aten::add", true, {statsOf({kInf, 2.f}), statsOf({1.f, 1.f})}, statsOf({kInf, 3.f})),
    };
    std::vector<std::string> notes;
    const auto culprit = forwardCulprit(ops, notes);
    ASSERT_TRUE(culprit);
    EXPECT_EQ(culprit->index, 2) << culprit->op;
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].find("already in the model's state"), std::string::npos) << notes[0];
}

TEST(ForwardCulprit, AnOverflowOfALearnedTemperatureIsFollowedFromTheLogitsBackToItsExp)
{
    // CLIP: logits * exp(logit_scale); the exp reads a parameter, so it is not computed from the batch.
    const TensorStats scale = statsOf({100.f});
    const TensorStats overflowed = statsOf({kInf});
    const std::vector<ReplayOp> ops = {
        opOf(0, "aten::linear", true, {statsOf({0.5f, 1.f})}, statsOf({0.1f, 0.2f})),
        opOf(1, "aten::exp", false, {scale}, overflowed),
        opOf(2, "aten::mul", true, {statsOf({0.1f, 0.2f}), overflowed}, statsOf({kInf, kInf})),
    };
    std::vector<std::string> notes;
    const auto culprit = forwardCulprit(ops, notes);
    ASSERT_TRUE(culprit);
    EXPECT_EQ(culprit->op, "aten::exp");
    EXPECT_TRUE(notes.empty()) << "the exp made the Inf from a finite input: " << notes.front();
}

TEST(ForwardCulprit, AnOpOfTheBatchThatMakesANaNFromFiniteInputsComesFirst)
{
    const std::vector<ReplayOp> ops = {
        opOf(0, "aten::log", false, {statsOf({0.f})}, statsOf({-kInf})),
        opOf(1, "aten::div", true, {statsOf({0.f}), statsOf({0.f})}, statsOf({std::nanf("")})),
    };
    std::vector<std::string> notes;
    const auto culprit = forwardCulprit(ops, notes);
    ASSERT_TRUE(culprit);
    EXPECT_EQ(culprit->op, "aten::div");
}

TEST(ForwardCulprit, TheParameterAPoisonedInputWasIsNamed)
{
    const TensorStats experts = statsOf({kInf, 1.f, 2.f});
    ReplayResult result;
    result.params.push_back({"layers.1.experts.down_proj", statsOf({0.5f, 1.f, 2.f}), std::nullopt});
    result.params.push_back({"layers.1.experts.up_proj", experts, std::nullopt});
    result.firstNonfinite = opOf(4, "aten::transpose", false, {experts}, experts);
    nameTheStateTheCulpritRead(result);
    ASSERT_EQ(result.notes.size(), 1u);
    EXPECT_NE(result.notes[0].find("read the parameter layers.1.experts.up_proj as its input 0"), std::string::npos)
        << result.notes[0];

    ReplayResult fromTheBatch; // a non-finite input no parameter holds: nothing to name
    fromTheBatch.params = result.params;
    fromTheBatch.firstNonfinite = opOf(0, "aten::conv2d", true, {statsOf({std::nanf(""), 1.f})}, statsOf({std::nanf("")}));
    nameTheStateTheCulpritRead(fromTheBatch);
    EXPECT_TRUE(fromTheBatch.notes.empty());
}

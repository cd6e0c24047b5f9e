// The replay crosses a process boundary as JSON: what `nanscope replay --json` writes, the pane and
// the report read back into the same struct (the old decoder dropped absmax and wrote shapes its
// own way).
#include "app/codecs/ReplayJson.h"

#include <QJsonDocument>

#include <gtest/gtest.h>

#include <cmath>

using namespace nanscope;

namespace {
TensorStats value(double min, double max, int64_t nan)
{
    TensorStats v;
    v.shape = {4, 8};
    v.dtype = DType::Float32;
    v.numel = 32;
    v.min = min;
    v.max = max;
    v.mean = (min + max) / 2;
    v.std = 1.5;
    v.absmax = std::max(std::fabs(min), std::fabs(max));
    v.nan = nan;
    return v;
}
} // namespace

TEST(ReplayJson, TheResultSurvivesTheRoundTrip)
{
    ReplayResult r;
    r.step = 180;
    r.loss = std::nan("");
    r.lossName = "cross_entropy";
    ReplayOp div;
    div.index = 3;
    div.op = "aten::div";
    div.module = "norm";
    div.source = "model.py:42";
    div.code = "return centered / scale";
    div.inputs = {value(-3, 3.8, 0), value(0, 1.4, 0)};
    div.output = value(-2.4, 2.8, 16);
    div.gradFunction = "DivBackward0";
    r.ops = {div};
    r.firstNonfinite = div;
    r.bisected = true;
    r.badSamples = {5};
    r.notes = {"the batch names no loss; used cross_entropy"};
    ReplayOptions options;
    options.dtype = "bfloat16";
    const ReplayReport back = parseReplayJson(QJsonDocument(replayResultToJson(r, 180, options)).toJson());
    ASSERT_TRUE(back.error.isEmpty()) << back.error.toStdString();
    EXPECT_EQ(back.dtype, "bfloat16");
    EXPECT_EQ(back.mode, "train");
    EXPECT_EQ(back.result.step, 180);
    EXPECT_TRUE(std::isnan(back.result.loss)) << "a NaN loss is null in JSON and NaN again";
    EXPECT_EQ(back.result.lossName, "cross_entropy");
    ASSERT_EQ(back.result.ops.size(), 1u);
    ASSERT_TRUE(back.result.firstNonfinite);
    const ReplayOp& c = *back.result.firstNonfinite;
    EXPECT_EQ(c.index, 3);
    EXPECT_EQ(c.op, "aten::div");
    EXPECT_EQ(c.module, "norm");
    EXPECT_EQ(c.source, "model.py:42");
    EXPECT_EQ(c.code, "return centered / scale");
    EXPECT_EQ(c.gradFunction, "DivBackward0");
    ASSERT_EQ(c.inputs.size(), 2u);
    ASSERT_TRUE(c.inputs[1]);
    EXPECT_EQ(c.inputs[1]->shape, (std::vector<int64_t>{4, 8}));
    EXPECT_EQ(c.inputs[1]->dtype, DType::Float32);
    EXPECT_EQ(c.inputs[1]->absmax, 1.4);
    ASSERT_TRUE(c.output);
    EXPECT_EQ(c.output->nan, 16);
    EXPECT_FALSE(c.grad) << "no gradient written, none read";
    EXPECT_EQ(back.result.badSamples, std::vector<int64_t>{5});
    EXPECT_EQ(back.result.notes, r.notes);
    EXPECT_EQ(back.firstNonfiniteIndex(), 3);
}

// The value's JSON reads as it did before replays used TensorStats: LibTorch's dtype names, null
// for the figures of a value with no finite element (absmax included), {} for no value.
TEST(ReplayJson, AValueWithNoFiniteElementAndAnAbsentValueKeepTheirForm)
{
    TensorStats poisoned;
    poisoned.shape = {32};
    poisoned.dtype = DType::BFloat16;
    poisoned.numel = 32;
    poisoned.nan = 32;
    const QJsonObject json = replayValueToJson(poisoned);
    EXPECT_EQ(json["dtype"].toString(), "BFloat16");
    for (const char* figure : {"min", "max", "mean", "std", "absmax"})
        EXPECT_TRUE(json[figure].isNull()) << figure;
    EXPECT_EQ(json["inf"].toInteger(), 0);

    const std::optional<TensorStats> back = replayValueFromJson(json);
    ASSERT_TRUE(back);
    EXPECT_EQ(back->dtype, DType::BFloat16);
    EXPECT_EQ(back->nan, 32);
    EXPECT_FALSE(back->min);
    EXPECT_EQ(finiteRangeText(back), "no finite value");

    EXPECT_TRUE(replayValueToJson(std::nullopt).isEmpty());
    EXPECT_FALSE(replayValueFromJson(QJsonObject()));
    EXPECT_EQ(finiteRangeText(replayValueFromJson(QJsonValue())), "-");
}

// The signatures of issue 14 cross the process boundary too: per op the float16/bfloat16 headroom,
// the dynamic range and the softmax figures; per replay the loss convention, log Z, the backward
// culprit and the findings with their texts.
TEST(ReplayJson, SignaturesAndTheLossConventionSurviveTheRoundTrip)
{
    ReplayResult r;
    r.step = 12;
    r.loss = 2.5;
    r.lossConvention = LossConvention::InForward;
    r.lossFrom = "forward(x, labels)['loss']";
    ReplayOp softmax;
    softmax.index = 7;
    softmax.op = "aten::softmax";
    softmax.module = "blocks.0.attn";
    TensorStats out = value(0, 1, 0);
    out.nonzeroAbsmin = 1e-30;
    softmax.output = out;
    softmax.headroom = precisionHeadroomOf(out);
    softmax.softmax = SoftmaxSignature{1.2e4, 0.01, 1.79};
    r.ops = {softmax};
    ReplayOp log;
    log.index = 9;
    log.op = "aten::log";
    log.module = "criterion";
    r.gradCulprit = log;
    r.lossOp = log;
    r.logits = LogitsSignature{"forward's output['logits']", 5, 8, 3.5, -1.0, 40.25};
    r.findings = {{ReplaySignal::AttentionLogits, 7, "logits grew", "normalise q and k"}};

    const ReplayReport back = parseReplayJson(QJsonDocument(replayResultToJson(r, 12, {})).toJson());
    ASSERT_TRUE(back.error.isEmpty()) << back.error.toStdString();
    const ReplayResult& b = back.result;
    EXPECT_EQ(b.lossConvention, LossConvention::InForward);
    EXPECT_EQ(b.lossFrom, r.lossFrom);
    ASSERT_EQ(b.ops.size(), 1u);
    const ReplayOp& op = b.ops.front();
    ASSERT_TRUE(op.output && op.output->nonzeroAbsmin);
    EXPECT_DOUBLE_EQ(*op.output->nonzeroAbsmin, 1e-30);
    ASSERT_TRUE(op.headroom.float16Bits && op.headroom.bfloat16Bits && op.headroom.dynamicRangeBits);
    EXPECT_DOUBLE_EQ(*op.headroom.float16Bits, std::log2(65504.0));
    EXPECT_DOUBLE_EQ(*op.headroom.dynamicRangeBits, std::log2(1e30));
    ASSERT_TRUE(op.softmax);
    EXPECT_EQ(op.softmax->inputAbsmax, 1.2e4);
    EXPECT_EQ(op.softmax->entropy, 0.01);
    EXPECT_EQ(op.softmax->uniformEntropy, 1.79);
    ASSERT_TRUE(b.gradCulprit);
    EXPECT_EQ(b.gradCulprit->op, "aten::log");
    ASSERT_TRUE(b.lossOp);
    EXPECT_EQ(b.lossOp->index, 9);
    ASSERT_TRUE(b.logits);
    EXPECT_EQ(b.logits->from, r.logits->from);
    EXPECT_EQ(b.logits->opIndex, 5);
    EXPECT_EQ(b.logits->rows, 8);
    EXPECT_EQ(b.logits->logZMax, 40.25);
    ASSERT_EQ(b.findings.size(), 1u);
    EXPECT_EQ(b.findings.front().signal, ReplaySignal::AttentionLogits);
    EXPECT_EQ(b.findings.front().opIndex, 7);
    EXPECT_EQ(b.findings.front().suggestion, "normalise q and k");
}

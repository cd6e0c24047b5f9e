// The stats/diff JSON crosses a process boundary: what `nanscope stats --json` writes, the
// checkpoints pane must read back whole (the old hand-written decoder dropped absmax).
#include "app/codecs/CheckpointJson.h"
#include "app/codecs/OptimizerJson.h"

#include <gtest/gtest.h>

using namespace nanscope;

TEST(CheckpointJson, TensorStatsSurviveTheRoundTrip)
{
    TensorStats s;
    s.name = "features.0.weight";
    s.shape = {64, 3, 3, 3};
    s.dtype = DType::BFloat16;
    s.numel = 1728;
    s.min = -0.5;
    s.max = 0.75;
    s.mean = 0.01;
    s.std = 0.2;
    s.norm = 8.5;
    s.absmax = 0.75;
    s.nan = 3;
    s.posinf = 1;
    s.neginf = 2;
    s.zero = 10;
    s.subnormal = 4;
    s.histogram = {1, 2, 3};
    s.spectralNorm = 2.5;
    std::vector<std::string> flags;
    const TensorStats back = tensorStatsFromJson(tensorStatsToJson(s, {"3 NaN", "1 +Inf"}), &flags);
    EXPECT_EQ(back.name, s.name);
    EXPECT_EQ(back.shape, s.shape);
    EXPECT_EQ(back.dtype, s.dtype);
    EXPECT_EQ(back.numel, s.numel);
    EXPECT_EQ(back.min, s.min);
    EXPECT_EQ(back.max, s.max);
    EXPECT_EQ(back.mean, s.mean);
    EXPECT_EQ(back.std, s.std);
    EXPECT_EQ(back.norm, s.norm);
    EXPECT_EQ(back.absmax, s.absmax);
    EXPECT_EQ(back.nan, s.nan);
    EXPECT_EQ(back.posinf, s.posinf);
    EXPECT_EQ(back.neginf, s.neginf);
    EXPECT_EQ(back.zero, s.zero);
    EXPECT_EQ(back.subnormal, s.subnormal);
    EXPECT_EQ(back.histogram, s.histogram);
    EXPECT_EQ(back.spectralNorm, s.spectralNorm);
    EXPECT_EQ(flags, (std::vector<std::string>{"3 NaN", "1 +Inf"}));
}

TEST(CheckpointJson, AllNonFiniteTensorHasNoMinMaxRatherThanZero)
{
    TensorStats s;
    s.name = "bn1.running_mean";
    s.numel = 4;
    s.nan = 4;
    const TensorStats back = tensorStatsFromJson(tensorStatsToJson(s, {}));
    EXPECT_FALSE(back.min.has_value()) << "null in the JSON, not 0";
    EXPECT_FALSE(back.mean.has_value());
    EXPECT_EQ(back.nonfinite(), 4);
}

TEST(CheckpointJson, TensorDiffSurvivesTheRoundTrip)
{
    TensorDiff d;
    d.name = "fc1.weight";
    d.shapeA = d.shapeB = {8, 4};
    d.dtypeA = DType::Float32;
    d.dtypeB = DType::Float16;
    d.normA = 2;
    d.normB = 3;
    d.diffNorm = 1;
    d.relativeUpdate = 0.5;
    d.nonfiniteB = 5;
    d.becameNonfinite = 5;
    const TensorDiff back = tensorDiffFromJson(tensorDiffToJson(d));
    EXPECT_EQ(back.name, d.name);
    EXPECT_EQ(back.shapeA, d.shapeA);
    EXPECT_EQ(back.dtypeB, DType::Float16);
    EXPECT_EQ(back.relativeUpdate, d.relativeUpdate);
    EXPECT_EQ(back.becameNonfinite, 5);
    TensorDiff zeroNorm = d;
    zeroNorm.relativeUpdate.reset();
    EXPECT_FALSE(tensorDiffFromJson(tensorDiffToJson(zeroNorm)).relativeUpdate.has_value());
}

TEST(TensorNames, ShapesAreWrittenOneWay)
{
    EXPECT_EQ(shapeText({64, 3, 3, 3}), "[64, 3, 3, 3]");
    EXPECT_EQ(shapeText({}), "[]");
    EXPECT_EQ(dtypeFromName("bfloat16"), DType::BFloat16);
    EXPECT_FALSE(dtypeFromName("complex64").has_value());
}

TEST(CheckpointJson, OptimizerStateSurvivesTheRoundTrip)
{
    CheckpointOptimizer optimizer;
    optimizer.summary.path = "checkpoint-500/optimizer.pt";
    optimizer.summary.isAdam = true;
    optimizer.namesFrom = ""; // unmapped: names_from is null
    OptimizerGroup group;
    group.lr = 2e-5;
    group.eps = 1e-8;
    group.beta1 = 0.9;
    group.beta2 = 0.95;
    group.weightDecay = 0.1;
    group.parameterIndices = {0, 1};
    optimizer.summary.groups = {group, OptimizerGroup{}}; // the second group without figures
    OptimizerParameterState p;
    p.index = 1;
    p.name = "param #1 [4096, 4096]";
    p.shape = {4096, 4096};
    p.hasState = true;
    p.step = 500;
    p.expAvgRms = 1e-4;
    p.expAvgSqRootRms = 2e-4;
    p.updateRms = 3e-5;
    p.epsilonDominatedShare = 0.25;
    p.nonfinite = 3;
    p.nonfiniteExpAvg = 1;
    p.nonfiniteExpAvgSq = 2;
    OptimizerParameterState unstepped;
    unstepped.group = 1;
    unstepped.name = "param #2";
    optimizer.summary.parameters = {p, unstepped};
    optimizer.flags = {{"2 NaN/Inf in exp_avg_sq"}, {}};
    optimizer.summary.notes = {"a note"};
    optimizer.summary.warnings = {"a warning"};

    const QJsonObject json = checkpointOptimizerToJson(optimizer);
    EXPECT_TRUE(json["names_from"].isNull());
    const QJsonObject first = json["parameters"].toArray()[0].toObject();
    EXPECT_DOUBLE_EQ(first["update_to_lr"].toDouble(), 1.5);
    const CheckpointOptimizer back = checkpointOptimizerFromJson(json);
    EXPECT_EQ(back.summary.path, optimizer.summary.path);
    EXPECT_TRUE(back.summary.isAdam);
    EXPECT_FALSE(back.summary.namesMapped);
    EXPECT_TRUE(back.namesFrom.empty());
    ASSERT_EQ(back.summary.groups.size(), 2u);
    EXPECT_EQ(back.summary.groups[0].lr, group.lr);
    EXPECT_EQ(back.summary.groups[0].eps, group.eps);
    EXPECT_EQ(back.summary.groups[0].beta1, group.beta1);
    EXPECT_EQ(back.summary.groups[0].beta2, group.beta2);
    EXPECT_EQ(back.summary.groups[0].weightDecay, group.weightDecay);
    EXPECT_EQ(back.summary.groups[0].parameterIndices, group.parameterIndices);
    EXPECT_FALSE(back.summary.groups[1].lr || back.summary.groups[1].beta1) << "absent figures stay absent, not 0";
    ASSERT_EQ(back.summary.parameters.size(), 2u);
    const OptimizerParameterState& q = back.summary.parameters[0];
    EXPECT_EQ(q.index, p.index);
    EXPECT_EQ(q.name, p.name);
    EXPECT_EQ(q.shape, p.shape);
    EXPECT_TRUE(q.hasState);
    EXPECT_EQ(q.step, p.step);
    EXPECT_EQ(q.expAvgRms, p.expAvgRms);
    EXPECT_EQ(q.expAvgSqRootRms, p.expAvgSqRootRms);
    EXPECT_EQ(q.updateRms, p.updateRms);
    EXPECT_EQ(q.epsilonDominatedShare, p.epsilonDominatedShare);
    EXPECT_EQ(q.nonfinite, 3);
    EXPECT_EQ(q.nonfiniteExpAvg, 1);
    EXPECT_EQ(q.nonfiniteExpAvgSq, 2);
    const OptimizerParameterState& r = back.summary.parameters[1];
    EXPECT_EQ(r.group, 1u);
    EXPECT_FALSE(r.hasState || r.step || r.updateRms);
    EXPECT_EQ(back.flags, optimizer.flags);
    EXPECT_EQ(back.summary.notes, optimizer.summary.notes);
    EXPECT_EQ(back.summary.warnings, optimizer.summary.warnings);
}

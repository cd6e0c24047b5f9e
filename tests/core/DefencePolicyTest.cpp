// The C++ Guard's defences, decided apart from LibTorch (core/record/DefencePolicy): which
// non-finite step is skipped, when a streak rolls back, when the buffers are put back and when the
// next good snapshot is due. tests/core/GuardTest.cpp runs the same decisions through a real model.
#include "core/record/DefencePolicy.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <gtest/gtest.h>

#include <utility>
#include <vector>

using namespace nanscope;

namespace {

DefenceOptions options(bool skip, int rollbackAfter, bool restoreBuffers, int64_t snapshotEvery = 50)
{
    DefenceOptions o;
    o.skipNonfinite = skip;
    o.rollbackAfter = rollbackAfter;
    o.restoreBuffersOnSkip = restoreBuffers;
    o.snapshotEvery = snapshotEvery;
    return o;
}

} // namespace

TEST(DefencePolicy, ANonFiniteStepIsSkippedAndItsGradientsDropped)
{
    DefencePolicy policy(options(true, 0, false));
    const auto plan = policy.planStep(/*finite=*/false, /*rollbackUsable=*/false);
    EXPECT_TRUE(plan.skip);
    EXPECT_FALSE(plan.tryRollback);
    const auto outcome = policy.settle(plan, /*rolledBack=*/false, /*haveBufferSnapshot=*/true);
    EXPECT_FALSE(outcome.apply);
    EXPECT_TRUE(outcome.zeroGradients);
    EXPECT_FALSE(outcome.restoreBuffers) << "restoring buffers is off by default";
    EXPECT_EQ(policy.badStreak(), 1);
}

TEST(DefencePolicy, WithoutSkipANonFiniteUpdateIsApplied)
{
    DefencePolicy policy(options(false, 0, true));
    const auto plan = policy.planStep(false, false);
    const auto outcome = policy.settle(plan, false, true);
    EXPECT_TRUE(outcome.apply);
    EXPECT_FALSE(outcome.zeroGradients);
    EXPECT_FALSE(outcome.restoreBuffers) << "an applied step keeps what its forward did";
}

TEST(DefencePolicy, AStreakRollsBackAtItsLengthAndStartsAgain)
{
    DefencePolicy policy(options(true, 3, true));
    for (int i = 1; i <= 2; ++i) {
        const auto plan = policy.planStep(false, true);
        EXPECT_FALSE(plan.tryRollback) << "step " << i << " of the streak";
        const auto outcome = policy.settle(plan, false, true);
        EXPECT_TRUE(outcome.restoreBuffers) << "a skipped step without a rollback puts the buffers back";
    }
    const auto third = policy.planStep(false, true);
    EXPECT_TRUE(third.tryRollback);
    const auto rolled = policy.settle(third, /*rolledBack=*/true, true);
    EXPECT_FALSE(rolled.apply);
    EXPECT_FALSE(rolled.restoreBuffers) << "the rollback put back its snapshot's buffers already";
    EXPECT_EQ(policy.badStreak(), 0) << "a rollback ends the streak";
    EXPECT_FALSE(policy.planStep(false, true).tryRollback) << "the next streak counts from one";
}

TEST(DefencePolicy, ARollbackWithNoSnapshotYetStillSkips)
{
    DefencePolicy policy(options(true, 1, true));
    const auto plan = policy.planStep(false, true);
    ASSERT_TRUE(plan.tryRollback);
    const auto outcome = policy.settle(plan, /*rolledBack=*/false, true);
    EXPECT_FALSE(outcome.apply);
    EXPECT_TRUE(outcome.restoreBuffers);
    EXPECT_EQ(policy.badStreak(), 1) << "the streak goes on until a rollback happens";
}

TEST(DefencePolicy, AFiniteStepEndsTheStreakAndAnOptimizerWithoutRollbackNeverTriesOne)
{
    DefencePolicy policy(options(true, 2, false));
    policy.settle(policy.planStep(false, true), false, false);
    const auto finite = policy.planStep(true, true);
    EXPECT_FALSE(finite.skip);
    EXPECT_EQ(policy.badStreak(), 0);
    EXPECT_TRUE(policy.settle(finite, false, false).apply);
    for (int i = 0; i < 5; ++i)
        EXPECT_FALSE(policy.planStep(false, /*rollbackUsable=*/false).tryRollback);
}

TEST(DefencePolicy, ASnapshotIsTakenAtTheFirstGoodStepThenEverySnapshotEvery)
{
    const DefencePolicy policy(options(true, 3, false, 20));
    EXPECT_TRUE(policy.snapshotDue(true, true, std::nullopt, 7));
    EXPECT_FALSE(policy.snapshotDue(true, true, 7, 26));
    EXPECT_TRUE(policy.snapshotDue(true, true, 7, 27));
    EXPECT_FALSE(policy.snapshotDue(false, true, 7, 100)) << "a non-finite step is never the rollback target";
    EXPECT_FALSE(policy.snapshotDue(true, false, std::nullopt, 7)) << "no rollback, no snapshot";
}

// The shared cases of when a state is good enough to roll back to (tests/data/rollback_state_cases.json,
// replayed by tests/python/test_recorder_defences.py through the Python recorder): each step planned,
// settled and snapshotted in the order Guard::endStep does it.
TEST(DefencePolicy, TheSharedRollbackStateCases)
{
    QFile file(QStringLiteral(NANSCOPE_SOURCE_DIR) + "/tests/data/rollback_state_cases.json");
    ASSERT_TRUE(file.open(QIODevice::ReadOnly));
    const QJsonArray cases = QJsonDocument::fromJson(file.readAll()).object()["cases"].toArray();
    ASSERT_GE(cases.size(), 4);
    for (const QJsonValue& value : cases) {
        const QJsonObject c = value.toObject();
        DefencePolicy policy(options(true, c["rollback_after"].toInt(), false, c["snapshot_every"].toInt()));
        std::optional<int64_t> kept;
        std::vector<std::pair<int64_t, int64_t>> rollbacks;
        const QJsonArray steps = c["steps"].toArray();
        for (int64_t step = 0; step < steps.size(); ++step) {
            const bool finite = steps[int(step)].toBool();
            const DefencePolicy::Plan plan = policy.planStep(finite, true);
            const bool rolledBack = plan.tryRollback && kept.has_value();
            if (rolledBack)
                rollbacks.emplace_back(step, *kept);
            policy.settle(plan, rolledBack, false);
            if (policy.snapshotDue(finite, true, kept, step))
                kept = step;
        }
        std::vector<std::pair<int64_t, int64_t>> expected;
        for (const QJsonValue& rollback : c["rollbacks"].toArray())
            expected.emplace_back(rollback.toArray()[0].toInteger(), rollback.toArray()[1].toInteger());
        EXPECT_EQ(rollbacks, expected) << c["name"].toString().toStdString();
    }
}

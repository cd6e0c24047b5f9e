// `compare` on two real runs of one model at two learning rates (TANGHULU6/Llama3-8B-Mob, LoRA at
// 2e-4 and at 2e-3; their SOURCE.md): the 2e-3 run leaves the 2e-4 run's band, and its main
// divergence (onset ~1625) is an incident the healthy run does not have.

#include "SourceTestSupport.h"

#include "core/compare/RunComparison.h"
#include "core/open/CompareRunSources.h"
#include "core/open/OpenRun.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace nanscope {
namespace {

using testing::realLog;

const SeriesDivergence* seriesNamed(const RunPairComparison& pair, const std::string& name)
{
    for (const SeriesDivergence& s : pair.series)
        if (s.series == name)
            return &s;
    return nullptr;
}

TEST(RealLogCompare, TheTenfoldLearningRateRunDivergesFromTheHealthyOne)
{
    const std::string healthyFolder = realLog("TANGHULU6__Llama3-8B-Mob__lr2e-4-healthy");
    const std::string divergentFolder = realLog("TANGHULU6__Llama3-8B-Mob__lr2e-3-divergence");
    NANSCOPE_REQUIRE_REAL_LOG(healthyFolder);
    NANSCOPE_REQUIRE_REAL_LOG(divergentFolder);
    auto healthy = openRun(healthyFolder);
    auto divergent = openRun(divergentFolder);
    ASSERT_TRUE(healthy.ok()) << healthy.error();
    ASSERT_TRUE(divergent.ok()) << divergent.error();
    auto comparison = compareRunSources({healthy->get(), divergent->get()}, {"lr2e-4", "lr2e-3"});
    ASSERT_TRUE(comparison.ok()) << comparison.error();
    const RunPairComparison& pair = comparison->pairs.at(0);
    std::string listing;
    for (const SeriesDivergence& s : pair.series)
        listing += s.series + ": " + divergenceWords(s, s.leavingRun ? "lr2e-3" : "lr2e-4", s.leavingRun ? "lr2e-4" : "lr2e-3") + "\n";
    for (const IncidentDifference& d : pair.incidents)
        listing += incidentDifferenceWords(d, "lr2e-4", "lr2e-3") + "\n";

    // The learning rates differ tenfold once warm-up ends (step 5 in the 2e-3 run).
    const SeriesDivergence* lr = seriesNamed(pair, "lr");
    ASSERT_NE(lr, nullptr) << listing;
    ASSERT_TRUE(lr->diverged()) << listing;
    EXPECT_LE(*lr->step, 5) << listing;

    // The loss leaves the healthy band for good by the 47-51 episode (loss 12.9 -> 30.6, slow
    // recovery); the sudden step-7 excursion recovers within two steps.
    const SeriesDivergence* loss = seriesNamed(pair, "loss");
    ASSERT_NE(loss, nullptr) << listing;
    ASSERT_TRUE(loss->diverged()) << listing;
    EXPECT_LE(*loss->step, 51) << listing;
    EXPECT_EQ(loss->leavingRun, 1) << listing;
    EXPECT_GT(loss->leavingValue, loss->bandHigh) << listing;

    // The gradient norms start alike (1-3) and part within the first tens of steps, when the
    // 2e-4 run's settles towards its median of 0.06 and the 2e-3 run's stays near 1-10.
    const SeriesDivergence* gradNorm = seriesNamed(pair, "grad_norm");
    ASSERT_NE(gradNorm, nullptr) << listing;
    ASSERT_TRUE(gradNorm->diverged()) << listing;
    EXPECT_LE(*gradNorm->step, 51) << listing;

    // The main event (onset ~1625, gradual) is the 2e-3 run's alone; the healthy run has nothing
    // critical the other lacks. Only the 2e-3 run logs an evaluation loss.
    bool mainEventOnlyInDivergent = false;
    for (const IncidentDifference& d : pair.incidents) {
        if (d.presence == IncidentPresence::OnlyReference)
            EXPECT_NE(d.reference->severity, Severity::Critical) << listing;
        if (d.presence == IncidentPresence::OnlyOther && d.kind == IncidentKind::Blowup && d.other->onsetStep >= 1620 &&
            d.other->onsetStep <= 1640)
            mainEventOnlyInDivergent = true;
    }
    EXPECT_TRUE(mainEventOnlyInDivergent) << listing;
    EXPECT_NE(std::find(pair.onlyInOther.begin(), pair.onlyInOther.end(), "eval_loss"), pair.onlyInOther.end()) << listing;
    // The 2e-3 run stops at 3000 of the healthy run's 3750 steps.
    EXPECT_EQ(loss->lastCommonStep, 3000) << listing;
}

} // namespace
} // namespace nanscope

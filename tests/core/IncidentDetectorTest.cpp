// What `nanscope scan` tells a user about each demo run and about hand-shaped runs of the kinds
// the demo models cannot produce.
#include "SyntheticRuns.h"
#include "TestRuns.h"

#include "core/open/RunScan.h"
#include "core/run/RunReader.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace nanscope;
using namespace nanscope::test;

namespace {

ScanReport scanDirectory(const std::string& directory, const ScanConfig& config = {})
{
    auto reader = RunReader::open(directory);
    EXPECT_TRUE(reader) << reader.error();
    if (!reader)
        return {};
    auto report = scanRun(**reader, config);
    EXPECT_TRUE(report) << report.error();
    return report ? report->report : ScanReport{};
}

std::vector<const Incident*> ofKind(const ScanReport& report, IncidentKind kind)
{
    std::vector<const Incident*> found;
    for (const auto& incident : report.incidents)
        if (incident.kind == kind)
            found.push_back(&incident);
    return found;
}

bool startsWith(const std::string& text, const std::string& prefix)
{
    return text.rfind(prefix, 0) == 0;
}

std::string describe(const ScanReport& report)
{
    std::string out;
    for (const auto& i : report.incidents)
        out += std::string(toString(i.severity)) + " " + toString(i.kind) + " @" + std::to_string(i.onsetStep) +
               (i.layers.empty() ? "" : " [" + i.layers.front() + "]") + "; ";
    return out;
}

// A synthetic run whose every gradient jumps x80 at step 150 only, and recovers.
void writeRunWithGradientSpike(const std::string& directory)
{
    SyntheticRun run;
    run.shape = [](SyntheticRow& row) {
        if (row.step == 150)
            for (auto& g : row.grads)
                g *= 80.f;
    };
    writeSyntheticRun(directory, run);
}

} // namespace

// ---- the demo runs -------------------------------------------------------------------------

TEST(IncidentDetector, HealthyRunHasNoCriticalOrWarningIncident)
{
    const ScanReport report = scanDirectory(demoRun("healthy"));
    EXPECT_FALSE(report.hasCritical()) << describe(report);
    for (const auto& incident : report.incidents)
        EXPECT_EQ(incident.severity, Severity::Info) << describe(report);
    EXPECT_EQ(report.lastStep, 399);
}

TEST(IncidentDetector, SuddenBlowupStartsAtTheCorruptBatchInTheFirstLayer)
{
    const ScanReport report = scanDirectory(demoRun("sudden-blowup"));
    auto blowups = ofKind(report, IncidentKind::Blowup);
    ASSERT_EQ(blowups.size(), 1u) << describe(report);
    const Incident& blowup = *blowups.front();
    EXPECT_EQ(blowup.severity, Severity::Critical);
    EXPECT_EQ(blowup.pattern, BlowupPattern::Sudden);
    EXPECT_GE(blowup.onsetStep, 229);
    EXPECT_LE(blowup.onsetStep, 231);
    ASSERT_TRUE(blowup.nonfiniteStep);
    EXPECT_GT(*blowup.nonfiniteStep, blowup.onsetStep) << "NaN shows up after the onset, not at it";
    ASSERT_FALSE(blowup.layers.empty());
    EXPECT_TRUE(startsWith(blowup.layers.front(), "fc1")) << blowup.layers.front();
    ASSERT_TRUE(blowup.evidence.jumpRatio);
    EXPECT_GT(*blowup.evidence.jumpRatio, 1e4);
    EXPECT_NE(blowup.cause.find("999999999"), std::string::npos) << "names the fill value: " << blowup.cause;
    EXPECT_NE(blowup.suggestion.find("batch"), std::string::npos) << blowup.suggestion;
    auto inputs = ofKind(report, IncidentKind::BadInput);
    ASSERT_EQ(inputs.size(), 1u);
    EXPECT_EQ(inputs.front()->onsetStep, 230);
    EXPECT_EQ(report.incidents.front().kind, IncidentKind::Blowup) << "most severe first";
}

TEST(IncidentDetector, GradualBlowupBeginsWellBeforeTheNaN)
{
    const ScanReport report = scanDirectory(demoRun("gradual-blowup"));
    auto blowups = ofKind(report, IncidentKind::Blowup);
    ASSERT_EQ(blowups.size(), 1u) << describe(report);
    const Incident& blowup = *blowups.front();
    EXPECT_EQ(blowup.pattern, BlowupPattern::Gradual);
    ASSERT_TRUE(blowup.nonfiniteStep);
    EXPECT_GE(blowup.onsetStep, 100) << "not before the learning rate starts to ramp";
    EXPECT_LE(blowup.onsetStep, *blowup.nonfiniteStep - 20) << "the onset is where growth began, not the NaN";
    ASSERT_TRUE(blowup.evidence.growthDecadesPerStep);
    EXPECT_GT(*blowup.evidence.growthDecadesPerStep, 0.0);
    EXPECT_NE(blowup.suggestion.find("learning rate"), std::string::npos);
    EXPECT_NE(blowup.suggestion.find("clip"), std::string::npos);
    EXPECT_TRUE(ofKind(report, IncidentKind::Spike).empty()) << "its run-up is not a spike: " << describe(report);
}

TEST(IncidentDetector, DivisionByZeroIsOneSkippedNaNInTheNormLayerNotABlowup)
{
    const ScanReport report = scanDirectory(demoRun("division-by-zero"));
    EXPECT_TRUE(ofKind(report, IncidentKind::Blowup).empty()) << describe(report);
    auto nans = ofKind(report, IncidentKind::NonfiniteLoss);
    ASSERT_EQ(nans.size(), 1u) << describe(report);
    EXPECT_EQ(nans.front()->onsetStep, 180);
    EXPECT_EQ(nans.front()->nonfiniteStep, std::optional<int64_t>(180)) << "its non-finite step is said";
    ASSERT_FALSE(nans.front()->layers.empty());
    EXPECT_EQ(nans.front()->layers.front(), "norm");
    EXPECT_NE(nans.front()->suggestion.find("eps"), std::string::npos) << nans.front()->suggestion;
    EXPECT_FALSE(report.hasCritical()) << describe(report);
}

TEST(IncidentDetector, PoisonedBatchNormIsCriticalEvenThoughTheLossRecovers)
{
    const ScanReport report = scanDirectory(demoRun("batchnorm-poisoned"));
    auto bn = ofKind(report, IncidentKind::BnCorruption);
    ASSERT_EQ(bn.size(), 1u) << describe(report);
    EXPECT_EQ(bn.front()->severity, Severity::Critical);
    EXPECT_EQ(bn.front()->onsetStep, 200);
    ASSERT_FALSE(bn.front()->layers.empty());
    EXPECT_EQ(bn.front()->layers.front(), "bn1");
    EXPECT_NE(bn.front()->cause.find("evaluation"), std::string::npos) << bn.front()->cause;
    EXPECT_TRUE(ofKind(report, IncidentKind::Blowup).empty()) << describe(report);
    auto inputs = ofKind(report, IncidentKind::BadInput);
    ASSERT_EQ(inputs.size(), 1u);
    EXPECT_EQ(inputs.front()->severity, Severity::Critical);
    EXPECT_EQ(report.incidents.front().kind, IncidentKind::BnCorruption);
}

// ---- hand-shaped runs ----------------------------------------------------------------------

TEST(IncidentDetector, LossScaleCascadeToTheFloorIsCriticalButWarmUpDecreasesAreNot)
{
    ScratchDir dir;
    SyntheticRun run;
    run.lossScale = true;
    run.shape = [](SyntheticRow& row) {
        if (row.step == 150 || row.step == 220)
            row.scalars["loss_scale"] /= 2; // the occasional overflow
        if (row.step >= 305 && row.step < 323) {
            row.scalars["loss_scale"] = std::max(1.0, row.scalars["loss_scale"] / 2);
            row.scalars["skipped"] = 1;
        }
        if (row.step >= 323)
            row.scalars["skipped"] = 1;
    };
    writeSyntheticRun(dir / "run", run);
    const ScanReport report = scanDirectory(dir / "run");
    auto collapses = ofKind(report, IncidentKind::LossScaleCollapse);
    ASSERT_EQ(collapses.size(), 1u) << describe(report);
    EXPECT_EQ(collapses.front()->severity, Severity::Critical);
    EXPECT_EQ(collapses.front()->onsetStep, 305);
    EXPECT_TRUE(ofKind(report, IncidentKind::SkippedSteps).empty()) << "explained by the collapse: " << describe(report);

    ScratchDir warmup;
    SyntheticRun calm;
    calm.lossScale = true;
    calm.shape = [](SyntheticRow& row) {
        if (row.step >= 5 && row.step < 15)
            row.scalars["loss_scale"] /= 2; // a long warm-up search that settles at 64
    };
    writeSyntheticRun(warmup / "run", calm);
    const ScanReport calmReport = scanDirectory(warmup / "run");
    EXPECT_TRUE(ofKind(calmReport, IncidentKind::LossScaleCollapse).empty()) << describe(calmReport);
}

TEST(IncidentDetector, LossScaleCascadeIsFoundFromEventsWhenTheScaleIsNotLogged)
{
    ScratchDir dir;
    SyntheticRun run;
    run.events = [](int64_t step) -> std::vector<std::pair<std::string, std::string>> {
        if (step == 3 || step == 4 || step == 150 || (step >= 280 && step < 292))
            return {{"loss_scale_decrease", "overflow: scale halved"}, {"skipped_step", "inf gradients"}};
        return {};
    };
    run.skippedScalar = false;
    writeSyntheticRun(dir / "run", run);
    const ScanReport report = scanDirectory(dir / "run");
    auto collapses = ofKind(report, IncidentKind::LossScaleCollapse);
    ASSERT_EQ(collapses.size(), 1u) << describe(report);
    EXPECT_EQ(collapses.front()->onsetStep, 280);
    EXPECT_EQ(collapses.front()->evidence.count, 12);
    EXPECT_TRUE(ofKind(report, IncidentKind::SkippedSteps).empty()) << "explained by the cascade";
}

TEST(IncidentDetector, ManyConsecutiveSkippedStepsAreReported)
{
    ScratchDir dir;
    SyntheticRun run;
    run.shape = [](SyntheticRow& row) {
        if (row.step >= 150 && row.step < 170)
            row.scalars["skipped"] = 1;
        if (row.step == 250 || row.step == 251)
            row.scalars["skipped"] = 1; // a couple of skips are nothing
    };
    writeSyntheticRun(dir / "run", run);
    const ScanReport report = scanDirectory(dir / "run");
    auto skipped = ofKind(report, IncidentKind::SkippedSteps);
    ASSERT_EQ(skipped.size(), 1u) << describe(report);
    EXPECT_EQ(skipped.front()->onsetStep, 150);
    EXPECT_EQ(skipped.front()->evidence.count, 20);
    EXPECT_EQ(skipped.front()->severity, Severity::Warning) << "training went on afterwards";
}

TEST(IncidentDetector, VanishingLayerIsNamedAndAFrozenOneIsOnlyInfo)
{
    ScratchDir dir;
    SyntheticRun run;
    run.layers.push_back("embedding.weight");
    run.shape = [](SyntheticRow& row) {
        if (row.step >= 200)
            row.grads[0] *= 1e-6f; // encoder.0.weight stops learning
        row.grads.back() = 0.f;    // embedding.weight is frozen
    };
    writeSyntheticRun(dir / "run", run);
    const ScanReport report = scanDirectory(dir / "run");
    auto vanishing = ofKind(report, IncidentKind::Vanishing);
    ASSERT_EQ(vanishing.size(), 2u) << describe(report);
    const Incident* lost = vanishing[0]->severity == Severity::Warning ? vanishing[0] : vanishing[1];
    const Incident* frozen = lost == vanishing[0] ? vanishing[1] : vanishing[0];
    EXPECT_EQ(lost->severity, Severity::Warning);
    EXPECT_EQ(lost->layers, std::vector<std::string>{"encoder.0.weight"});
    EXPECT_GE(lost->onsetStep, 192);
    EXPECT_LE(lost->onsetStep, 232);
    EXPECT_EQ(frozen->severity, Severity::Info);
    EXPECT_EQ(frozen->layers, std::vector<std::string>{"embedding.weight"});
    EXPECT_FALSE(report.hasCritical());
}

TEST(IncidentDetector, ExplosionAfterWhichTheLossNeverRecoversIsABlowupNotASpike)
{
    // Seen in real runs: a corrupt batch sends the gradients up a million-fold, the weights die,
    // the gradient norm looks normal again but the loss sits at chance level for good.
    ScratchDir dir;
    SyntheticRun run;
    run.shape = [](SyntheticRow& row) {
        if (row.step >= 200 && row.step < 203)
            for (auto& g : row.grads)
                g *= 1e6f;
        if (row.step >= 203)
            row.scalars["loss"] = 1.386 * (1.0 + 0.01 * double(row.step % 3));
    };
    writeSyntheticRun(dir / "run", run);
    const ScanReport report = scanDirectory(dir / "run");
    auto blowups = ofKind(report, IncidentKind::Blowup);
    ASSERT_EQ(blowups.size(), 1u) << describe(report);
    EXPECT_EQ(blowups.front()->onsetStep, 200);
    EXPECT_EQ(blowups.front()->pattern, BlowupPattern::Sudden);
    EXPECT_EQ(blowups.front()->severity, Severity::Critical);
    EXPECT_TRUE(ofKind(report, IncidentKind::Spike).empty()) << describe(report);
}

TEST(IncidentDetector, IsolatedGradientSpikeThatRecoversIsAWarning)
{
    ScratchDir dir;
    writeRunWithGradientSpike(dir / "run");
    const ScanReport report = scanDirectory(dir / "run");
    ASSERT_EQ(report.incidents.size(), 1u) << describe(report);
    EXPECT_EQ(report.incidents.front().kind, IncidentKind::Spike);
    EXPECT_EQ(report.incidents.front().onsetStep, 150);
    EXPECT_EQ(report.incidents.front().severity, Severity::Warning);
}

// A converged run: the loss falls from 2.3 to about 2e-4, where it bumps x15 now and then (a
// real run's noise near zero). The bumps are large in ratio but 0.1% of where training began.
void writeConvergedRunWithBumps(const std::string& directory, double bumpedLoss)
{
    SyntheticRun run;
    run.shape = [bumpedLoss](SyntheticRow& row) {
        const double level = 2.3 * std::exp(-double(row.step) / 15.0) + 2e-4;
        row.scalars["loss"] = level * (1.0 + 0.1 * std::sin(double(row.step) * 1.7));
        if (row.step == 200 || row.step == 260 || row.step == 330)
            row.scalars["loss"] = bumpedLoss;
    };
    writeSyntheticRun(directory, run);
}

TEST(IncidentDetector, BumpsOfAConvergedLossNearZeroAreNotSpikes)
{
    ScratchDir dir;
    writeConvergedRunWithBumps(dir / "run", 3e-3);
    const ScanReport report = scanDirectory(dir / "run");
    EXPECT_TRUE(ofKind(report, IncidentKind::Spike).empty()) << describe(report);
    for (const auto& incident : report.incidents)
        EXPECT_EQ(incident.severity, Severity::Info) << describe(report);
    // In ratio and against the run's log-scale noise they are spikes: only the scale rules them out.
    ScanConfig ratioOnly;
    ratioOnly.spikeLossFloor = 0;
    const ScanReport ratioReport = scanDirectory(dir / "run", ratioOnly);
    EXPECT_EQ(ofKind(ratioReport, IncidentKind::Spike).size(), 3u) << describe(ratioReport);
}

TEST(IncidentDetector, ALossSpikeOnTheScaleTrainingWorksAtIsStillASpike)
{
    ScratchDir dir;
    writeConvergedRunWithBumps(dir / "run", 0.5); // a fifth of the starting loss
    const ScanReport report = scanDirectory(dir / "run");
    const auto spikes = ofKind(report, IncidentKind::Spike);
    ASSERT_EQ(spikes.size(), 3u) << describe(report);
    EXPECT_EQ(spikes.front()->onsetStep, 200);
    EXPECT_NE(spikes.front()->evidence.series.find("loss"), std::string::npos);
}

TEST(IncidentDetector, SaturatedInputIsABadInput)
{
    ScratchDir dir;
    SyntheticRun run;
    run.shape = [](SyntheticRow& row) {
        if (row.step == 120)
            row.inputMax = 32767.f;
    };
    writeSyntheticRun(dir / "run", run);
    const ScanReport report = scanDirectory(dir / "run");
    auto inputs = ofKind(report, IncidentKind::BadInput);
    ASSERT_EQ(inputs.size(), 1u) << describe(report);
    EXPECT_EQ(inputs.front()->onsetStep, 120);
    EXPECT_EQ(inputs.front()->layers, std::vector<std::string>{"x"});
    EXPECT_NE(inputs.front()->evidence.note.find("fill or saturation"), std::string::npos);
}

TEST(IncidentDetector, NaNInTheFirstBatchPointsAtTheData)
{
    ScratchDir dir;
    SyntheticRun run;
    run.shape = [](SyntheticRow& row) {
        if (row.step == 0) {
            row.scalars["loss"] = NAN;
            row.scalars["skipped"] = 1;
            row.inputNan = 3;
        }
    };
    writeSyntheticRun(dir / "run", run);
    const ScanReport report = scanDirectory(dir / "run");
    auto nans = ofKind(report, IncidentKind::NonfiniteLoss);
    ASSERT_EQ(nans.size(), 1u) << describe(report);
    EXPECT_EQ(nans.front()->onsetStep, 0);
    EXPECT_NE(nans.front()->cause.find("dirty data"), std::string::npos) << nans.front()->cause;
}

TEST(IncidentDetector, RunStillBeingWrittenInTheMiddleOfABlowupIsCritical)
{
    ScratchDir dir;
    SyntheticRun run;
    run.steps = 204;
    run.shape = [](SyntheticRow& row) {
        if (row.step >= 200)
            for (auto& g : row.grads)
                g *= float(std::pow(10.0, 2.0 * double(row.step - 199)));
    };
    // The writer lives in another process and keeps the file open in SWMR write mode, as a
    // training job would while the user scans it.
    int ready[2];
    ASSERT_EQ(pipe(ready), 0);
    const pid_t writer = fork();
    ASSERT_GE(writer, 0);
    if (writer == 0) {
        auto open = writeSyntheticRun(dir / "run", run, /*keepOpen=*/true);
        const char byte = open ? 'y' : 'n';
        (void)!write(ready[1], &byte, 1);
        std::this_thread::sleep_for(std::chrono::seconds(60));
        _exit(0);
    }
    char byte = 0;
    ASSERT_EQ(read(ready[0], &byte, 1), 1);
    ASSERT_EQ(byte, 'y');
    const ScanReport report = scanDirectory(dir / "run");
    kill(writer, SIGKILL);
    waitpid(writer, nullptr, 0);
    close(ready[0]);
    close(ready[1]);

    EXPECT_EQ(report.lastStep, 203);
    auto blowups = ofKind(report, IncidentKind::Blowup);
    ASSERT_EQ(blowups.size(), 1u) << describe(report);
    EXPECT_EQ(blowups.front()->severity, Severity::Critical);
    EXPECT_FALSE(blowups.front()->nonfiniteStep) << "no NaN yet";
    EXPECT_GE(blowups.front()->onsetStep, 199);
    EXPECT_LE(blowups.front()->onsetStep, 201);
}

TEST(IncidentDetector, ThresholdsComeFromSettings)
{
    ScanConfig config;
    EXPECT_TRUE(applyScanSetting(config, "spike_decades", "2.5"));
    EXPECT_DOUBLE_EQ(config.spikeDecades, 2.5);
    EXPECT_TRUE(applyScanSetting(config, "lossScaleCascade", "12"));
    EXPECT_EQ(config.lossScaleCascade, 12);
    const Status unknown = applyScanSetting(config, "no_such_key", "1");
    EXPECT_FALSE(unknown);
    EXPECT_NE(unknown.error().find("no_such_key"), std::string::npos);
    EXPECT_FALSE(applyScanSetting(config, "jump_steps", "2.5")) << "a whole number";
    EXPECT_FALSE(applyScanSetting(config, "jump_steps", "abc"));
    EXPECT_EQ(scanSettingValue(config, "spike_decades"), "2.5");

    // A higher spike threshold silences the x80 spike.
    ScratchDir dir;
    writeRunWithGradientSpike(dir / "run");
    EXPECT_TRUE(scanDirectory(dir / "run", config).incidents.empty());
}

TEST(IncidentDetector, CancellingReturnsAnError)
{
    auto reader = RunReader::open(demoRun("healthy"));
    ASSERT_TRUE(reader);
    auto report = scanRun(**reader, {}, [](double, const std::string&) { return false; });
    EXPECT_FALSE(report);
    EXPECT_NE(report.error().find("cancelled"), std::string::npos);
}

// The scan's orchestrator: loads the inputs, runs the rules in order with progress and
// cancellation, and sorts what they found. The rules live in *Rule.cpp, one per file; what they
// share is in ScanContext.
#include "core/scan/RunRules.h"

#include "core/run/RunFormat.h"
#include "core/run/RunSource.h"
#include "core/scan/ScanContext.h"
#include "core/scan/ScanInputs.h"
#include "core/scan/ScanRules.h"
#include "core/scan/Signatures.h"

#include <algorithm>
#include <exception>
#include <future>
#include <thread>

namespace nanscope {

namespace {

namespace rf = runformat;
using namespace scan;

struct RuleStep
{
    const char* name;
    ScanRule run;
    // Progress reported after the rule, when it has a label.
    double progressAfter;
    const char* progressLabel;
};

// Order matters, and each rule's shared facts (ScanContext) are written before they are read:
// 1. bad inputs          writes badInputs
// 2. BatchNorm           reads badInputs (a NaN batch folded into the running statistics)
// 3. non-finite, blow-up reads badInputs; writes burstRows, blowupOnsetRow/Step, explosionStep
// 4. spikes              reads burstRows and blowupOnsetRow: not inside a burst or a blow-up
// 5. loss scale          writes collapseWindows
// 6. skipped steps       reads blowupOnsetStep, collapseWindows, burstRows: explained skips
// 7. activation growth   reads blowupOnsetStep (a blow-up explains it) and badInputs; streams
//                        /activations while the vanishing stream reads /layers beside it
// 8. vanishing           reads explosionStep; streams /layers (begun on a thread of its own before
//                        rule 1, told where to stop once rule 3 has decided) and reports progress 0.3 to 1
// 9. damaged values      shares nothing
// (evaluation loss and non-finite metrics read blowupOnsetStep: a blow-up explains what follows it)
// then spike aftermath (reads the Spike/NonfiniteLoss incidents and blowupOnsetStep), divergence
// (reads blowupOnsetRow: a blow-up explains a climb) and Adam epsilon (the caller's facts); last,
// the spike score of the primary series goes into every incident's evidence.
constexpr RuleStep kRules[] = {
    {"bad inputs", detectBadInputs, -1, nullptr},
    {"BatchNorm", detectBatchNormCorruption, 0.1, "inputs and buffers"},
    {"non-finite and blow-up", detectNonfiniteAndBlowup, 0.2, "blow-ups"},
    {"spikes", detectSpikes, -1, nullptr},
    {"loss scale", detectLossScaleCollapse, -1, nullptr},
    {"skipped steps", detectSkippedSteps, -1, nullptr},
    {"evaluation loss", detectEvaluationNonfinite, -1, nullptr},
    {"non-finite metrics", detectNonfiniteMetrics, -1, nullptr},
    {"non-finite parameters", detectNonfiniteParameters, -1, nullptr},
    {"activation growth", detectActivationGrowth, -1, nullptr},
    {"vanishing", detectVanishing, -1, nullptr},
    {"damaged values", detectDamagedValues, -1, nullptr},
    {"spike aftermath", detectSpikeAftermath, -1, nullptr},
    {"divergence", detectDivergence, -1, nullptr},
    {"Adam epsilon", detectAdamEpsilon, -1, nullptr},
    {"optimizer reset", detectOptimizerReset, -1, nullptr},
};

} // namespace

std::vector<scan::NamedRule> scan::rulesInOrder()
{
    std::vector<NamedRule> rules;
    for (const RuleStep& rule : kRules)
        rules.push_back({rule.name, rule.run});
    return rules;
}

namespace {

// The rows of the primary series 7 robust deviations above a rolling 1,000-step median, for the
// spike scores. It needs only the scalars, so where there is a second core it is worked out on a
// thread of its own while the rules run (the rules' chain on this thread is what the scan waits
// for); on one core, only when an incident needs it.
class PrimarySpikes
{
public:
    explicit PrimarySpikes(const LogSeries& primary)
        : m_primary(primary)
    {
        if (!primary.empty() && std::thread::hardware_concurrency() > 1)
            m_rows = std::async(std::launch::async, [&primary] { return spikeRows(primary); });
    }
    std::vector<uint8_t> rows() { return m_rows.valid() ? m_rows.get() : spikeRows(m_primary); }

private:
    const LogSeries& m_primary;
    std::future<std::vector<uint8_t>> m_rows;
};

// The spike score (share of the primary series' steps that are spikes) up to each incident's end.
void addSpikeScores(const RunScalars& scalars, PrimarySpikes& primarySpikes, std::vector<Incident>& incidents)
{
    const LogSeries& primary = scalars.primary();
    if (primary.empty() || incidents.empty())
        return;
    const std::vector<uint8_t> spikes = primarySpikes.rows();
    for (Incident& incident : incidents)
        incident.evidence.spikeScore = spikeShare(primary, spikes, rowAfter(primary.steps, incidentEndStep(incident)));
}

// Most severe first, then by onset, then by kind.
void sortIncidents(std::vector<Incident>& incidents)
{
    std::stable_sort(incidents.begin(), incidents.end(), [](const Incident& x, const Incident& y) {
        if (x.severity != y.severity)
            return int(x.severity) < int(y.severity);
        if (x.onsetStep != y.onsetStep)
            return x.onsetStep < y.onsetStep;
        return int(x.kind) < int(y.kind);
    });
}

// Datasets the run lacks that would have allowed more checks.
void noteMissingTables(const ScanInputs& inputs, std::vector<std::string>& notes)
{
    if (!inputs.table(rf::kLayers))
        notes.push_back("no /layers: incidents cannot name parameters, vanishing gradients are not checked");
    if (!inputs.table(rf::kActivations))
        notes.push_back("no /activations: the module that produced a NaN cannot be named");
    if (!inputs.table(rf::kInputs))
        notes.push_back("no /inputs: bad input batches cannot be seen");
}

Result<ScanReport> runRules(const ScanInputs& inputs, const ScanConfig& config, const ProgressCallback& progress)
{
    ScanContext context(inputs, config, progress);
    const Error cancelled{"scan of " + inputs.info().directory + " cancelled"};
    context.report.notes = inputs.notes();
    if (!inputs.hasTrainingLoss()) {
        // Evaluation alone (a Trainer folder whose log holds only eval entries): the one rule that
        // reads it runs; the others need the training loss.
        context.report.notes.push_back("no training loss logged: only the evaluation loss, the parameters' values, "
                                       "the loss scale and skipped steps are checked");
        for (ScanRule rule : {detectEvaluationNonfinite, detectNonfiniteParameters, detectLossScaleCollapse,
                              detectSkippedSteps, detectAdamEpsilon})
            if (Status s = rule(context); !s)
                return Error{s.error()};
        sortIncidents(context.report.incidents);
        return std::move(context.report);
    }
    if (inputs.scalars().steps.empty()) {
        context.report.notes.push_back("the run has no logged steps yet");
        return context.report;
    }
    noteMissingTables(inputs, context.report.notes);
    if (!context.progressed(0.05, "scalars"))
        return cancelled;
    PrimarySpikes primarySpikes(context.scalars.primary());
    startVanishingStream(context);
    for (const RuleStep& rule : kRules) {
        if (Status s = rule.run(context); !s)
            return Error{s.error()};
        if (rule.progressLabel && !context.progressed(rule.progressAfter, rule.progressLabel))
            return cancelled;
        if (context.cancelled)
            return cancelled;
    }
    addSpikeScores(context.scalars, primarySpikes, context.report.incidents);
    sortIncidents(context.report.incidents);
    context.progressed(1.0, "done");
    return std::move(context.report);
}

} // namespace

Result<ScanReport> scan::applyRules(const RunSource& reader, const ScanConfig& config, const ProgressCallback& progress,
                                    const ScanFacts& facts)
{
    try {
        auto inputs = ScanInputs::load(reader);
        if (!inputs)
            return Error{inputs.error()};
        inputs->setFacts(facts);
        return runRules(*inputs, config, progress);
    } catch (const std::exception& e) {
        return Error{"scan of " + reader.info().directory + " failed: " + e.what()};
    }
}

} // namespace nanscope

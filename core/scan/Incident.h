#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nanscope {

// What went wrong in a training run, as `nanscope scan` and the GUI show it. Plain values: the
// scanner fills them on any thread and hands them over by copy.
enum class IncidentKind {
    Blowup,            // loss or gradient norm becomes non-finite or grows by orders of magnitude for good
    BnCorruption,      // normalisation running statistics non-finite, negative or collapsed to ~0
    LossScaleCollapse, // the AMP loss scale halves step after step down to its floor
    BadInput,          // an input batch holds NaN/Inf, fill or saturation values
    SkippedSteps,      // many consecutive optimizer steps skipped
    NonfiniteLoss,     // a non-finite loss the training skipped and recovered from
    NonfiniteGradient, // the same for a non-finite gradient norm beside a finite loss (an AMP overflow skip)
    Vanishing,         // layers whose gradient is zero or orders of magnitude below the rest
    Spike,             // an isolated jump in gradient norm or loss that recovers
    DamagedData,       // values no training can produce (a negative norm): the file is damaged
    EvalNonfinite,     // the evaluation loss non-finite while training is finite (or not logged)
    NonfiniteMetric,   // another logged metric (an AUC, an accuracy) non-finite while training is finite
    NonfiniteParameters, // parameters holding NaN/Inf in a checkpoint, with no blow-up logged to explain it
    // Multi-rank runs (core/scan/RankScan.h):
    RankNonfinite,  // the first rank to go non-finite, before the all-reduce spread it to the others
    RankDivergence, // a rank's local loss or gradient norm far from the other ranks' at the same steps
    RankStopped,    // a rank that stopped (killed, crashed, hung) or lags while the others went on
    ActivationGrowth,    // a module's output range grew by orders of magnitude toward the float16/bfloat16 limit
    AdamEpsilon,         // Adam's eps dominates the update of a large share of elements (optimizer state)
    ExpertCollapse,      // mixture-of-experts: experts that stopped receiving gradient while others train
    OptimizerReset       // the optimizer's count of its updates started again at 0: its state was lost
};

// Where the first NaN/Inf of a blow-up was born.
enum class NonfiniteOrigin {
    Forward,   // the loss (forward pass) went non-finite while the weights it used were finite
    Parameters // the weights themselves hold NaN/Inf, written by the optimizer update before that step
};

enum class Severity { Critical, Warning, Info };

enum class BlowupPattern {
    Sudden, // a jump of at least an order of magnitude within a few steps from a stable baseline
    Gradual // sustained growth over tens to hundreds of steps before the failure
};

// One layer's part in an incident: when it went bad and by how much.
struct LayerOnset
{
    std::string name;   // parameter name (/layers), module path (/activations, /buffers) or input name
    std::string source; // the dataset that showed it: "layers/grad_norm", "activations", "buffers", ...
    int64_t onsetStep = 0;
    // Decades (log10) above the layer's own baseline just after its onset (within jump_steps);
    // +inf when it was non-finite there. Breaks ties between layers bad at the same step.
    double magnitudeDecades = 0;
    bool nonfinite = false;              // it went non-finite in the incident's window
    std::optional<int64_t> nonfiniteStep; // where it first did
};

// The figures an incident rests on. Fields that do not apply to a kind stay empty.
struct IncidentEvidence
{
    std::string series;             // what triggered it: "scalars/grad_norm", "buffers/nonfinite", ...
    int64_t windowBeginStep = 0;    // the steps the evidence covers
    int64_t windowEndStep = 0;
    std::optional<double> baseline; // typical value before the incident (the series' own units)
    std::optional<double> peak;     // largest finite value in the window
    // peak / baseline within the first few steps after the onset (sudden) or over the window.
    std::optional<double> jumpRatio;
    // Robust slope of log10(series) per step from onset to failure: 0.05 means x10 every 20 steps.
    std::optional<double> growthDecadesPerStep;
    std::optional<int64_t> count; // steps affected: skipped, non-finite, scale decreases, ...
    std::vector<LayerOnset> layerOnsets; // every layer that went bad, first bad first
    std::string note;                    // one more fact in words, when there is one

    // Instability signatures (see docs/scan.md). Share of the primary series' logged steps up to
    // the incident's end that lie more than 7 robust deviations above a rolling 1,000-step median.
    std::optional<double> spikeScore;
    // Steps by which the gradient norm's rise began before the loss's (negative: the loss first).
    std::optional<int64_t> gradLeadSteps;
    // Decades between the largest finite value of `headroomOf` and the float16 maximum (65504);
    // at or below 0 it overflowed. And the same against bfloat16's maximum (3.39e38).
    std::optional<double> float16HeadroomDecades;
    std::optional<double> bfloat16HeadroomDecades;
    std::string headroomOf; // the module (activations) the headroom is measured on
    std::optional<NonfiniteOrigin> nonfiniteOrigin; // blow-ups ending in NaN/Inf, when the weights are logged
    // After a spike the training recovered from: parameters whose gradient is exactly zero from the
    // spike on (non-zero before), and the loss level after it over the level before.
    std::vector<std::string> deadAfter;
    std::optional<double> lossPlateauRatio;
    // The gradient norm once the loss came back over its level before the spike, when x10 or more
    // (Adam-family optimizers keep it up for a while after a huge update): left behind, not a blow-up.
    std::optional<double> gradientLevelRatio;
    // Adam epsilon domination: share of elements with sqrt(v_hat) <= eps (over the parameters listed).
    std::optional<double> epsilonDominatedShare;
};

struct Incident
{
    IncidentKind kind = IncidentKind::Spike;
    Severity severity = Severity::Warning;
    int64_t onsetStep = 0;                    // where the deterioration began
    std::optional<int64_t> nonfiniteStep;     // blowup: first NaN/Inf in loss, grad norm or any layer
    std::optional<BlowupPattern> pattern;     // blowup only
    std::vector<std::string> layers;          // first bad first
    // The rank it was found on, in a multi-rank run; absent for a single process.
    std::optional<int> rank;
    std::string cause;                        // probable cause, in words
    std::string suggestion;                   // what to do
    IncidentEvidence evidence;
};

struct ScanReport
{
    std::string runName;
    std::string directory;
    int64_t firstStep = 0;
    int64_t lastStep = 0;          // the last logged step (a run may still be written)
    std::vector<Incident> incidents; // most severe first, then by onset
    // Datasets the run lacks that would have allowed more checks ("no /layers: no layer blame").
    std::vector<std::string> notes;

    bool hasCritical() const
    {
        for (const auto& incident : incidents)
            if (incident.severity == Severity::Critical)
                return true;
        return false;
    }
    // A multi-rank run's scan: its incidents name the rank they were found on (the incident table
    // and the report show a rank column then).
    bool namesRanks() const
    {
        for (const auto& incident : incidents)
            if (incident.rank)
                return true;
        return false;
    }
};

// The last step an incident covers: its first non-finite step, else the end of its evidence window.
int64_t incidentEndStep(const Incident& incident);

// The steps to show for an incident: its extent with a margin either side (at least 20 steps, 60%
// of the extent), kept within the run's steps [runFirstStep, runLastStep] so that an incident at
// step 0 does not zoom out past the data. One definition for the window, the overview and the report.
struct StepRange
{
    double first = 0;
    double last = 0;
};
StepRange incidentViewRange(const Incident& incident, int64_t runFirstStep, int64_t runLastStep);

// Stable lower-case names used in JSON and text output: "blowup", "bn_corruption", "critical", ...
const char* toString(IncidentKind kind);
const char* toString(Severity severity);
const char* toString(BlowupPattern pattern);
const char* toString(NonfiniteOrigin origin);

// The instability signatures of an incident's evidence in words ("spike score 0.4%", "float16
// headroom 0.8 decades in attn.scores", ...), one per item: the text report and the HTML report
// show the same.
std::vector<std::string> signatureFacts(const IncidentEvidence& evidence);

} // namespace nanscope

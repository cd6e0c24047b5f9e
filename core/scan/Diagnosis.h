#pragma once

// Every cause and suggestion the scan writes, in one place. The rules measure and decide; they
// hand the facts to these functions as named fields, and the prose is built here.

#include "core/NumberText.h" // numberText: a number in a sentence
#include "core/run/RunSource.h"
#include "core/scan/Incident.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nanscope::scan {

struct Diagnosis
{
    std::string cause;      // probable cause, in words
    std::string suggestion; // what to do
};

// Sets the incident's cause and suggestion.
void applyDiagnosis(Incident& incident, Diagnosis diagnosis);

// "a, b, c and 2 more".
std::string joinNames(const std::vector<std::string>& names, size_t limit = 3);
// " The batch of step N was saved (batches/x); replay it from checkpoint step M." when the run
// saved that batch, else empty. Appended to suggestions.
std::string savedBatchNote(const RunInfo& info, int64_t step);

struct BadInputFacts
{
    int64_t onsetStep = 0;
    size_t batches = 0;     // distinct input batches affected
    bool nonfinite = false; // NaN or Inf rather than extreme values
    std::vector<std::string> inputs;
    std::string note; // the extreme value, in words
    bool inFirstBatch = false;
    std::string batchNote; // savedBatchNote of the onset step
};
Diagnosis diagnoseBadInput(const BadInputFacts& facts);

enum class BufferFault {
    Nonfinite, // NaN/Inf in the running statistics
    Negative,  // running_var < 0
    Collapsed  // running_var at or below the floor
};

struct BufferFacts
{
    BufferFault fault = BufferFault::Nonfinite;
    std::vector<std::string> layers;
    int64_t onsetStep = 0;
    double varianceFloor = 0;
    // Nonfinite only:
    bool nonfiniteToEnd = false;             // still non-finite in the last logged row
    std::optional<int64_t> evalOnlyNanCount; // eval loss NaN this often while the training loss is finite
    std::optional<int64_t> nanInputStep;     // an input batch with NaN at (or just before) the onset
    bool onsetStepSkipped = false;
};
Diagnosis diagnoseBufferCorruption(const BufferFacts& facts);

// An input batch blamed for an incident.
struct BlamedInput
{
    int64_t step = 0;
    bool nonfinite = false; // NaN/Inf rather than extreme values
    std::string note;
    std::string batchNote;
};

struct BlowupFacts
{
    std::string series; // "gradient norm" or "loss"
    bool sudden = false;
    int64_t onsetStep = 0;
    std::optional<int64_t> nonfiniteStep;
    int64_t windowEndStep = 0;
    std::optional<double> jumpRatio;
    std::optional<double> growthDecadesPerStep;
    std::optional<double> baseline;
    std::string firstLayer; // empty when no layer was blamed
    std::optional<BlamedInput> input;
    bool nanInFirstSteps = false;
    int64_t firstLoggedStep = 0;
    std::optional<double> learningRateRise; // lr at the end / lr at the onset, when it rose
    // The logged learning rate, when it held that one value from the onset to the failure.
    std::optional<double> constantLearningRate;
    // The learning rate climbed row after row from the onset up to the jump (learningRateClimb):
    // how far. The blow-up is gradual, driven by the step size.
    std::optional<double> learningRateClimb;
    bool fp16 = false;
    std::string batchNote; // savedBatchNote of the onset step
    // The first NaN is in the weights, after a stable stretch: written by one optimizer update.
    bool bornInWeights = false;
    bool stableBefore = true; // the series was stable before (false: too few rows to tell)
    // A divergence read on the loss (and the parameter norm) because the logged gradient norm,
    // clipped or flat, rose far less: how much each rose from the onset to the failure.
    std::optional<double> lossClimb, paramNormClimb, primaryRise;
    std::vector<std::string> nanParameters;     // non-finite at the failing step
    std::optional<int64_t> previousLoggedStep;  // the last logged step before it
    // Every parameter was already non-finite at the first bad row and no layer rose before it: the
    // logs cannot tell which layer went bad first (no layer is named).
    bool firstLayerUndetermined = false;
    // A module output (source "activations") or parameter norm ("layers/param_norm") that grew
    // steadily toward the failure before the gradient norm showed it; empty when none.
    std::string precursor;
    std::string precursorSource;
    double precursorRiseDecades = 0;
    double precursorBaseline = 0, precursorPeak = 0; // raw units, before its onset and at the failure
    // The numeric limit the precursor came near ("exp() overflows float16 above 11.09"), if any.
    std::optional<double> precursorLimit;
    std::string precursorLimitText;
    bool float16Overflow = false; // the precursor came near the float16 maximum (nearFloat16Limit)
    // A log-scale parameter (log_std, logvar, ...) or a router's logits: how far exp() of it
    // moved, in decades.
    std::optional<double> precursorExpScaleDecades;
    std::string precursorRoutedExperts; // a router's output: the experts it routes for
    std::optional<int64_t> precursorHeldFromStep; // it reached its numeric limit's reach here and held
    int64_t precursorOnsetStep = 0;
    // How far the primary series rose from the precursor's onset to the failure (x).
    std::optional<double> primaryRiseSincePrecursor;
    // Born in the weights: the logged step whose optimizer update wrote the NaN (exact: the step
    // right before the failing one), and the non-finite parameters whose gradient there was exactly 0.
    std::optional<int64_t> updateStep;
    bool updateStepExact = false;
    std::vector<std::string> zeroGradientParameters;
};
Diagnosis diagnoseBlowup(const BlowupFacts& facts);

// A finite loss that climbed from its best level and stayed up, without NaN (DivergenceRule).
struct DivergenceFacts
{
    int64_t onsetStep = 0;
    int64_t bestStep = 0;
    double bestLevel = 0;
    double endLevel = 0;
    int64_t endStep = 0;
    std::optional<double> learningRateRise; // lr at the end / lr at the onset, when it rose
    std::string batchNote;
};
Diagnosis diagnoseDivergence(const DivergenceFacts& facts);

// A finite loss this many times its recent median at a non-finite gradient step: one extreme batch.
inline constexpr double kExtremeBatchLossJump = 10.0;

struct NonfiniteBurstFacts
{
    int64_t firstStep = 0;
    int64_t lastStep = 0;
    int64_t count = 0;
    bool skippedByTraining = false;
    bool lossFinite = false; // only the gradient norm was non-finite
    double lossJump = 0;     // the finite loss over its median of the steps before (0: unknown)
    bool nanInput = false; // the input batch held NaN/Inf
    bool inFirstBatch = false;
    std::string origin;     // first module whose output went non-finite; empty when unknown
    std::string originKind; // its class
    bool originInputFinite = false;
    bool gradientsNonfinite = false;
    // Activations were logged at the first step and every module output was finite there: the NaN
    // arose after them (in the loss, or in forward's own code outside any module).
    bool activationsFiniteAtFirstStep = false;
    bool logEndsAtBurst = false; // no row after the burst: whether training went on is not seen
    bool fp16 = false;
    bool loggedAsZero = false; // the log wrote 0.0 for this non-finite loss (a Trainer's NaN filter)
    std::string batchNote; // savedBatchNote of the first step
};
Diagnosis diagnoseNonfiniteBurst(const NonfiniteBurstFacts& facts);
// Added to a BatchNorm incident whose NaN came from weights an optimizer update had already made
// non-finite (the blow-up at `step`, born in the parameters).
std::string consequenceOfNanWeightsNote(int64_t step);

struct SpikeFacts
{
    int64_t onsetStep = 0;
    std::string series;
    double jumpRatio = 0;
    bool recovered = true;
    std::string batchNote;
};
Diagnosis diagnoseSpike(const SpikeFacts& facts);

// `cascade`: the decreases in words ("12 consecutive decreases from 6.55e+04 to 1").
Diagnosis diagnoseLossScaleCollapse(const std::string& cascade);

struct SkippedStepsFacts
{
    int64_t firstStep = 0;
    int64_t lastStep = 0;
    int64_t count = 0;
    bool toEnd = false; // still skipping at the end of the log
    std::string batchNote;
};
Diagnosis diagnoseSkippedSteps(const SkippedStepsFacts& facts);

// The optimizer's own count of its updates (optimizer_step) started again at 0 at `step`: within
// the run after `countBefore` updates, or at the run's first logged step (a resumed run).
struct OptimizerResetFacts
{
    int64_t step = 0;
    std::optional<int64_t> countBefore; // within the run: the count it had reached
    std::optional<double> lossRise;     // the loss over the rows after, against the rows before (x)
};
Diagnosis diagnoseOptimizerReset(const OptimizerResetFacts& facts);

// Values no training can produce (negative norms, counts or rates): damage to the file.
struct DamagedDataFacts
{
    int64_t count = 0;
    std::vector<std::string> places; // "layers/param_norm (3 values, steps 120..130)"
};
Diagnosis diagnoseDamagedData(const DamagedDataFacts& facts);

struct EvaluationFacts
{
    int64_t firstStep = 0;
    int64_t nonfinite = 0;        // evaluations with a non-finite loss
    int64_t evaluations = 0;      // all evaluations logged
    int64_t evaluationsSince = 0; // evaluations from the first non-finite one on
    bool toEnd = false;           // the last evaluation is non-finite
    bool trainingLogged = false;  // a training loss is logged (and finite)
};
Diagnosis diagnoseEvaluationNonfinite(const EvaluationFacts& facts);

struct NonfiniteMetricFacts
{
    std::string metric; // the dataset: "auc", "accuracy"
    std::string table;  // "scalars", "eval", "scalars_val"
    int64_t firstStep = 0;
    int64_t lastStep = 0;
    int64_t nonfinite = 0; // values non-finite where the training was not
    int64_t values = 0;    // values logged before any blow-up, where the training was finite
    bool nan = false;      // at least one NaN (else only Inf)
};
Diagnosis diagnoseNonfiniteMetric(const NonfiniteMetricFacts& facts);

struct NonfiniteParameterFacts
{
    int64_t firstStep = 0;
    int64_t previousStep = -1; // the last step seen finite, -1 when the first row is bad already
    std::vector<std::string> layers; // non-finite at firstStep
    size_t parameterCount = 0;       // all parameters
    double count = 0;                // non-finite elements at firstStep
};
Diagnosis diagnoseNonfiniteParameters(const NonfiniteParameterFacts& facts);

// Parameters whose gradient is zero or negligible over the whole run.
Diagnosis diagnoseFrozen(const std::vector<std::string>& layers, size_t count);

struct VanishingFacts
{
    std::vector<std::string> layers;
    size_t count = 0;
    double zeroFraction = 0; // of the rows
    double decades = 0;      // the vanishing_decades threshold
    int64_t onsetStep = 0;
    int64_t endStep = 0;
};
Diagnosis diagnoseVanishing(const VanishingFacts& facts);
// Experts whose gradient is zero while their siblings train (core/scan/ExpertLoad.h): the router
// stopped sending them tokens. `layers` are the starved experts' parameters.
Diagnosis diagnoseExpertCollapse(const VanishingFacts& facts, const std::vector<std::string>& experts);

// ---- replay signatures (judged by core/replay/ReplaySignatures; the texts live here) ----

// An op of a replay, as the texts name it: "aten::softmax (op #7) in 'blocks.0.attn'".
struct ReplayOpName
{
    int index = -1;
    std::string op, module;
};

struct AttentionLogitFacts
{
    ReplayOpName softmax;  // the flagged call with the largest input
    double inputAbsmax = 0;
    double entropy = 0, uniformEntropy = 0; // nats
    size_t calls = 1;      // softmax calls flagged
};
Diagnosis diagnoseReplayAttentionLogits(const AttentionLogitFacts& facts);

struct LossPrecisionFacts
{
    ReplayOpName lossOp;
    std::string dtype; // "float16", "bfloat16"
};
Diagnosis diagnoseReplayLossInLowPrecision(const LossPrecisionFacts& facts);

struct Float16HeadroomFacts
{
    ReplayOpName first;     // the first op under the threshold
    double absmax = 0;      // its output's max |x|
    double bits = 0;        // its headroom to float16's largest value
    double thresholdBits = 0;
    size_t ops = 1;         // ops under the threshold
    // The dtype the first op computed in ("float16", "float32", "bfloat16"): a replay as trained
    // computes in what the run used, so the advice fits the run (float32 holds 1e9; float16 does not).
    std::string computedIn = "float16";
};
Diagnosis diagnoseReplayFloat16Headroom(const Float16HeadroomFacts& facts);

// ---- multi-rank runs (RankScan.h) ------------------------------------------------------------

// The first rank whose own loss or local gradient went non-finite.
struct RankNonfiniteFacts
{
    int rank = 0;
    int64_t step = 0;
    std::vector<int> sameStepRanks; // other ranks non-finite at that very step
    int worldSize = 0;
    std::optional<int64_t> othersStep; // the first step any other rank went non-finite, later
    bool lossNonfinite = false;        // its own loss (else only its local gradient)
    std::vector<std::string> badInputs; // "x (3 NaN)": inputs it was given at that step that held NaN/Inf
    // "x (largest magnitude 1e+30; typically 1)": finite inputs its own scan judged extreme there
    std::vector<std::string> extremeInputs;
    bool inputsLogged = false;
    std::vector<std::string> badLayers; // parameters whose local gradient was non-finite, in order
    bool localGradientsLogged = false;
    std::string batchNote; // savedBatchNote of that rank at that step
};
Diagnosis diagnoseRankNonfinite(const RankNonfiniteFacts& facts);
// Added to another rank's non-finite incident at the leader's step: where its NaN came from.
std::string spreadFromRankNote(int leaderRank, int64_t step);

struct RankDivergenceFacts
{
    int rank = 0;
    std::string series; // "local loss", "local gradient norm"
    int64_t firstStep = 0;
    int64_t steps = 0;       // steps it departed on
    double decades = 0;      // the largest departure from the ranks' median, in decades (signed)
    int64_t worstStep = 0;
    std::string batchNote;
};
Diagnosis diagnoseRankDivergence(const RankDivergenceFacts& facts);

struct RankStoppedFacts
{
    int rank = 0;
    bool readable = true;   // it wrote a readable run
    std::string error;      // why not
    std::optional<int64_t> lastStep;
    int64_t furthestStep = 0; // the last step of the rank that went furthest
    bool othersFinished = false;
    bool closedItself = false; // its rank.json says finished (it lags, it did not die)
};
Diagnosis diagnoseRankStopped(const RankStoppedFacts& facts);

// ---- instability signatures ----------------------------------------------------------------------

struct ActivationGrowthFacts
{
    std::string module;
    int64_t onsetStep = 0;
    int64_t peakStep = 0;
    double baseline = 0;
    double peak = 0;
    double float16HeadroomDecades = 0; // <= 0: overflowed
    double decadesPerStep = 0;
    bool looksLikeAttention = false; // the module's name or class says attention scores/logits
};
Diagnosis diagnoseActivationGrowth(const ActivationGrowthFacts& facts);

struct SpikeAftermathFacts
{
    int64_t spikeStep = 0;
    std::vector<std::string> deadAfter;  // gradient exactly zero from the spike on
    std::optional<double> lossPlateauRatio; // loss level after over before
    std::optional<double> gradientLevelRatio; // grad norm once the loss came back over before (x10 and up)
    bool updateSkipped = false; // every step of it was skipped: the weights never took its update
};
// Appends to a spike's (or recovered burst's) diagnosis what it left behind.
void addSpikeAftermath(Diagnosis& diagnosis, const SpikeAftermathFacts& facts);

struct AdamEpsilonFacts
{
    int64_t step = 0;          // of the optimizer state read
    std::string file;          // where it was read
    double share = 0;          // elements with sqrt(v_hat) <= eps, over all listed
    std::vector<std::string> parameters; // those above the threshold, worst first
    std::optional<double> eps; // the group's eps, when one
};
Diagnosis diagnoseAdamEpsilon(const AdamEpsilonFacts& facts);

} // namespace nanscope::scan

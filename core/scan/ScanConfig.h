#pragma once

#include "core/Result.h"
#include "core/tensor/BatchNormHealth.h"

#include <cstdint>
#include <string>
#include <vector>

namespace nanscope {

// The scanner's thresholds. Every field has a settings-file key (see scanSettings()) and is
// documented in docs/scan.md; the defaults are what the tests and the quality figures use.
// "Decades" are powers of ten: 1 decade = x10.
struct ScanConfig
{
    // Blow-up: a terminal rise of the gradient norm (or loss) of this many decades without NaN
    // also counts as a blow-up.
    double blowupDecades = 3.0;
    // Divergence: a finite loss whose end level is this many times its best level (on a running
    // median), held over the last rows and reached by a climb, not a jump; on logs of at least
    // divergenceMinRows positive rows. 0 switches the rule off.
    double divergenceRatio = 3.0;
    int64_t divergenceMinRows = 20;
    // Sudden vs gradual: a rise of at least jumpDecades within jumpSteps steps of the onset.
    double jumpDecades = 1.0;
    int64_t jumpSteps = 3;
    // Steps looked back from a failure for the stable baseline and the onset.
    int64_t lookbackSteps = 1000;
    // Precursor (core/scan/Precursor.h): a quantity inside the model (a module's output range, a
    // parameter's norm or gradient norm, a logged scalar) that climbed steadily by at least
    // precursorDecades from its own baseline and kept climbing until the failure, looked for over
    // precursorLookbackSteps before it: where it began is the blow-up's onset.
    double precursorDecades = 0.5;
    int64_t precursorLookbackSteps = 4000;
    // Rows just before the onset whose median is the baseline (schedules move the level).
    int64_t baselineRows = 50;
    // Smoothing half-width (rows) of the median used to find the onset through noise.
    int64_t smoothingRows = 4;
    // The onset is the last point where the smoothed curve is within max(noiseSigmas * noise,
    // minOnsetDecades) of the baseline.
    double noiseSigmas = 3.0;
    double minOnsetDecades = 0.15;
    // After a non-finite value, the loss must be finite again within this many rows and back
    // within recoveryDecades of its baseline for the incident to count as recovered.
    int64_t recoveryRows = 20;
    double recoveryDecades = 1.0;
    // Non-finite steps closer than this many steps form one burst (one incident).
    int64_t burstGapSteps = 5;

    // Spike: a jump of at least spikeDecades (and spikeNoiseSigmas noise widths) above the median
    // of the previous spikeBaselineRows finite values, back to normal within recoveryRows.
    double spikeDecades = 1.0;
    // Spikes in the first warmupSteps steps are not reported: early training is turbulent. A jump
    // of warmupSpikeDecades or more (x100) over the last few rows, back at once, is reported even
    // there: no warm-up explains it, and a short fine-tune may be all warm-up.
    int64_t warmupSteps = 50;
    double warmupSpikeDecades = 2.0;
    double spikeNoiseSigmas = 6.0;
    int64_t spikeBaselineRows = 20;
    // A loss spike must also rise by this fraction of the run's starting loss: a converged loss of
    // 2e-4 that bumps x10 moved by 0.1% of where training began, within any run's noise.
    double spikeLossFloor = 0.05;

    // Per-layer blame: a layer is bad from where it exceeds its own baseline by layerDecades or
    // turns non-finite. Layers whose worst values lie within tieDecades of each other at the same
    // onset step count as tied, and the one earlier in the forward pass comes first.
    double layerDecades = 1.0;
    double tieDecades = 1.0;
    int64_t maxLayersListed = 10;

    // Vanishing: a layer's gradient norm is zero in most of a cell of rows, or this many decades
    // below the median layer, for at least vanishingMinSteps steps.
    double vanishingDecades = 4.0;
    int64_t vanishingMinSteps = 50;

    // BatchNorm and alike: running variance at or below this (or negative) has collapsed. The
    // default is the one definition every view and the checkpoint flags use (BatchNormHealth.h).
    double runningVarFloor = batchnorm::kCollapsedVariance;

    // Inputs: a batch whose largest magnitude exceeds the input's median over the run by
    // inputDecades. Known fill and saturation values (32767, 65535, 999999999, ...) are named.
    double inputDecades = 2.0;

    // AMP loss scale: at least lossScaleCascade consecutive decreases, ending at or below
    // lossScaleFloor, or starting after the first lossScaleWarmupSteps steps.
    int64_t lossScaleCascade = 8;
    double lossScaleFloor = 1.0;
    int64_t lossScaleWarmupSteps = 100;

    // Skipped steps: at least this many consecutive skipped optimizer steps.
    int64_t skippedRunSteps = 10;

    // Multi-rank runs: a rank's local loss or gradient norm this many decades from the ranks'
    // median at the same step (and beyond 6 robust noise widths of their spread) departs; a rank
    // whose last step is more than rankLagSteps behind the furthest rank's lags.
    double rankDivergenceDecades = 1.0;
    int64_t rankLagSteps = 3;

    // Rows per block when streaming [n, L] tables; rounded to the file's 128-row chunks.
    int64_t blockRows = 4096;
};

// One settings-file key, for --help, docs and validation.
struct ScanSetting
{
    const char* key;
    const char* description;
};

// Every key ScanConfig accepts, in the order docs/scan.md lists them.
std::vector<ScanSetting> scanSettings();

// Sets `key` from its text form (a number). An unknown key or a bad number is an error value
// naming the key.
Status applyScanSetting(ScanConfig& config, const std::string& key, const std::string& value);

// The current value of `key` as text (for printing the effective configuration).
std::string scanSettingValue(const ScanConfig& config, const std::string& key);

} // namespace nanscope

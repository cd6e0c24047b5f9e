#include "core/scan/ScanConfig.h"

#include <cmath>
#include <cstdlib>
#include <sstream>
#include <variant>

namespace nanscope {

namespace {

using Field = std::variant<double ScanConfig::*, int64_t ScanConfig::*>;

struct SettingField
{
    ScanSetting setting;
    Field field;
};

const std::vector<SettingField>& fields()
{
    static const std::vector<SettingField> all{
        {{"blowup_decades", "terminal rise (decades) of grad norm or loss that counts as a blow-up without NaN"},
         &ScanConfig::blowupDecades},
        {{"divergence_ratio", "a finite loss this many times its best level, held to the end after a climb, has diverged"},
         &ScanConfig::divergenceRatio},
        {{"divergence_min_rows", "positive loss rows a log needs before a divergence is judged"},
         &ScanConfig::divergenceMinRows},
        {{"jump_decades", "rise (decades) within jump_steps of the onset that makes a blow-up sudden"},
         &ScanConfig::jumpDecades},
        {{"jump_steps", "steps after the onset within which a sudden blow-up has made its jump"}, &ScanConfig::jumpSteps},
        {{"lookback_steps", "steps looked back from a failure for the baseline and the onset"},
         &ScanConfig::lookbackSteps},
        {{"precursor_decades", "steady climb (decades) of a quantity inside the model, until the failure, that "
                               "makes it a blow-up's precursor"},
         &ScanConfig::precursorDecades},
        {{"precursor_lookback_steps", "steps looked back from a failure for a precursor"},
         &ScanConfig::precursorLookbackSteps},
        {{"baseline_rows", "rows just before the onset whose median is the baseline"}, &ScanConfig::baselineRows},
        {{"smoothing_rows", "half-width (rows) of the running median that finds the onset through noise"},
         &ScanConfig::smoothingRows},
        {{"noise_sigmas", "noise widths above the baseline where deterioration counts as begun"},
         &ScanConfig::noiseSigmas},
        {{"min_onset_decades", "smallest rise (decades) above the baseline that counts as deterioration"},
         &ScanConfig::minOnsetDecades},
        {{"recovery_rows", "rows within which a non-finite loss or a spike must have recovered"},
         &ScanConfig::recoveryRows},
        {{"recovery_decades", "how close (decades) to the baseline a recovered series must be"},
         &ScanConfig::recoveryDecades},
        {{"burst_gap_steps", "non-finite steps closer than this form one incident"}, &ScanConfig::burstGapSteps},
        {{"spike_decades", "jump (decades) above the running median that counts as a spike"},
         &ScanConfig::spikeDecades},
        {{"warmup_steps", "spikes in the first steps of training are not reported"}, &ScanConfig::warmupSteps},
        {{"warmup_spike_decades", "a jump (decades) reported even within the warm-up steps"},
         &ScanConfig::warmupSpikeDecades},
        {{"spike_noise_sigmas", "a spike must also exceed this many noise widths"}, &ScanConfig::spikeNoiseSigmas},
        {{"spike_baseline_rows", "finite rows in the running median a spike is measured against"},
         &ScanConfig::spikeBaselineRows},
        {{"spike_loss_floor", "a loss spike must also rise by this fraction of the starting loss"},
         &ScanConfig::spikeLossFloor},
        {{"layer_decades", "rise (decades) above its own baseline that makes a layer bad"},
         &ScanConfig::layerDecades},
        {{"tie_decades", "layers bad at the same step within this many decades are tied (forward order decides)"},
         &ScanConfig::tieDecades},
        {{"max_layers_listed", "layers named per incident"}, &ScanConfig::maxLayersListed},
        {{"vanishing_decades", "decades below the median layer where a gradient counts as vanished"},
         &ScanConfig::vanishingDecades},
        {{"vanishing_min_steps", "steps a layer must stay vanished"}, &ScanConfig::vanishingMinSteps},
        {{"running_var_floor", "running variance at or below this has collapsed"}, &ScanConfig::runningVarFloor},
        {{"input_decades", "rise (decades) of an input's largest magnitude over its median over the run"},
         &ScanConfig::inputDecades},
        {{"loss_scale_cascade", "consecutive loss-scale decreases that form a cascade"},
         &ScanConfig::lossScaleCascade},
        {{"loss_scale_floor", "a cascade ending at or below this scale is a collapse even during warm-up"},
         &ScanConfig::lossScaleFloor},
        {{"loss_scale_warmup_steps", "cascades that start before this step and end above the floor are warm-up"},
         &ScanConfig::lossScaleWarmupSteps},
        {{"skipped_run_steps", "consecutive skipped steps that form an incident"}, &ScanConfig::skippedRunSteps},
        {{"rank_divergence_decades", "decades from the ranks' median at which a rank's local loss or grad norm departs"},
         &ScanConfig::rankDivergenceDecades},
        {{"rank_lag_steps", "steps behind the furthest rank at which a rank counts as stopped or lagging"},
         &ScanConfig::rankLagSteps},
        {{"block_rows", "rows per block when streaming layer tables (rounded to 128-row chunks)"},
         &ScanConfig::blockRows},
    };
    return all;
}

const SettingField* find(const std::string& key)
{
    // Accept the C++ spelling too (blowupDecades), so a JSON written from the struct works.
    std::string snake;
    for (char c : key) {
        if (std::isupper(static_cast<unsigned char>(c))) {
            snake += '_';
            snake += char(std::tolower(static_cast<unsigned char>(c)));
        } else {
            snake += c == '-' ? '_' : c;
        }
    }
    for (const auto& f : fields())
        if (snake == f.setting.key)
            return &f;
    return nullptr;
}

} // namespace

std::vector<ScanSetting> scanSettings()
{
    std::vector<ScanSetting> settings;
    for (const auto& f : fields())
        settings.push_back(f.setting);
    return settings;
}

Status applyScanSetting(ScanConfig& config, const std::string& key, const std::string& value)
{
    const SettingField* f = find(key);
    if (!f)
        return Error{"unknown scan setting '" + key + "'"};
    char* end = nullptr;
    const double number = value.empty() ? NAN : std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || !std::isfinite(number) || number < 0)
        return Error{"scan setting " + key + ": '" + value + "' is not a non-negative number"};
    if (auto d = std::get_if<double ScanConfig::*>(&f->field)) {
        config.*(*d) = number;
    } else {
        auto i = std::get<int64_t ScanConfig::*>(f->field);
        if (number != std::floor(number))
            return Error{"scan setting " + key + ": '" + value + "' is not a whole number"};
        config.*i = int64_t(number);
    }
    return Status::success();
}

std::string scanSettingValue(const ScanConfig& config, const std::string& key)
{
    const SettingField* f = find(key);
    if (!f)
        return {};
    std::ostringstream out;
    if (auto d = std::get_if<double ScanConfig::*>(&f->field))
        out << config.*(*d);
    else
        out << config.*std::get<int64_t ScanConfig::*>(f->field);
    return out.str();
}

} // namespace nanscope

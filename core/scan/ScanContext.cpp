#include "core/scan/ScanContext.h"

#include "core/run/RunFormat.h"

#include <algorithm>

namespace nanscope::scan {

namespace {

ScanConfig normalised(ScanConfig config)
{
    config.blockRows = std::max<int64_t>(128, (config.blockRows + 127) / 128 * 128);
    config.smoothingRows = std::max<int64_t>(0, config.smoothingRows);
    return config;
}

} // namespace

ScanContext::ScanContext(const ScanInputs& inputs, const ScanConfig& config, const ProgressCallback& progress)
    : inputs(inputs)
    , scalars(inputs.scalars())
    , config(normalised(config))
    , order(inputs.table(runformat::kActivations), inputs.table(runformat::kLayers))
    , progress(progress)
{
    report.runName = inputs.info().runName;
    report.directory = inputs.info().directory;
    if (!scalars.steps.empty()) {
        report.firstStep = scalars.steps.front();
        report.lastStep = scalars.steps.back();
    } else if (const auto& layerSteps = inputs.steps(runformat::kLayers); !layerSteps.empty()) {
        report.firstStep = layerSteps.front();
        report.lastStep = layerSteps.back();
    } else if (!scalars.evalSteps.empty()) {
        report.firstStep = scalars.evalSteps.front();
        report.lastStep = scalars.evalSteps.back();
    }
}

bool ScanContext::progressed(double fraction, const std::string& what)
{
    if (!reportProgress(progress, fraction, what))
        cancelled = true;
    return !cancelled;
}

const Incident* ScanContext::badInputNear(int64_t step, int64_t before, int64_t after) const
{
    for (const auto& incident : badInputs)
        if (incident.evidence.windowEndStep >= step - before && incident.onsetStep <= step + after)
            return &incident;
    return nullptr;
}

bool ScanContext::nearRecoveredBurst(size_t row) const
{
    for (auto [first, last] : burstRows)
        if (row + 2 >= first && row <= last + 2)
            return true;
    return false;
}

} // namespace nanscope::scan

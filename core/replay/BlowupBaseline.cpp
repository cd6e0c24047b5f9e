#include "core/replay/BlowupBaseline.h"

#include "core/NumberText.h"
#include "core/run/RunFormat.h"
#include "core/run/RunSource.h"
#include "core/scan/RobustStats.h"

#include <algorithm>
#include <cmath>

namespace nanscope {

namespace rf = runformat;

namespace {

std::optional<double> medianBefore(const std::vector<double>& steps, const std::vector<double>& values, int64_t step)
{
    std::vector<double> before;
    for (size_t i = 0; i < values.size() && i < steps.size(); ++i)
        if (steps[i] < double(step) && std::isfinite(values[i]))
            before.push_back(values[i]);
    if (before.empty())
        return std::nullopt;
    return scan::medianOf(std::move(before));
}

bool blewUp(double value, const std::optional<double>& typical)
{
    return std::isfinite(value) && typical && *typical > 0 && std::abs(value) > kBlowupFactor * *typical;
}

} // namespace

BlowupBaseline blowupBaselineBefore(const std::vector<double>& steps, const std::vector<double>& losses,
                                    const std::vector<double>& gradNorms, int64_t step)
{
    return {medianBefore(steps, losses, step), medianBefore(steps, gradNorms, step)};
}

BlowupBaseline blowupBaselineBefore(const RunSource& run, int64_t step)
{
    const auto steps = run.readSeries(rf::kScalars, rf::kSteps);
    if (!steps)
        return {};
    const auto series = [&](const char* name) {
        const TableInfo* scalars = run.info().table(rf::kScalars);
        if (!scalars || std::find(scalars->datasets.begin(), scalars->datasets.end(), name) == scalars->datasets.end())
            return std::vector<double>{};
        auto values = run.readSeries(rf::kScalars, name);
        return values ? std::move(*values) : std::vector<double>{};
    };
    return blowupBaselineBefore(*steps, series(rf::scalar::kLoss), series(rf::scalar::kGradNorm), step);
}

std::string badSampleCriterionText(const BlowupBaseline& baseline)
{
    std::vector<std::string> parts{"a non-finite value"};
    const std::string factor = numberText(kBlowupFactor);
    if (baseline.loss)
        parts.push_back("a loss over " + factor + "x the run's typical (" + numberText(*baseline.loss, 3) + ")");
    if (baseline.gradNorm)
        parts.push_back("a gradient norm over " + factor + "x the run's typical (" + numberText(*baseline.gradNorm, 3) + ")");
    std::string text = parts.front();
    for (size_t i = 1; i < parts.size(); ++i)
        text += (i + 1 == parts.size() ? " or " : ", ") + parts[i];
    return text;
}

bool lossBlewUp(double loss, const BlowupBaseline& baseline)
{
    return blewUp(loss, baseline.loss);
}

bool gradNormBlewUp(double gradNorm, const BlowupBaseline& baseline)
{
    return blewUp(gradNorm, baseline.gradNorm);
}

} // namespace nanscope

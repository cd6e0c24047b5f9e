#include "core/importers/TrainerHiddenNonfiniteLoss.h"

#include "core/run/RunFormat.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace nanscope {

namespace {

// How many logged points on each side give the level a 0.0 is judged against.
constexpr size_t kNeighbours = 5;
// A loss level this far above zero cannot fall to exactly 0.0 in one step and come back.
constexpr double kLevelFarFromZero = 1e-3;

double neighbourMedian(const std::vector<ScalarPoint>& points, size_t at)
{
    std::vector<double> around;
    const size_t first = at >= kNeighbours ? at - kNeighbours : 0;
    const size_t last = std::min(points.size(), at + kNeighbours + 1);
    for (size_t i = first; i < last; ++i)
        if (i != at && std::isfinite(points[i].value) && points[i].value != 0.0)
            around.push_back(points[i].value);
    if (around.empty())
        return 0.0;
    std::nth_element(around.begin(), around.begin() + long(around.size() / 2), around.end());
    return around[around.size() / 2];
}

// The gradient norm by step, looked up once per candidate (a log may hold many zeros: no scan each).
class GradientNorms
{
public:
    GradientNorms(const ScalarLog& log, const std::string& name)
    {
        const auto found = log.series.find(name);
        if (found != log.series.end())
            for (const ScalarPoint& point : found->second)
                m_byStep[point.step] = point.value;
    }
    // A hidden NaN comes with a gradient norm of 0 (no gradient), NaN or Inf, or none logged.
    bool allowHiddenNonfiniteAt(int64_t step) const
    {
        const auto found = m_byStep.find(step);
        return found == m_byStep.end() || found->second == 0.0 || !std::isfinite(found->second);
    }

private:
    std::unordered_map<int64_t, double> m_byStep;
};

} // namespace

bool trainerHidesNonfiniteLosses(const std::string& loggingSteps, const std::string& nanInfFilter)
{
    // With several steps an interval the Trainer logs their average, in which the NaN step was
    // replaced by the average before it: no 0.0 stands for it.
    return loggingSteps == "1" && nanInfFilter != "false";
}

void readHiddenNonfiniteLosses(ScalarLog& log, const std::string& lossName, const std::string& gradNormName)
{
    const auto loss = log.series.find(lossName);
    if (loss == log.series.end())
        return;
    std::vector<ScalarPoint>& points = loss->second;
    std::vector<int64_t> hidden;
    std::optional<GradientNorms> gradientNorms; // read only when a zero is a candidate
    for (size_t i = 0; i < points.size(); ++i) {
        if (points[i].value != 0.0 || !(neighbourMedian(points, i) > kLevelFarFromZero))
            continue;
        if (!gradientNorms)
            gradientNorms.emplace(log, gradNormName);
        if (gradientNorms->allowHiddenNonfiniteAt(points[i].step)) {
            hidden.push_back(points[i].step);
            points[i].value = std::numeric_limits<double>::quiet_NaN();
        }
    }
    if (hidden.empty())
        return;
    std::string list;
    for (int64_t step : hidden)
        list += (list.empty() ? "" : ",") + std::to_string(step);
    log.attributes[runformat::kLossLoggedAsZeroAttribute] = list;
    std::string steps;
    for (size_t i = 0; i < hidden.size() && i < 10; ++i)
        steps += (i ? ", " : "") + std::to_string(hidden[i]);
    if (hidden.size() > 10)
        steps += ", ... (" + std::to_string(hidden.size()) + " in all)";
    log.notes.push_back("the Trainer logged loss 0.0 at step(s) " + steps +
                        ", where the steps around logged a loss far from zero: that 0.0 is not the loss. transformers "
                        "writes 0.0 in place of a NaN or Inf loss (logging_nan_inf_filter, on by default, with "
                        "logging_steps 1), so nanscope reads these steps as non-finite. Record with "
                        "nanscope_recorder.hf.NanscopeCallback to keep the raw loss");
}

} // namespace nanscope

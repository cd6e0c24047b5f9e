#include "core/importers/TrainerHiddenNonfiniteLoss.h"

#include "core/run/RunFormat.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
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

bool gradientNormAllows(const ScalarLog& log, const std::string& gradNormName, int64_t step)
{
    const auto found = log.series.find(gradNormName);
    if (found == log.series.end())
        return true;
    for (const ScalarPoint& point : found->second)
        if (point.step == step)
            return point.value == 0.0 || !std::isfinite(point.value);
    return true; // not logged at that step
}

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
    for (size_t i = 0; i < points.size(); ++i) {
        if (points[i].value != 0.0 || !gradientNormAllows(log, gradNormName, points[i].step))
            continue;
        const double level = neighbourMedian(points, i);
        if (level > kLevelFarFromZero) {
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

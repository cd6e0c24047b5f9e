#include "core/importers/LossScaleSteps.h"

#include "core/run/RunFormat.h"
#include "core/importers/TextLogLines.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace nanscope::textlog {

namespace {

// The steps a change printed after `reportsBefore` step reports can belong to: (lower, upper].
struct Window {
    int64_t lower = 0; // the last reported step before it, 0 before the first report
    double lowerTime = kNoTime;
    std::optional<int64_t> upper; // the report that closes it; none after the last report
    double upperTime = kNoTime;
    double secondsPerStep = kNoTime;
};

Window windowAt(size_t reportsBefore, const std::vector<StepReport>& reports, double medianSecondsPerStep)
{
    Window window;
    if (reportsBefore > 0) {
        window.lower = reports[reportsBefore - 1].step;
        window.lowerTime = reports[reportsBefore - 1].time;
    }
    if (reportsBefore < reports.size()) {
        window.upper = reports[reportsBefore].step;
        window.upperTime = reports[reportsBefore].time;
        if (*window.upper <= window.lower) { // the counter went back (a resumed run): no lower bound
            window.lower = 0;
            window.lowerTime = kNoTime;
        }
    }
    window.secondsPerStep = medianSecondsPerStep;
    if (window.upper && window.upper > window.lower && std::isfinite(window.upperTime - window.lowerTime)
        && window.upperTime > window.lowerTime)
        window.secondsPerStep = (window.upperTime - window.lowerTime) / double(*window.upper - window.lower);
    return window;
}

double medianSecondsPerStep(const std::vector<StepReport>& reports)
{
    std::vector<double> perStep;
    for (size_t i = 1; i < reports.size(); ++i) {
        const double seconds = reports[i].time - reports[i - 1].time;
        const int64_t steps = reports[i].step - reports[i - 1].step;
        if (steps > 0 && std::isfinite(seconds) && seconds > 0)
            perStep.push_back(seconds / double(steps));
    }
    if (perStep.empty())
        return kNoTime;
    std::nth_element(perStep.begin(), perStep.begin() + perStep.size() / 2, perStep.end());
    return perStep[perStep.size() / 2];
}

// The step a change at time t most likely ran, from the window's clock; nullopt without one.
std::optional<int64_t> stepFromTime(const Window& window, double t)
{
    if (!std::isfinite(t) || !(window.secondsPerStep > 0))
        return std::nullopt;
    // Steps away from the report; beyond any run's length the clocks disagree and say nothing.
    auto stepsAway = [&](double seconds) -> std::optional<int64_t> {
        const double steps = seconds / window.secondsPerStep;
        return std::fabs(steps) < double(kLargestStep) ? std::optional<int64_t>(std::llround(steps)) : std::nullopt;
    };
    if (window.upper && std::isfinite(window.upperTime))
        if (const auto back = stepsAway(window.upperTime - t))
            return *window.upper - *back;
    if (!window.upper && std::isfinite(window.lowerTime))
        if (const auto ahead = stepsAway(t - window.lowerTime))
            return window.lower + std::max<int64_t>(1, *ahead);
    return std::nullopt;
}

std::string range(int64_t from, int64_t to)
{
    return std::to_string(from) + ".." + std::to_string(to);
}

void warnOnCountMismatch(const std::vector<size_t>& overflowsPerWindow, const std::vector<StepReport>& reports,
    const std::string& path, StepResolution& resolution)
{
    for (size_t w = 0; w < reports.size(); ++w) {
        const auto& report = reports[w];
        const std::optional<int64_t> previous = w == 0 ? std::optional<int64_t>(0) : reports[w - 1].skippedTotal;
        if (!report.skippedTotal || !previous || *report.skippedTotal < *previous)
            continue; // no counter here, or it restarted
        const int64_t counted = *report.skippedTotal - *previous;
        if (counted == int64_t(overflowsPerWindow[w]))
            continue;
        const std::string since
            = w == 0 ? "since the start of the log" : "since step=" + std::to_string(reports[w - 1].step);
        resolution.warnings.push_back(path + ": line " + std::to_string(report.line)
            + ": step=" + std::to_string(report.step) + ", skipped=" + std::to_string(*report.skippedTotal) + " counts "
            + std::to_string(counted) + " skipped steps " + since + ", but " + std::to_string(overflowsPerWindow[w])
            + " overflow lines were read in between");
    }
}

// Exact steps from the fused optimizer's iteration numbers, if they fit one for one.
bool assignExactSteps(std::vector<ScaleChange*>& overflows, const std::vector<int64_t>& iterations,
    const std::vector<StepReport>& reports)
{
    if (overflows.empty() || iterations.size() != overflows.size())
        return false;
    for (size_t i = 0; i < overflows.size(); ++i) {
        const Window window = windowAt(overflows[i]->reportsBefore, reports, kNoTime);
        const int64_t step = iterations[i] + 1;
        if (step <= window.lower || (window.upper && step > *window.upper))
            return false;
    }
    for (size_t i = 0; i < overflows.size(); ++i) {
        overflows[i]->step = iterations[i] + 1;
        overflows[i]->stepBasis.clear();
    }
    return true;
}

// Time-stamp estimates, kept inside each window and one step apart.
void assignEstimatedSteps(std::vector<ScaleChange*>& overflows, const std::vector<StepReport>& reports, double median)
{
    std::map<size_t, std::vector<ScaleChange*>> byWindow;
    for (ScaleChange* change : overflows)
        byWindow[change->reportsBefore].push_back(change);
    for (auto& [reportsBefore, changes] : byWindow) {
        const Window window = windowAt(reportsBefore, reports, median);
        const int64_t count = int64_t(changes.size());
        int64_t previous = window.lower;
        for (int64_t i = 0; i < count; ++i) {
            ScaleChange& change = *changes[size_t(i)];
            const std::optional<int64_t> estimate = stepFromTime(window, change.time);
            const int64_t lowest = previous + 1;
            if (window.upper) {
                const int64_t highest = std::max(lowest, *window.upper - (count - 1 - i));
                change.step = estimate ? std::clamp(*estimate, lowest, highest) : highest;
                change.stepBasis = (estimate ? "estimated from its time stamp"
                                             : "placed at the end of its window, the log has no time stamps")
                    + std::string("; the step counter puts it in steps ") + range(window.lower + 1, *window.upper);
            } else if (!reports.empty()) {
                change.step = estimate ? std::max(*estimate, lowest) : lowest;
                change.stepBasis = (estimate ? "estimated from its time stamp" : "counted in order")
                    + std::string(" after the last step report, step=") + std::to_string(window.lower);
            } else {
                change.step = lowest;
                change.stepBasis = "numbered in order, the log has no step counter";
            }
            previous = change.step;
        }
    }
}

void assignIncreaseSteps(std::vector<ScaleChange>& changes, const std::vector<StepReport>& reports, double median,
    bool overflowsExact, int64_t scaleWindow)
{
    int64_t lastOverflowStep = 0; // the fused optimizer counts from "iteration -1" before any overflow
    int64_t increasesSince = 0;
    for (ScaleChange& change : changes) {
        if (change.overflow) {
            lastOverflowStep = change.step;
            increasesSince = 0;
            continue;
        }
        ++increasesSince;
        const Window window = windowAt(change.reportsBefore, reports, median);
        if (overflowsExact && scaleWindow > 0) {
            const int64_t step = lastOverflowStep + 1 + scaleWindow * increasesSince;
            if (step > window.lower && (!window.upper || step <= *window.upper)) {
                change.step = step;
                change.stepBasis.clear();
                continue;
            }
        }
        const std::optional<int64_t> estimate = stepFromTime(window, change.time);
        const int64_t lowest = window.lower + 1;
        change.step = window.upper
            ? std::clamp(estimate.value_or(*window.upper), lowest, std::max(lowest, *window.upper))
            : std::max(estimate.value_or(lowest), lowest);
        change.stepBasis = estimate ? "estimated from its time stamp" : "placed by the step reports around it";
    }
}

} // namespace

StepResolution resolveSteps(std::vector<ScaleChange>& changes, const std::vector<StepReport>& reports,
    const std::vector<int64_t>& overflowIterations, int64_t scaleWindow, const std::string& path)
{
    StepResolution resolution;
    std::vector<ScaleChange*> overflows;
    std::vector<size_t> overflowsPerWindow(reports.size() + 1, 0);
    for (ScaleChange& change : changes)
        if (change.overflow) {
            overflows.push_back(&change);
            ++overflowsPerWindow[std::min(change.reportsBefore, reports.size())];
        }
    warnOnCountMismatch(overflowsPerWindow, reports, path, resolution);

    const double median = medianSecondsPerStep(reports);
    const bool exact = assignExactSteps(overflows, overflowIterations, reports);
    const std::string count = std::to_string(overflows.size()) + (overflows.size() == 1 ? " overflow" : " overflows");
    if (exact) {
        resolution.notes.push_back("the steps of the " + count
            + " are exact: the fused optimizer's 'Grad overflow on iteration' lines number them");
    } else if (!overflows.empty()) {
        if (!overflowIterations.empty())
            resolution.notes.push_back("the fused optimizer printed " + std::to_string(overflowIterations.size())
                + " overflow iterations for " + count
                + ", or they fall outside the step reports' "
                  "windows: not used");
        assignEstimatedSteps(overflows, reports, median);
        if (reports.empty())
            resolution.notes.push_back("the log has no step counter: its " + count
                + " are numbered 1, 2, ... in the order logged, as the optimizer steps they skipped; "
                  "the steps between them are unknown");
        else
            resolution.notes.push_back("the steps of the " + count
                + " are estimated within the windows between the 'step=N, skipped=K' reports "
                  "(from their time stamps where the lines have them); each window's overflow "
                  "count is checked against the skipped counter");
    }
    assignIncreaseSteps(changes, reports, median, exact, scaleWindow);
    return resolution;
}

void addLossScaleHistory(const std::vector<ScaleChange>& changes, ScalarLog& log)
{
    std::map<int64_t, double> scaleAfterStep; // what a line says the scale was after that step
    std::map<int64_t, double> scaleBeforeStep; // an overflow's attempted scale: the scale after step - 1
    std::vector<const ScaleChange*> overflows;
    for (const ScaleChange& change : changes) {
        scaleAfterStep[change.step] = change.after;
        if (!change.overflow)
            continue;
        overflows.push_back(&change);
        if (change.step > 1)
            scaleBeforeStep[change.step - 1] = change.before;
        const std::string basis = change.stepBasis.empty() ? "" : " (step " + change.stepBasis + ")";
        std::string skipped = "fp16 gradient overflow at loss scale " + formatScale(change.before) + ": step skipped";
        if (change.hysteresis)
            skipped += ", scale kept (hysteresis " + std::to_string(*change.hysteresis) + " -> "
                + std::to_string(*change.hysteresis - 1) + ")";
        log.events.push_back({ change.step, runformat::event::kSkippedStep, skipped + basis });
        if (change.after < change.before)
            log.events.push_back({ change.step, runformat::event::kLossScaleDecrease,
                "loss scale " + formatScale(change.before) + " -> " + formatScale(change.after) + basis });
    }
    for (const auto& [step, scale] : scaleBeforeStep)
        scaleAfterStep.emplace(step, scale); // fills gaps only: a line about that very step wins
    for (const auto& [step, scale] : scaleAfterStep)
        log.add("loss_scale", step, scale);
    if (overflows.empty())
        return;

    std::sort(overflows.begin(), overflows.end(), [](auto* a, auto* b) { return a->step < b->step; });
    size_t startUp = 0;
    while (startUp < overflows.size() && overflows[startUp]->step == int64_t(startUp) + 1)
        ++startUp;
    if (startUp >= 2)
        log.notes.push_back("steps 1-" + std::to_string(startUp)
            + " were all skipped while the fp16 loss scale searched "
              "down from "
            + formatScale(overflows.front()->before) + " to " + formatScale(overflows[startUp - 1]->after)
            + " at start-up: normal, not an instability");
    const auto lowest = std::min_element(
        changes.begin(), changes.end(), [](const ScaleChange& a, const ScaleChange& b) { return a.after < b.after; });
    log.notes.push_back(std::to_string(overflows.size()) + (overflows.size() == 1 ? " step" : " steps")
        + " skipped for fp16 gradient overflow; the lowest loss scale was " + formatScale(lowest->after) + " (step "
        + std::to_string(lowest->step) + ")");
}

void addMegatronSkips(const std::vector<MegatronInterval>& intervals, bool withSkips, ScalarLog& log)
{
    bool widerThanOne = false;
    for (const MegatronInterval& interval : intervals) {
        const std::string span = std::to_string(interval.previous + 1) + ".." + std::to_string(interval.iteration);
        const bool exact = interval.iteration - interval.previous == 1;
        for (int64_t j = 0; j < interval.skipped && withSkips; ++j) {
            widerThanOne = widerThanOne || !exact;
            const int64_t step = std::max(interval.previous + 1, interval.iteration - (interval.skipped - 1 - j));
            log.events.push_back({ step, runformat::event::kSkippedStep,
                exact ? "iteration skipped (Megatron: number of skipped iterations)"
                      : "one of " + std::to_string(interval.skipped) + " iterations skipped in " + span
                        + " (the log counts them, not which)" });
        }
        if (interval.nan > 0)
            log.events.push_back({ interval.iteration, runformat::event::kNonfiniteLoss,
                std::to_string(interval.nan) + " iterations with a NaN or Inf loss in " + span });
    }
    if (widerThanOne)
        log.notes.push_back("Megatron logs skipped iterations per logging interval: a skip is put at the end of its "
                            "interval, exact only where the interval is one iteration");
}

} // namespace nanscope::textlog

#include "core/importers/LoggedStepSeries.h"

#include "core/importers/RecordSteps.h"

#include <map>
#include <vector>

namespace nanscope {

namespace {

// The series that could be the training's own step counter, best first.
std::string bestCounterName(const ScalarLog& log)
{
    std::string best;
    int bestRank = -1;
    for (const auto& [name, points] : log.series) {
        const int rank = records::stepKeyRank(name);
        if (rank < 0 || name == "_step" || points.empty())
            continue;
        if (bestRank < 0 || rank < bestRank) {
            best = name;
            bestRank = rank;
        }
    }
    return best;
}

} // namespace

bool stepsFromLoggedCounter(ScalarLog& log)
{
    const std::string counterName = bestCounterName(log);
    if (counterName.empty())
        return false;
    // log step -> the counter's value there, which must not go back as the log's steps grow. It may
    // stay: a closing row (the Trainer's run summary) logs the last step again.
    std::map<int64_t, int64_t> counterAt;
    int64_t previous = -1;
    for (const ScalarPoint& point : log.series.at(counterName)) {
        int64_t value = 0;
        if (!records::asStep(point.value, value) || value < previous || counterAt.count(point.step))
            return false;
        counterAt[point.step] = value;
        previous = value;
    }
    // Every point of every other series must sit on a row that logged the counter: a point off it
    // would have no step to go to.
    for (const auto& [name, points] : log.series)
        for (const ScalarPoint& point : points)
            if (name != counterName && !counterAt.count(point.step))
                return false;
    for (auto& [name, points] : log.series) {
        std::vector<ScalarPoint> rekeyed;
        rekeyed.reserve(points.size());
        for (ScalarPoint point : points) {
            point.step = counterAt.at(point.step);
            if (!rekeyed.empty() && rekeyed.back().step == point.step)
                rekeyed.back() = point; // two rows at one training step: the later one's value
            else
                rekeyed.push_back(point);
        }
        points = std::move(rekeyed);
    }
    for (LoggedEvent& event : log.events) {
        const auto found = counterAt.lower_bound(event.step);
        if (found != counterAt.end())
            event.step = found->second;
    }
    log.series.erase(counterName);
    log.notes.push_back("steps are the logged \"" + counterName + "\" (the training's optimizer step), not the log's "
                        "own row count");
    return true;
}

} // namespace nanscope

#include "core/replay/TriageNeighbours.h"

#include "core/run/RunFormat.h"
#include "core/run/RunSource.h"
#include "core/run/SkippedSteps.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace nanscope {

namespace rf = runformat;

std::set<int64_t> trainingIncidentSteps(const RunSource& run)
{
    std::set<int64_t> steps;
    const auto& rows = run.steps(rf::kScalars);
    const TableInfo* scalars = run.info().table(rf::kScalars);
    for (const char* name : {rf::scalar::kLoss, rf::scalar::kGradNorm, rf::scalar::kSkipped}) {
        if (!scalars || !std::count(scalars->datasets.begin(), scalars->datasets.end(), name))
            continue;
        auto values = run.readSeries(rf::kScalars, name);
        if (!values)
            continue;
        const bool skipped = std::string(name) == rf::scalar::kSkipped;
        for (size_t i = 0; i < values->size() && i < rows.size(); ++i)
            if (skipped ? rf::isSkippedValue((*values)[i]) : !std::isfinite((*values)[i]))
                steps.insert(rows[i]);
    }
    if (const TableInfo* events = run.info().table(rf::kEvents); events && events->rows > 0) {
        const auto& eventSteps = run.steps(rf::kEvents);
        if (auto kinds = run.readStrings(rf::kEvents, rf::column::kKind))
            for (size_t i = 0; i < kinds->size() && i < eventSteps.size(); ++i)
                if ((*kinds)[i] == rf::event::kIncidentCapture || rf::isSkippedEvent((*kinds)[i]) ||
                    (*kinds)[i] == rf::event::kNonfiniteLoss)
                    steps.insert(eventSteps[i]);
    }
    return steps;
}

std::vector<NeighbourBatch> triageNeighbours(const std::vector<int64_t>& savedBatches, int64_t step,
                                             const std::set<int64_t>& incidentSteps)
{
    std::vector<NeighbourBatch> neighbours;
    const auto at = std::lower_bound(savedBatches.begin(), savedBatches.end(), step);
    int healthy = 0, marked = 0;
    for (auto before = at; healthy < kTriageNeighboursEachSide && before != savedBatches.begin();) {
        const int64_t s = *--before;
        const bool incident = incidentSteps.count(s) > 0;
        if (incident && marked >= kTriageNeighboursEachSide)
            continue;
        neighbours.insert(neighbours.begin(), {s, incident});
        (incident ? marked : healthy) += 1;
    }
    healthy = 0;
    marked = 0;
    auto after = at != savedBatches.end() && *at == step ? std::next(at) : at;
    for (; healthy < kTriageNeighboursEachSide && after != savedBatches.end(); ++after) {
        const bool incident = incidentSteps.count(*after) > 0;
        if (incident && marked >= kTriageNeighboursEachSide)
            continue;
        neighbours.push_back({*after, incident});
        (incident ? marked : healthy) += 1;
    }
    return neighbours;
}

} // namespace nanscope

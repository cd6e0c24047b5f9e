#pragma once

// The run as the window shows it at first sight: read off the GUI thread (app's RunSession) and
// handed to RunContext, which every view follows, as a value.

#include "EventMarkers.h"
#include "ViewData.h"

#include "core/run/RunSource.h"
#include "core/run/StepAxis.h"

#include <QMetaType>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace nanscope {

struct RunSnapshot
{
    QString directory;
    QString error; // non-empty: loading failed, and this says why
    QStringList warnings; // parts that could not be read (named), shown in the status bar
    RunInfo info;
    std::vector<int64_t> steps; // /scalars steps
    std::map<std::string, std::vector<double>> scalars;
    std::vector<int64_t> skippedSteps;
    std::vector<std::string> layers;
    std::vector<BatchNormSeries> batchNorm;
    // Series logged at a rate of their own (evaluation, epoch-level metrics), each table whole:
    // they are small, a row per evaluation.
    std::vector<SeriesTable> seriesTables;
    // Wall time and epoch as other x axes, where logged.
    StepAxes stepAxes;
    // What the training's defences did (rollbacks, buffers restored, incident captures), from
    // /events; eventRows: the /events rows they were read from.
    std::vector<TimelineEvent> timelineEvents;
    int64_t eventRows = 0;

    // The steps of the saved checkpoints, ascending (the overview's marks, the checkpoints view's list).
    std::vector<int64_t> checkpointSteps() const
    {
        std::vector<int64_t> steps;
        for (const auto& [step, path] : info.checkpoints)
            steps.push_back(step);
        return steps;
    }
};

} // namespace nanscope

Q_DECLARE_METATYPE(nanscope::RunSnapshot)

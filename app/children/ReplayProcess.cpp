#include "app/children/ReplayProcess.h"

#include <memory>

#include "app/codecs/ReplayJson.h"

#include <QCoreApplication>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cmath>

namespace nanscope {

ReplayProcess::ReplayProcess(QObject* parent)
    : QObject(parent)
    , m_child(new ChildProgram(this))
{
    static const bool registered = [] {
        qRegisterMetaType<ReplayReport>();
        qRegisterMetaType<ReplayRequest>();
        return true;
    }();
    (void)registered;
}

ReplayProcess::~ReplayProcess() = default;

bool ReplayProcess::isRunning() const
{
    return m_child->isRunning();
}

void ReplayProcess::setProgram(const QString& program)
{
    m_child->setProgram(program);
}

void ReplayProcess::cancel()
{
    m_child->cancel();
}

void ReplayProcess::start(const QString& runDirectory, const ReplayRequest& request, int rank)
{
    QStringList args{"replay", runDirectory, "--step", QString::number(request.step), "--json"};
    if (!request.dtype.isEmpty()) // else as the run trained
        args << "--dtype" << request.dtype;
    if (rank >= 0) // a multi-rank run: the rank shown holds the checkpoints and batches meant
        args << "--rank" << QString::number(rank);
    if (!request.layerPrefix.isEmpty())
        args << "--layer" << request.layerPrefix;
    if (request.eval)
        args << "--eval";
    if (request.bisect)
        args << "--bisect";
    const qint64 step = request.step;
    // The replay's JSON (an op table of thousands of rows) is parsed off the GUI thread.
    auto report = std::make_shared<ReplayReport>();
    m_child->start(
        args, [this, report](const ChildOutcome&) { emit finished(*report); },
        [report, step](const ChildOutcome& outcome) { *report = replayReportFrom(outcome, step); });
    emit started();
}

ReplayReport replayReportFrom(const ChildOutcome& outcome, qint64 step)
{
    ReplayReport report = outcome.decodeReport<ReplayReport>(QObject::tr("The replay of step %1").arg(step),
                                                             [](const QByteArray& json) { return parseReplayJson(json); });
    if (report.result.step < 0)
        report.result.step = step;
    return report;
}

} // namespace nanscope

#pragma once

#include "app/children/ChildProgram.h"
#include "app/codecs/JsonNumbers.h"

#include "widgets/ViewData.h"

#include <QJsonValue>
#include <QObject>

namespace nanscope {

// Runs `nanscope replay --json` in a child process: replay executes the user's TorchScript,
// and a model that crashes LibTorch must crash the child, not the window. The newest request
// replaces one still running (latest request wins).
class ReplayProcess : public QObject
{
    Q_OBJECT
public:
    explicit ReplayProcess(QObject* parent = nullptr);
    ~ReplayProcess() override;

    void start(const QString& runDirectory, const ReplayRequest& request, int rank = -1);
    void cancel();
    bool isRunning() const;

    // The program that replays; the running executable by default.
    void setProgram(const QString& program);

signals:
    void started();
    void finished(const nanscope::ReplayReport& report);

private:
    ChildProgram* m_child = nullptr;
};

// What a finished `nanscope replay --json` child of step `step` means for the replay pane and the report.
ReplayReport replayReportFrom(const ChildOutcome& outcome, qint64 step);


} // namespace nanscope

Q_DECLARE_METATYPE(nanscope::ReplayReport)
Q_DECLARE_METATYPE(nanscope::ReplayRequest)

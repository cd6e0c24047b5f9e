#pragma once

#include "widgets/ViewData.h"

#include <QJsonValue>
#include <QObject>
#include <QProcess>
#include <QPointer>

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

    void start(const QString& runDirectory, const ReplayRequest& request);
    void cancel();
    bool isRunning() const;

    // The program that replays; the running executable by default.
    void setProgram(const QString& program) { m_program = program; }

signals:
    void started();
    void finished(const nanscope::ReplayReport& report);

private:
    void onFinished(int exitCode, QProcess::ExitStatus status);

    QPointer<QProcess> m_process;
    QString m_program;
    qint64 m_step = -1;
};

// The nanscope executable that child processes run: $NANSCOPE_PROGRAM when set (tests, and
// embedders whose own executable is not nanscope), else this program.
QString nanscopeProgram();

// A JSON number, or NaN where the child printed null (nanscope's JSON has no NaN).
double jsonNumberOrNan(const QJsonValue& value);

// Parses the JSON `nanscope replay --json` prints.
ReplayReport parseReplayJson(const QByteArray& json);

} // namespace nanscope

Q_DECLARE_METATYPE(nanscope::ReplayReport)
Q_DECLARE_METATYPE(nanscope::ReplayRequest)

#pragma once

#include <QByteArray>
#include <QObject>
#include <QProcessEnvironment>
#include <QPointer>
#include <QString>
#include <QStringList>

#include <functional>
#include <optional>

#include <QtGlobal>

class QProcess;

namespace nanscope {

// How a child program ended. Exactly one of these reaches the caller per request that was not
// replaced or cancelled.
struct ChildOutcome
{
    enum class Kind { Succeeded, FailedToStart, Crashed, ExitedWithError, TimedOut };
    Kind kind = Kind::Succeeded;
    int exitCode = 0;
    QByteArray standardOutput;
    QString standardError; // trimmed
    // For anything but success: one readable sentence ("cannot start ...", "... crashed", the
    // child's own error line), never empty.
    QString message;

    bool succeeded() const { return kind == Kind::Succeeded; }
    // What a user reads when `work` ("The replay of step 180", "Reading ckpt.pt") did not succeed:
    // a crash says it was the child's alone (the window or the command goes on) and quotes the end
    // of the child's error output; any other failure is `message`. Empty on success. One wording
    // for every child the window and the commands run.
    QString failureText(const QString& work) const;

    // A child's JSON answer as the report the window and the commands show: `decode` of its output
    // when it succeeded, else a report whose `error` is failureText(work). Every child that answers
    // in JSON (replay, triage) is read through this, so that a failure reads the same everywhere.
    template <typename Report, typename Decode>
    Report decodeReport(const QString& work, Decode decode) const
    {
        Report report;
        if (succeeded())
            report = decode(standardOutput);
        else
            report.error = failureText(work);
        return report;
    }
};

// How ChildProgram::runAndWait starts a child: its environment (the caller's when unset), and
// whether it is killed when this process dies (a child that runs a user's model must not go on
// behind a cancelled command).
struct ChildSetup
{
    std::optional<QProcessEnvironment> environment;
    bool diesWithParent = false;
};

// The one place that runs nanscope's child programs (replay, stats, diff, report export): untrusted
// files and users' models are read where a crash cannot take the window down. Latest request wins:
// start() replaces a request still running, whose callback is then never called; a failed start, a
// crash, a non-zero exit and a timeout each end in one outcome with a message.
class ChildProgram : public QObject
{
    Q_OBJECT
public:
    using Done = std::function<void(const ChildOutcome&)>;
    // Runs on a worker thread once the child has ended, before `done` runs on this object's
    // thread: where a large answer (a replay's or a checkpoint's JSON) is parsed, so that the GUI
    // thread never does it. It may fill what `done` captured; it must not touch widgets.
    using Decode = std::function<void(const ChildOutcome&)>;

    explicit ChildProgram(QObject* parent = nullptr);
    ~ChildProgram() override;

    // The program that runs; nanscopeProgram() by default.
    void setProgram(const QString& program) { m_program = program; }
    QString program() const { return m_program; }

    void start(const QStringList& arguments, Done done, Decode decode = {});
    // Kills the running request without waiting for it to end (a killed child is reaped when it
    // has gone); its callbacks are not called.
    void cancel();
    // True from start() until `done` has run or the request was replaced or cancelled.
    bool isRunning() const;

signals:
    // The running request's child wrote a progress line (childProgressLine) on its standard
    // error; such lines are not part of the outcome's standardError.
    void progress(int percent, const QString& what);

public:

    // The same outcomes, blocking: for headless commands that already run off the GUI thread.
    // `timeoutMs` -1: no limit.
    static ChildOutcome runAndWait(const QString& program, const QStringList& arguments, int timeoutMs,
                                   const ChildSetup& setup = {});

private:
    // Ends a killed or finished process without blocking: it deletes itself once it has ended.
    static void release(QProcess* process);

    QString m_program;
    QPointer<QProcess> m_process;
    // The current request; a decode that finishes for an older one is dropped.
    quint64 m_request = 0;
    bool m_pending = false;
};

// How a child tells the window how far it is: one line on its standard error,
// "nanscope-progress PERCENT WHAT" (a command's --progress-lines).
QByteArray childProgressLine(double fraction, const QString& what);
// The percent and text of such a line; false for any other line.
bool parseChildProgressLine(const QByteArray& line, int* percent, QString* what);

// The nanscope executable that child processes run: $NANSCOPE_PROGRAM when set (tests, and
// embedders whose own executable is not nanscope), else this program.
QString nanscopeProgram();

} // namespace nanscope

#include "app/children/ChildProgram.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QProcess>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <memory>

#include <sys/prctl.h>

namespace nanscope {

QString nanscopeProgram()
{
    const QString fromEnvironment = qEnvironmentVariable("NANSCOPE_PROGRAM");
    return fromEnvironment.isEmpty() ? QCoreApplication::applicationFilePath() : fromEnvironment;
}

namespace {
constexpr char kProgressPrefix[] = "nanscope-progress ";
} // namespace

QByteArray childProgressLine(double fraction, const QString& what)
{
    const int percent = int(std::lround(std::clamp(fraction, 0.0, 1.0) * 100));
    return kProgressPrefix + QByteArray::number(percent) + ' ' + what.simplified().toUtf8() + '\n';
}

bool parseChildProgressLine(const QByteArray& line, int* percent, QString* what)
{
    if (!line.startsWith(kProgressPrefix))
        return false;
    const QByteArray rest = line.mid(int(sizeof kProgressPrefix) - 1).trimmed();
    const int space = rest.indexOf(' ');
    bool ok = false;
    const int value = rest.left(space < 0 ? rest.size() : space).toInt(&ok);
    if (!ok || value < 0 || value > 100)
        return false;
    *percent = value;
    *what = space < 0 ? QString() : QString::fromUtf8(rest.mid(space + 1));
    return true;
}

namespace {

QString programName(const QString& program)
{
    return QFileInfo(program).fileName();
}

// The child's last meaningful error line: its own message, without the "nanscope: " prefix and
// without the warning every replay prints about running the checkpoint's code.
QString errorLine(const QString& standardError)
{
    QStringList lines = standardError.split('\n', Qt::SkipEmptyParts);
    lines.removeIf([](const QString& l) {
        return l.contains("runs code from the file") || l.contains("runs the model's Python code");
    });
    return lines.join("\n").remove("nanscope: ").trimmed();
}

// The child's standard error less its progress lines: those read while it ran (`seen`, whose
// progress lines were already taken out) and what is left to read.
QByteArray errorText(QProcess& process, const QByteArray& seen)
{
    QByteArray text;
    for (const QByteArray& line : (seen + process.readAllStandardError()).split('\n')) {
        int percent = 0;
        QString what;
        if (!parseChildProgressLine(line, &percent, &what))
            text += line + '\n';
    }
    return text;
}

ChildOutcome outcomeOf(QProcess& process, const QString& program, bool finished, const QByteArray& seenError = {})
{
    ChildOutcome outcome;
    outcome.standardError = QString::fromUtf8(errorText(process, seenError)).trimmed();
    outcome.exitCode = process.exitCode();
    const QString name = programName(program);
    if (!finished) {
        outcome.kind = ChildOutcome::Kind::TimedOut;
        outcome.message = QObject::tr("%1 did not finish in time and was stopped").arg(name);
    } else if (process.exitStatus() == QProcess::CrashExit) {
        outcome.kind = ChildOutcome::Kind::Crashed;
        outcome.message = outcome.failureText(name);
    } else if (process.exitCode() != 0) {
        outcome.kind = ChildOutcome::Kind::ExitedWithError;
        outcome.message = errorLine(outcome.standardError);
        if (outcome.message.isEmpty())
            outcome.message = QObject::tr("%1 exited with status %2").arg(name).arg(process.exitCode());
    } else {
        outcome.standardOutput = process.readAllStandardOutput();
    }
    return outcome;
}

ChildOutcome failedToStart(const QString& program, const QString& why)
{
    ChildOutcome outcome;
    outcome.kind = ChildOutcome::Kind::FailedToStart;
    outcome.exitCode = -1;
    outcome.message = QObject::tr("cannot start %1: %2").arg(program, why);
    return outcome;
}

} // namespace

ChildProgram::ChildProgram(QObject* parent)
    : QObject(parent)
    , m_program(nanscopeProgram())
{
}

ChildProgram::~ChildProgram()
{
    cancel();
}

QString ChildOutcome::failureText(const QString& work) const
{
    if (kind == Kind::Crashed)
        return QObject::tr("%1 crashed, in a process of its own: nanscope goes on. %2").arg(work, standardError.right(400)).trimmed();
    return succeeded() ? QString() : message;
}

bool ChildProgram::isRunning() const
{
    return m_pending;
}

void ChildProgram::release(QProcess* process)
{
    process->disconnect();
    // Unparented, so that the ChildProgram's own end does not delete it while it runs (~QProcess
    // would block until the child has gone).
    process->setParent(nullptr);
    if (process->state() == QProcess::NotRunning) {
        process->deleteLater();
        return;
    }
    QObject::connect(process, &QProcess::finished, process, &QObject::deleteLater);
    QObject::connect(process, &QProcess::errorOccurred, process, [process](QProcess::ProcessError error) {
        if (error == QProcess::FailedToStart)
            process->deleteLater();
    });
    process->kill();
}

void ChildProgram::start(const QStringList& arguments, Done done, Decode decode)
{
    cancel();
    auto* process = new QProcess(this);
    m_process = process;
    m_pending = true;
    const quint64 request = ++m_request;
    const QString program = m_program;
    // Both signals can fire for one process (a crash reports errorOccurred, then finished): only
    // the first one that is still the current request reports.
    auto report = [this, process, request, done, decode](const ChildOutcome& outcome) {
        if (process != m_process || request != m_request)
            return;
        m_process = nullptr;
        release(process);
        if (!decode) {
            m_pending = false;
            done(outcome);
            return;
        }
        auto decoded = std::make_shared<ChildOutcome>(outcome);
        auto* watcher = new QFutureWatcher<void>(this);
        connect(watcher, &QFutureWatcher<void>::finished, this, [this, watcher, request, decoded, done] {
            watcher->deleteLater();
            if (request != m_request)
                return; // replaced or cancelled while it was decoded
            m_pending = false;
            done(*decoded);
        });
        watcher->setFuture(QtConcurrent::run([decoded, decode] { decode(*decoded); }));
    };
    // Standard error is read as it comes: progress lines are signalled, the rest kept for the outcome.
    auto seenError = std::make_shared<QByteArray>();
    connect(process, &QProcess::readyReadStandardError, this, [this, process, seenError] {
        if (process != m_process)
            return;
        QByteArray& text = *seenError;
        const qsizetype keptBefore = text.size();
        text += process->readAllStandardError();
        // From the start of the line that was incomplete when the last chunk ended.
        qsizetype lineStart = keptBefore > 0 ? text.lastIndexOf('\n', keptBefore - 1) + 1 : 0;
        for (qsizetype end = text.indexOf('\n', lineStart); end >= 0; end = text.indexOf('\n', lineStart)) {
            int percent = 0;
            QString what;
            if (parseChildProgressLine(text.mid(lineStart, end - lineStart), &percent, &what)) {
                text.remove(lineStart, end - lineStart + 1);
                emit progress(percent, what);
            } else {
                lineStart = end + 1;
            }
        }
    });
    connect(process, &QProcess::finished, this, [process, program, report, seenError](int, QProcess::ExitStatus) {
        report(outcomeOf(*process, program, true, *seenError));
    });
    connect(process, &QProcess::errorOccurred, this, [process, program, report](QProcess::ProcessError error) {
        if (error == QProcess::FailedToStart)
            report(failedToStart(program, process->errorString()));
    });
    process->start(program, arguments);
}

void ChildProgram::cancel()
{
    ++m_request; // a decode still running for the old request no longer reports
    m_pending = false;
    if (!m_process)
        return;
    QProcess* process = m_process;
    m_process = nullptr; // its signals no longer report
    release(process);
}

ChildOutcome ChildProgram::runAndWait(const QString& program, const QStringList& arguments, int timeoutMs,
                                      const ChildSetup& setup)
{
    QProcess process;
    if (setup.environment)
        process.setProcessEnvironment(*setup.environment);
    if (setup.diesWithParent)
        process.setChildProcessModifier([] { ::prctl(PR_SET_PDEATHSIG, SIGKILL); });
    process.start(program, arguments);
    if (!process.waitForStarted(30000))
        return failedToStart(program, process.errorString());
    process.closeWriteChannel();
    const bool finished = process.waitForFinished(timeoutMs);
    if (!finished) {
        process.kill();
        process.waitForFinished(2000);
    }
    return outcomeOf(process, program, finished);
}

} // namespace nanscope

#pragma once

#include <QDir>
#include <QProcess>
#include <QString>
#include <QTemporaryDir>

namespace nanscope::test {

struct ProcessResult
{
    int exitCode = -1;
    QString out;
    QString err;
};

// Runs the real nanscope binary, as a user or a CI script would.
inline ProcessResult runNanscope(const QStringList& arguments, int timeoutMs = 120000)
{
    QProcess process;
    process.start(NANSCOPE_BINARY, arguments);
    process.waitForFinished(timeoutMs);
    return {process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1,
            QString::fromUtf8(process.readAllStandardOutput()), QString::fromUtf8(process.readAllStandardError())};
}

inline QString demoRun(const QString& name)
{
    return QDir(NANSCOPE_TEST_RUNS).filePath(name);
}

} // namespace nanscope::test

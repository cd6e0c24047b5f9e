#pragma once

// The test suite's own home: every GUI test binary moves HOME and the XDG folders into the build
// tree before Qt starts, and turns on Qt's test mode for QStandardPaths and QSettings, so that no
// test reads or writes a person's settings, recent runs or documents (ctest gives the same
// environment to the Python tests and the child programs, tests/CMakeLists.txt).

#include <QByteArray>
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QLocale>
#include <QStandardPaths>

#include <cstdlib>

namespace nanscope::test {

// Each test process has a home of its own inside the suite's: ctest -j runs GUI tests side by
// side, and two windows remembering their recent runs in one settings file would overwrite each
// other's list (a lost update a test then reads back). It is removed when the process ends.
inline QString suiteHome()
{
    return QStringLiteral(NANSCOPE_TEST_HOME "/process-") + QString::number(QCoreApplication::applicationPid());
}

inline void useSuiteHome()
{
    const QByteArray home = suiteHome().toUtf8();
    for (const char* sub : {"", "/config", "/data", "/cache", "/state"})
        QDir().mkpath(QString::fromUtf8(home + sub));
    static const QString removeAtExit = suiteHome();
    std::atexit([] { QDir(removeAtExit).removeRecursively(); });
    qputenv("HOME", home);
    qputenv("XDG_CONFIG_HOME", home + "/config");
    qputenv("XDG_DATA_HOME", home + "/data");
    qputenv("XDG_CACHE_HOME", home + "/cache");
    qputenv("XDG_STATE_HOME", home + "/state");
    // Qt insists on a runtime folder of the user's own with mode 0700.
    const QString runtime = QString::fromUtf8(home + "/runtime");
    QDir().mkpath(runtime);
    QFile::setPermissions(runtime, QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner);
    qputenv("XDG_RUNTIME_DIR", runtime.toUtf8());
    // Numbers on axes and in labels as the tests read them, whatever the machine's locale.
    qputenv("LC_ALL", "C.UTF-8");
    QLocale::setDefault(QLocale::c());
    QStandardPaths::setTestModeEnabled(true);
}

} // namespace nanscope::test

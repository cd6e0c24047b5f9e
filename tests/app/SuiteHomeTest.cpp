// The suite never touches a person's own settings or files (tests/TestHome.h): the window's
// settings, its recent runs and its last-opened folder land in the suite's home in the build tree.

#include "AppTestSupport.h"
#include "WindowTestSupport.h"
#include "../TestHome.h"
#include "app/window/MainWindow.h"

#include <QDir>
#include <QFileInfo>
#include <QSettings>
#include <QStandardPaths>

#include <gtest/gtest.h>

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace nanscope;

namespace {

// The account's real home, from the password database: HOME itself was moved by the suite.
QString accountHome()
{
    const passwd* entry = getpwuid(getuid());
    return entry && entry->pw_dir ? QString::fromLocal8Bit(entry->pw_dir) : QString();
}

bool isInside(const QString& path, const QString& folder)
{
    const QString absolute = QFileInfo(path).absoluteFilePath();
    const QString root = QDir(folder).absolutePath() + '/';
    return absolute.startsWith(root);
}

} // namespace

TEST(SuiteHome, SettingsAndStandardPathsAreTheSuitesOwn)
{
    const QString home = test::suiteHome();
    EXPECT_TRUE(QStandardPaths::isTestModeEnabled());
    EXPECT_TRUE(isInside(QSettings().fileName(), home)) << QSettings().fileName().toStdString();
    for (auto location : {QStandardPaths::GenericConfigLocation, QStandardPaths::AppDataLocation,
                          QStandardPaths::CacheLocation})
        EXPECT_TRUE(isInside(QStandardPaths::writableLocation(location), home))
            << QStandardPaths::writableLocation(location).toStdString();
    const QString account = accountHome();
    if (!account.isEmpty() && !isInside(home, account))
        EXPECT_FALSE(isInside(QSettings().fileName(), account));
}

TEST(SuiteHome, OpeningARunRemembersItInTheSuitesSettingsOnly)
{
    const QString run = test::demoRun("healthy");
    {
        MainWindow window;
        ASSERT_TRUE(test::openAndWait(window, run));
        EXPECT_TRUE(window.recentRuns().contains(QFileInfo(run).absoluteFilePath()));
    }
    QSettings settings;
    settings.sync();
    EXPECT_TRUE(isInside(settings.fileName(), test::suiteHome()));
    EXPECT_TRUE(settings.value("recentRuns").toStringList().contains(QFileInfo(run).absoluteFilePath()))
        << "the window's recent runs are written where the suite reads them back";
}

// A run folder that no longer exists (a deleted temporary folder, an unplugged disk) is not
// offered under File > Open Recent.
TEST(SuiteHome, RecentRunsThatNoLongerExistAreNotOffered)
{
    const QString gone = QDir(test::suiteHome()).filePath("a-run-that-was-deleted");
    QSettings().setValue("recentRuns", QStringList{gone});
    MainWindow window;
    EXPECT_FALSE(window.recentRuns().contains(gone));
}

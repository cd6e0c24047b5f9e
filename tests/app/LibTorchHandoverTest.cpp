// nanscope never loads LibTorch; the commands that run a model are handed to nanscope-torch
// (app/cli/LibTorchProgram.h, issue 54). The build's check that nanscope links no LibTorch is the
// ctest nanscope_links_no_libtorch; these check what a user sees of the hand-over.
#include "AppTestSupport.h"

#include "app/cli/LibTorchProgram.h"
#include "core/replay/ReplayOptions.h"

#include <QFile>

#include <QProcess>
#include <QProcessEnvironment>

#include <gtest/gtest.h>

using namespace nanscope::test;

TEST(LibTorchHandover, StatsNeedsLibTorchOnlyForCudaOrAGpuItMayUse)
{
    using nanscope::cli::statsNeedsLibTorch;
    EXPECT_FALSE(statsNeedsLibTorch({"ckpt.pt", "--device", "cpu"}));
    EXPECT_TRUE(statsNeedsLibTorch({"ckpt.pt", "--device", "cuda"}));
    EXPECT_TRUE(statsNeedsLibTorch({"ckpt.pt", "--device=cuda", "--json"}));
    // auto (the default) runs on the CPU kernel unless the NVIDIA driver lists a GPU.
    const bool gpuListed = !QDir("/proc/driver/nvidia/gpus").entryList(QDir::Dirs | QDir::NoDotAndDotDot).isEmpty();
    EXPECT_EQ(statsNeedsLibTorch({"ckpt.pt"}), gpuListed);
    EXPECT_EQ(statsNeedsLibTorch({"ckpt.pt", "--device", "auto"}), gpuListed);
}

TEST(LibTorchHandover, ReplayIsDoneByNanscopeTorchUnderTheSameCommand)
{
    // Through the hand-over, the help is replay's own and names the command as typed.
    const auto help = runNanscope({"replay", "--help"});
    EXPECT_EQ(help.exitCode, 0) << help.err.toStdString();
    EXPECT_TRUE(help.out.startsWith("Usage: nanscope replay [options]")) << help.out.left(120).toStdString();
    EXPECT_TRUE(help.out.contains("--checkpoint")) << help.out.toStdString();
}

TEST(LibTorchHandover, AMissingNanscopeTorchIsNamedNotACrash)
{
    QTemporaryDir dir;
    const QString missing = dir.filePath("nanscope-torch");
    QProcess process;
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert("NANSCOPE_TORCH_PROGRAM", missing);
    process.setProcessEnvironment(environment);
    process.start(NANSCOPE_BINARY, {"replay", demoRun("division-by-zero"), "--step", "180"});
    ASSERT_TRUE(process.waitForFinished(60000));
    const QString err = QString::fromUtf8(process.readAllStandardError());
    EXPECT_EQ(process.exitStatus(), QProcess::NormalExit);
    EXPECT_EQ(process.exitCode(), 2);
    EXPECT_TRUE(err.contains("nanscope-torch")) << err.toStdString();
    EXPECT_TRUE(err.contains(missing)) << err.toStdString();

    // The commands that need no model still run in nanscope itself.
    process.start(NANSCOPE_BINARY, {"info", demoRun("division-by-zero"), "--json"});
    ASSERT_TRUE(process.waitForFinished(60000));
    EXPECT_EQ(process.exitCode(), 0) << process.readAllStandardError().toStdString();
    process.start(NANSCOPE_BINARY, {"scan", demoRun("healthy")});
    ASSERT_TRUE(process.waitForFinished(60000));
    EXPECT_EQ(process.exitCode(), 0) << process.readAllStandardError().toStdString();
}

namespace {

// A torch package as pip lays it out (torch/version.py, torch/lib/libtorch.so), and a python3 on
// PATH that names it the way the hand-over asks (importlib, without importing torch).
struct FakeTorchOnPath
{
    QTemporaryDir dir;
    QByteArray savedPath = qgetenv("PATH");

    explicit FakeTorchOnPath(const QString& version)
    {
        const QString package = dir.filePath("site-packages/torch");
        QDir().mkpath(package + "/lib");
        QFile(package + "/lib/libtorch.so").open(QIODevice::WriteOnly);
        QFile versionFile(package + "/version.py");
        versionFile.open(QIODevice::WriteOnly);
        versionFile.write("from typing import Optional\n__version__ = '" + version.toUtf8() + "'\ncuda = None\n");
        versionFile.close();
        QDir().mkpath(dir.filePath("bin"));
        QFile python(dir.filePath("bin/python3"));
        python.open(QIODevice::WriteOnly);
        python.write("#!/bin/sh\nprintf '%s' '" + package.toUtf8() + "'\n");
        python.close();
        python.setPermissions(python.permissions() | QFileDevice::ExeOwner);
        qputenv("PATH", dir.filePath("bin").toLocal8Bit() + ':' + savedPath);
    }
    ~FakeTorchOnPath() { qputenv("PATH", savedPath); }
    QString libFolder() const { return dir.filePath("site-packages/torch/lib"); }
};

} // namespace

TEST(LibTorchHandover, TheTorchOfPythonIsUsedOnlyWhenItIsTheVersionBuiltAgainst)
{
    using nanscope::cli::torchLibraryFolder;
    const QString built = QString::fromStdString(nanscope::libtorchVersion());
    {
        // A CUDA wheel's local version (+cu132) does not change its C++ ABI.
        FakeTorchOnPath same(built + "+cu132");
        QString error;
        EXPECT_EQ(torchLibraryFolder(error, QString()), same.libFolder()) << error.toStdString();
    }
    {
        FakeTorchOnPath other("1.13.1");
        QString error;
        EXPECT_TRUE(torchLibraryFolder(error, QString()).isEmpty());
        EXPECT_TRUE(error.contains("1.13.1")) << error.toStdString();
        EXPECT_TRUE(error.contains("pip install torch==" + built)) << error.toStdString();
    }
}

TEST(LibTorchHandover, ALibraryFolderWithoutLibTorchIsNamed)
{
    QTemporaryDir empty;
    qputenv("NANSCOPE_TORCH_LIBRARY_DIR", empty.path().toLocal8Bit());
    QString error;
    const QString folder = nanscope::cli::torchLibraryFolder(error);
    qunsetenv("NANSCOPE_TORCH_LIBRARY_DIR");
    EXPECT_TRUE(folder.isEmpty());
    EXPECT_TRUE(error.contains("NANSCOPE_TORCH_LIBRARY_DIR")) << error.toStdString();
    EXPECT_TRUE(error.contains(empty.path())) << error.toStdString();
}

#include "app/cli/LibTorchProgram.h"

#include "app/cli/CliSupport.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

namespace nanscope::cli {

QString libTorchProgram()
{
    const QString fromEnvironment = qEnvironmentVariable("NANSCOPE_TORCH_PROGRAM");
    if (!fromEnvironment.isEmpty())
        return fromEnvironment;
    return QDir(QCoreApplication::applicationDirPath()).filePath("nanscope-torch");
}

bool statsNeedsLibTorch(const QStringList& commandArguments)
{
    QString device = "auto";
    for (int i = 0; i < commandArguments.size(); ++i) {
        const QString& a = commandArguments[i];
        if (a == "--device" && i + 1 < commandArguments.size())
            device = commandArguments[i + 1];
        else if (a.startsWith("--device="))
            device = a.mid(int(qstrlen("--device=")));
    }
    if (device == "cuda")
        return true;
    if (device != "auto")
        return false;
    // The NVIDIA driver lists each GPU it drives here; no driver, no CUDA device for LibTorch.
    const QDir gpus("/proc/driver/nvidia/gpus");
    return gpus.exists() && !gpus.entryList(QDir::Dirs | QDir::NoDotAndDotDot).isEmpty();
}

int runInLibTorchProgram(const QStringList& arguments)
{
    const QString program = libTorchProgram();
    const QString command = arguments.value(1);
    if (!QFileInfo(program).isExecutable())
        return fail(QString("%1 runs a model with LibTorch, which is done by nanscope-torch, and there is no "
                            "nanscope-torch at %2 (install the whole package, or build the nanscope-torch target)")
                        .arg(command, QDir::toNativeSeparators(program)));
    std::vector<std::string> words;
    words.push_back(program.toStdString());
    for (int i = 1; i < arguments.size(); ++i)
        words.push_back(arguments[i].toLocal8Bit().toStdString());
    std::vector<char*> argv;
    for (std::string& w : words)
        argv.push_back(w.data());
    argv.push_back(nullptr);
    // Whatever this process wrote must come before the other program's output.
    out().flush();
    err().flush();
    std::fflush(nullptr);
    ::execv(argv[0], argv.data());
    return fail(QString("cannot start %1: %2").arg(program, QString::fromLocal8Bit(std::strerror(errno))));
}

} // namespace nanscope::cli

#include "app/cli/LibTorchProgram.h"

#include "app/children/ChildProgram.h"
#include "app/cli/CliSupport.h"
#include "core/replay/ReplayOptions.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QRegularExpression>
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

namespace {

constexpr char kSavedLibraryPath[] = "NANSCOPE_HANDOVER_SAVED_LD_LIBRARY_PATH";
constexpr char kNoLibraryPath[] = "-"; // LD_LIBRARY_PATH was not set

bool holdsLibTorch(const QString& folder)
{
    return QFileInfo(QDir(folder).filePath("libtorch.so")).exists();
}

// "2.15.0" of "2.15.0+cu132": a wheel's local version names its CUDA build, not its ABI.
QString releaseOf(const QString& version)
{
    return version.section('+', 0, 0).trimmed();
}

// torch/version.py of a wheel: `__version__ = '2.15.0+cu132'`.
QString wheelVersion(const QString& torchPackage)
{
    QFile file(QDir(torchPackage).filePath("version.py"));
    if (!file.open(QIODevice::ReadOnly))
        return {};
    static const QRegularExpression assignment(R"(^__version__\s*(?::\s*\w+\s*)?=\s*['"]([^'"]+)['"])",
                                               QRegularExpression::MultilineOption);
    return assignment.match(QString::fromUtf8(file.readAll())).captured(1);
}

// The torch package folder of the first python3 on PATH, found without importing torch (which
// would take seconds): importlib's spec only looks at the path.
QString torchPackageOfPython()
{
    const ChildOutcome asked = ChildProgram::runAndWait(
        "python3",
        {"-c", "import importlib.util as u, sys\n"
               "s = u.find_spec('torch')\n"
               "sys.stdout.write(s.submodule_search_locations[0] if s else '')"},
        15000);
    return asked.succeeded() ? QString::fromLocal8Bit(asked.standardOutput).trimmed() : QString();
}

} // namespace

QString torchLibraryFolder(QString& error)
{
#ifdef NANSCOPE_BUILT_TORCH_LIBRARY_DIR
    return torchLibraryFolder(error, QStringLiteral(NANSCOPE_BUILT_TORCH_LIBRARY_DIR));
#else
    return torchLibraryFolder(error, QString());
#endif
}

QString torchLibraryFolder(QString& error, const QString& builtFolder)
{
    const QString wanted = QString::fromStdString(libtorchVersion());
    const QString fromEnvironment = qEnvironmentVariable("NANSCOPE_TORCH_LIBRARY_DIR");
    if (!fromEnvironment.isEmpty()) {
        if (holdsLibTorch(fromEnvironment))
            return fromEnvironment;
        error = QString("NANSCOPE_TORCH_LIBRARY_DIR is %1, which holds no libtorch.so").arg(fromEnvironment);
        return {};
    }
    if (!builtFolder.isEmpty() && holdsLibTorch(builtFolder))
        return builtFolder;
    const QString package = torchPackageOfPython();
    const QString lib = package.isEmpty() ? QString() : QDir(package).filePath("lib");
    if (!lib.isEmpty() && holdsLibTorch(lib)) {
        const QString found = wheelVersion(package);
        if (releaseOf(found) == releaseOf(wanted))
            return lib;
        error = QString("nanscope-torch runs models with LibTorch %1, and the torch of python3 (%2) is %3: "
                        "pip install torch==%1 into a Python on PATH, or set NANSCOPE_TORCH_LIBRARY_DIR to the lib "
                        "folder of a torch %1")
                    .arg(wanted, package, found.isEmpty() ? QString("of an unknown version") : found);
        return {};
    }
    error = QString("nanscope-torch runs models with LibTorch %1, and none was found: pip install torch==%1 into a "
                    "Python on PATH, or set NANSCOPE_TORCH_LIBRARY_DIR to the lib folder of a torch %1")
                .arg(wanted);
    return {};
}

void restoreLibraryPathAfterHandover()
{
    if (!qEnvironmentVariableIsSet(kSavedLibraryPath))
        return;
    const QByteArray saved = qgetenv(kSavedLibraryPath);
    if (saved == kNoLibraryPath)
        qunsetenv("LD_LIBRARY_PATH");
    else
        qputenv("LD_LIBRARY_PATH", saved);
    qunsetenv(kSavedLibraryPath);
}

int runInLibTorchProgram(const QStringList& arguments)
{
    const QString program = libTorchProgram();
    const QString command = arguments.value(1);
    if (!QFileInfo(program).isExecutable())
        return fail(QString("%1 runs a model with LibTorch, which is done by nanscope-torch, and there is no "
                            "nanscope-torch at %2 (install the whole package, or build the nanscope-torch target)")
                        .arg(command, QDir::toNativeSeparators(program)));
    QString torchError;
    const QString torchFolder = torchLibraryFolder(torchError);
    if (torchFolder.isEmpty())
        return fail(QString("%1: %2").arg(command, torchError));
    const QByteArray previous = qgetenv("LD_LIBRARY_PATH");
    qputenv(kSavedLibraryPath, qEnvironmentVariableIsSet("LD_LIBRARY_PATH") ? previous : QByteArray(kNoLibraryPath));
    qputenv("LD_LIBRARY_PATH", previous.isEmpty() ? torchFolder.toLocal8Bit() : torchFolder.toLocal8Bit() + ':' + previous);
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

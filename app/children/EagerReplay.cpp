#include "app/children/EagerReplay.h"

#include "app/children/ChildProgram.h"
#include "app/codecs/ReplayJson.h"

#include "core/replay/ReplayJudgement.h"
#include "core/run/RunFormat.h"
#include "core/replay/ReplayOptions.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcessEnvironment>
#include <QRegularExpression>

namespace nanscope {

namespace {

namespace rf = runformat;

QString attribute(const std::map<std::string, std::string>& attributes, const char* name)
{
    const auto it = attributes.find(name);
    return it == attributes.end() ? QString() : QString::fromStdString(it->second);
}

// The last line of the child's stderr that says something (a Python traceback ends with the cause).
QString lastLine(const QByteArray& text)
{
    const QStringList lines = QString::fromUtf8(text).split('\n', Qt::SkipEmptyParts);
    for (auto it = lines.rbegin(); it != lines.rend(); ++it)
        if (!it->trimmed().isEmpty())
            return it->trimmed();
    return {};
}

// What the user has to do about a child that failed, from its last words.
std::string childFailure(const QString& python, const QByteArray& stderrText, int exitCode)
{
    const QString line = lastLine(stderrText);
    const QString who = "eager replay with " + python;
    if (line.contains("No module named 'torch'"))
        return (python + " has no torch: give --python the interpreter that trained the model").toStdString();
    if (line.contains("No module named 'nanscope_recorder'") || line.contains("No module named nanscope_recorder"))
        return (python + " cannot import nanscope_recorder: install the recorder into it (pip install ./python in "
                         "nanscope's source, or the nanscope package) or give --python another interpreter")
            .toStdString();
    static const QRegularExpression missingModule("No module named '([^']+)'");
    if (const auto match = missingModule.match(line); match.hasMatch())
        return (python + " cannot import " + match.captured(1) +
                ": eager replay needs torch and the recorder's packages (numpy, h5py) in the interpreter; give --python "
                "the interpreter that trained the model")
            .toStdString();
    static const QString ownPrefix = "nanscope eager replay: ";
    if (line.startsWith(ownPrefix))
        return line.mid(ownPrefix.size()).toStdString();
    return (who + " failed (exit status " + QString::number(exitCode) + ")" +
            (line.isEmpty() ? QString() : ": " + line))
        .toStdString();
}

// Where nanscope's own recorder package is, for a build run from its tree; an installed nanscope's
// recorder is on the system Python's path already (the .deb's .pth).
QString recorderSourceFolder()
{
#ifdef NANSCOPE_SOURCE_PYTHON_DIR
    const QString folder = QStringLiteral(NANSCOPE_SOURCE_PYTHON_DIR);
    if (QFileInfo(QDir(folder).filePath("nanscope_recorder/eager_replay.py")).isFile())
        return folder;
#endif
    return {};
}

} // namespace

EagerReplayRequest eagerReplayRequestFor(const std::map<std::string, std::string>& runAttributes, const QString& python,
                                         const QString& factory)
{
    EagerReplayRequest request;
    request.factory = factory.isEmpty() ? attribute(runAttributes, rf::kModelFactoryAttribute) : factory;
    const QString folders = attribute(runAttributes, rf::kModelFactoryPathAttribute);
    request.importPaths = folders.split(QDir::listSeparator(), Qt::SkipEmptyParts);
    request.python = python;
    if (request.python.isEmpty()) {
        // The interpreter that trained has the user's packages; it may be gone (another machine).
        const QString trained = attribute(runAttributes, rf::kPythonExecutableAttribute);
        request.python = !trained.isEmpty() && QFileInfo(trained).isExecutable() ? trained : QString("python3");
    }
    return request;
}

Result<ReplayResult> runEagerReplay(const EagerReplayRequest& request)
{
    const ReplayOptions& o = request.options;
    QStringList args{"-m", "nanscope_recorder.eager_replay", "--checkpoint", QString::fromStdString(o.checkpoint),
                     "--batch", QString::fromStdString(o.batch), "--factory", request.factory,
                     "--dtype", o.dtypeChosen ? QString::fromStdString(o.dtype) : QStringLiteral("recorded"), "--device", QString::fromStdString(o.device)};
    for (const QString& folder : request.importPaths)
        args << "--path" << folder;
    if (!o.lossName.empty())
        args << "--loss-name" << QString::fromStdString(o.lossName);
    if (!o.dtypeChosen && (o.ampDtype == "float16" || o.ampDtype == "bfloat16"))
        args << "--autocast" << QString::fromStdString(o.ampDtype);
    if (o.eval)
        args << "--eval";
    if (o.bisect) {
        // The bisection judges a subset as the engines in C++ do (core/replay/BlowupBaseline).
        args << "--bisect" << "--blowup-factor" << QString::number(kBlowupFactor, 'g', 17);
        if (o.blowupBaseline.loss)
            args << "--typical-loss" << QString::number(*o.blowupBaseline.loss, 'g', 17);
        if (o.blowupBaseline.gradNorm)
            args << "--typical-grad-norm" << QString::number(*o.blowupBaseline.gradNorm, 'g', 17);
    }
    if (!o.backward)
        args << "--no-backward";

    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    if (const QString own = recorderSourceFolder(); !own.isEmpty()) {
        const QString existing = environment.value("PYTHONPATH");
        environment.insert("PYTHONPATH", existing.isEmpty() ? own : own + QDir::listSeparator() + existing);
    }
    // The child only replays, and ends after it: it keeps what it frees, as `nanscope replay`
    // does (a setting the user made in the environment stays).
    for (const auto& [name, value] : keepFreedMemoryEnvironment())
        if (!environment.contains(QString::fromStdString(name)))
            environment.insert(QString::fromStdString(name), QString::fromStdString(value));
    // The child dies with this process: a window that cancels the replay kills `nanscope replay`,
    // and the Python child must not go on running the model behind it.
    const ChildOutcome outcome =
        ChildProgram::runAndWait(request.python, args, -1, ChildSetup{environment, true});
    switch (outcome.kind) {
    case ChildOutcome::Kind::Succeeded:
        break;
    case ChildOutcome::Kind::FailedToStart:
        return Error{outcome.message.toStdString() + ": give --python the interpreter that trained the model"};
    case ChildOutcome::Kind::ExitedWithError:
        return Error{childFailure(request.python, outcome.standardError.toUtf8(), outcome.exitCode)};
    default:
        return Error{outcome.failureText("The eager replay with " + request.python).toStdString()};
    }
    const QByteArray& output = outcome.standardOutput;
    ReplayReport report = parseReplayJson(output);
    if (!report.error.isEmpty())
        return Error{"the eager replay printed no replay: " + report.error.toStdString()};
    ReplayResult result = std::move(report.result);
    if (result.bisected)
        result.badSampleCriterion = badSampleCriterionText(o.blowupBaseline);
    if (!o.dtypeChosen)
        result.dtype = report.dtype.toStdString(); // the checkpoint's own, as the child kept them
    std::vector<ReplayOp> allOps = std::move(result.ops);
    result.ops.clear();
    const QJsonObject backward = QJsonDocument::fromJson(output).object()["backward"].toObject();
    judgeReplayOps(result, allOps, o.layerPrefix);
    nameTheStateTheCulpritRead(result);
    // The backward culprit is told only for a finite forward, as the TorchScript replay tells it.
    const int culprit = backward["culprit_index"].toInt(-1);
    if (!result.firstNonfinite && culprit >= 0 && size_t(culprit) < allOps.size())
        result.gradCulprit = allOps[size_t(culprit)];
    return result;
}

} // namespace nanscope

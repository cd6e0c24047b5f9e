#include "ReplayProcess.h"

#include <QCoreApplication>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cmath>

namespace nanscope {

double jsonNumberOrNan(const QJsonValue& v)
{
    return v.isDouble() ? v.toDouble() : std::nan("");
}

namespace {

ReplayValue parseValue(const QJsonValue& value)
{
    ReplayValue v;
    const QJsonObject o = value.toObject();
    if (o.isEmpty())
        return v;
    v.defined = true;
    QStringList dims;
    for (const auto& d : o["shape"].toArray())
        dims << QString::number(d.toInteger());
    v.shape = dims.join(" x ");
    v.min = jsonNumberOrNan(o["min"]);
    v.max = jsonNumberOrNan(o["max"]);
    v.mean = jsonNumberOrNan(o["mean"]);
    v.std = jsonNumberOrNan(o["std"]);
    v.nan = o["nan"].toInteger();
    v.posinf = o["posinf"].toInteger();
    v.neginf = o["neginf"].toInteger();
    return v;
}

ReplayOpRow parseOp(const QJsonObject& o)
{
    ReplayOpRow op;
    op.index = o["index"].toInt();
    op.op = o["op"].toString();
    op.module = o["module"].toString();
    op.source = o["source"].toString();
    op.code = o["code"].toString();
    op.gradFunction = o["grad_fn"].toString();
    op.output = parseValue(o["output"]);
    op.grad = parseValue(o["grad"]);
    for (const auto& input : o["inputs"].toArray())
        op.inputs.push_back(parseValue(input));
    return op;
}

} // namespace

QString nanscopeProgram()
{
    const QString configured = qEnvironmentVariable("NANSCOPE_PROGRAM");
    return configured.isEmpty() ? QCoreApplication::applicationFilePath() : configured;
}

ReplayReport parseReplayJson(const QByteArray& json)
{
    ReplayReport report;
    QJsonParseError error;
    const QJsonObject root = QJsonDocument::fromJson(json, &error).object();
    if (error.error != QJsonParseError::NoError || root.isEmpty()) {
        report.error = QObject::tr("the replay printed no valid JSON (%1)").arg(error.errorString());
        return report;
    }
    report.step = root["step"].toInteger(-1);
    report.loss = jsonNumberOrNan(root["loss"]);
    report.lossName = root["loss_name"].toString();
    report.dtype = root["dtype"].toString();
    report.mode = root["mode"].toString();
    const QJsonObject forward = root["forward"].toObject();
    for (const auto& op : forward["ops"].toArray())
        report.ops.push_back(parseOp(op.toObject()));
    if (forward["first_nonfinite"].isObject()) {
        report.culprit = parseOp(forward["first_nonfinite"].toObject());
        report.firstNonfinite = report.culprit.index;
    }
    const QJsonObject backward = root["backward"].toObject();
    if (backward["first_nonfinite"].isObject()) {
        report.backwardCulprit = parseOp(backward["first_nonfinite"].toObject());
        report.hasBackwardCulprit = true;
    }
    if (root.contains("bad_samples")) {
        report.bisected = true;
        for (const auto& s : root["bad_samples"].toArray())
            report.badSamples.push_back(s.toInteger());
    }
    for (const auto& n : root["notes"].toArray())
        report.notes << n.toString();
    return report;
}

ReplayProcess::ReplayProcess(QObject* parent)
    : QObject(parent)
    , m_program(nanscopeProgram())
{
    static const bool registered = [] {
        qRegisterMetaType<ReplayReport>();
        qRegisterMetaType<ReplayRequest>();
        return true;
    }();
    (void)registered;
}

ReplayProcess::~ReplayProcess()
{
    cancel();
}

bool ReplayProcess::isRunning() const
{
    return m_process && m_process->state() != QProcess::NotRunning;
}

void ReplayProcess::start(const QString& runDirectory, const ReplayRequest& request)
{
    cancel();
    QStringList args{"replay", runDirectory, "--step", QString::number(request.step), "--json", "--dtype", request.dtype};
    if (!request.layerPrefix.isEmpty())
        args << "--layer" << request.layerPrefix;
    if (request.eval)
        args << "--eval";
    if (request.bisect)
        args << "--bisect";
    m_step = request.step;
    m_process = new QProcess(this);
    QProcess* process = m_process;
    connect(process, &QProcess::finished, this, [this, process](int code, QProcess::ExitStatus status) {
        if (process == m_process)
            onFinished(code, status);
        process->deleteLater();
    });
    connect(process, &QProcess::errorOccurred, this, [this, process](QProcess::ProcessError error) {
        if (error != QProcess::FailedToStart || process != m_process)
            return;
        ReplayReport report;
        report.step = m_step;
        report.error = tr("cannot start %1: %2").arg(m_program, process->errorString());
        m_process = nullptr;
        process->deleteLater();
        emit finished(report);
    });
    process->start(m_program, args);
    emit started();
}

void ReplayProcess::cancel()
{
    if (!m_process)
        return;
    QProcess* process = m_process;
    m_process = nullptr; // its finished signal no longer reports
    process->kill();
    process->waitForFinished(2000);
    process->deleteLater();
}

void ReplayProcess::onFinished(int exitCode, QProcess::ExitStatus status)
{
    QProcess* process = m_process;
    m_process = nullptr;
    ReplayReport report;
    const QString stderrText = QString::fromUtf8(process->readAllStandardError()).trimmed();
    if (status == QProcess::CrashExit) {
        report.error = tr("The replay of step %1 crashed inside LibTorch; the window is unaffected. %2")
                           .arg(m_step)
                           .arg(stderrText.right(400));
    } else if (exitCode != 0) {
        QStringList lines = stderrText.split('\n', Qt::SkipEmptyParts);
        lines.removeIf([](const QString& l) { return l.contains("runs code from the file"); });
        report.error = lines.join("\n").remove("nanscope: ");
        if (report.error.isEmpty())
            report.error = tr("the replay exited with status %1").arg(exitCode);
    } else {
        report = parseReplayJson(process->readAllStandardOutput());
    }
    if (report.step < 0)
        report.step = m_step;
    emit finished(report);
}

} // namespace nanscope

#include "ReplayProcess.h"

#include <QCoreApplication>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cmath>

namespace nanscope {

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
    , m_child(new ChildProgram(this))
{
    static const bool registered = [] {
        qRegisterMetaType<ReplayReport>();
        qRegisterMetaType<ReplayRequest>();
        return true;
    }();
    (void)registered;
}

ReplayProcess::~ReplayProcess() = default;

bool ReplayProcess::isRunning() const
{
    return m_child->isRunning();
}

void ReplayProcess::setProgram(const QString& program)
{
    m_child->setProgram(program);
}

void ReplayProcess::cancel()
{
    m_child->cancel();
}

void ReplayProcess::start(const QString& runDirectory, const ReplayRequest& request)
{
    QStringList args{"replay", runDirectory, "--step", QString::number(request.step), "--json", "--dtype", request.dtype};
    if (!request.layerPrefix.isEmpty())
        args << "--layer" << request.layerPrefix;
    if (request.eval)
        args << "--eval";
    if (request.bisect)
        args << "--bisect";
    const qint64 step = request.step;
    m_child->start(args, [this, step](const ChildOutcome& outcome) { emit finished(replayReportFrom(outcome, step)); });
    emit started();
}

ReplayReport replayReportFrom(const ChildOutcome& outcome, qint64 step)
{
    ReplayReport report;
    if (outcome.kind == ChildOutcome::Kind::Crashed)
        report.error = QObject::tr("The replay of step %1 crashed inside LibTorch; the window is unaffected. %2")
                           .arg(step)
                           .arg(outcome.standardError.right(400));
    else if (!outcome.succeeded())
        report.error = outcome.message;
    else
        report = parseReplayJson(outcome.standardOutput);
    if (report.step < 0)
        report.step = step;
    return report;
}

} // namespace nanscope

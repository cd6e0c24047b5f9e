#include "app/cli/CliSupport.h"
#include "app/children/ReplayProcess.h"
#include "app/cli/Subcommands.h"
#include "app/codecs/TriageJson.h"

#include "core/NumberText.h"
#include "core/replay/BlowupBaseline.h"
#include "core/replay/TriageNeighbours.h"
#include "core/run/CheckpointPairing.h"
#include "core/run/RunFormat.h"
#include "core/open/OpenRun.h"
#include "core/run/RunFolderFiles.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>
#include <cmath>
#include <set>
#include <iterator>

namespace nanscope::cli {

namespace {

constexpr int kReplayTimeoutMs = 600000;

struct PlannedReplay
{
    TriageRole role;
    int64_t checkpointStep = -1;
    int64_t batchStep = -1;
    QString missing; // why it cannot run, when a file is not there
    bool wasIncident = false; // a neighbour batch whose own step was an incident
};

TriageReplay triageReplayFrom(const PlannedReplay& plan, const ReplayReport& report)
{
    TriageReplay r;
    r.role = plan.role;
    r.checkpointStep = plan.checkpointStep;
    r.batchStep = plan.batchStep;
    r.wasIncident = plan.wasIncident;
    if (!plan.missing.isEmpty()) {
        r.error = plan.missing.toStdString();
        return r;
    }
    if (!report.error.isEmpty()) {
        r.error = report.error.simplified().toStdString();
        return r;
    }
    const ReplayResult& result = report.result;
    r.ran = true;
    r.loss = result.loss;
    r.forwardNonfinite = result.firstNonfinite.has_value();
    r.backwardNonfinite = result.firstNonfiniteGrad.has_value();
    if (const auto& bad = result.firstNonfinite ? result.firstNonfinite : result.firstNonfiniteGrad) {
        r.badOp = bad->op;
        r.badModule = bad->module;
    }
    return r;
}

QString stepText(int64_t step)
{
    return step >= 0 ? QString::number(step) : QString("-");
}

QString lossText(const TriageReplay& r)
{
    if (!r.ran)
        return "-";
    return QString::fromStdString(numberText(r.loss, 6));
}

// The replays triage runs for step N: batch N on its checkpoint twice, on the one before it, and
// the nearest saved batches of healthy steps on its checkpoint (core/replay/TriageNeighbours).
std::vector<PlannedReplay> planTriage(const QString& runDir, qint64 step, const PairedCheckpoint& paired,
                                      const std::map<int64_t, std::string>& batches)
{
    const int64_t checkpointStep = paired.step;
    std::vector<PlannedReplay> plan{{TriageRole::Incident, checkpointStep, step, {}},
                                    {TriageRole::IncidentAgain, checkpointStep, step, {}}};
    if (!paired.earlierStep)
        plan.push_back({TriageRole::EarlierCheckpoint, -1, step, QString("no checkpoint before %1").arg(checkpointStep)});
    else
        plan.push_back({TriageRole::EarlierCheckpoint, *paired.earlierStep, step, {}});
    // Neighbours: the nearest saved batches of healthy steps on the same checkpoint
    // (core/replay/TriageNeighbours).
    std::set<int64_t> incidentSteps;
    if (auto reader = openRun(runDir.toStdString()))
        incidentSteps = trainingIncidentSteps(**reader);
    std::vector<int64_t> savedBatches;
    for (const auto& entry : batches)
        savedBatches.push_back(entry.first);
    const std::vector<NeighbourBatch> neighbours = triageNeighbours(savedBatches, step, incidentSteps);
    for (const NeighbourBatch& neighbour : neighbours) {
        PlannedReplay p{TriageRole::NeighbourBatch, checkpointStep, neighbour.step, {}};
        p.wasIncident = neighbour.wasIncident;
        plan.push_back(p);
    }
    if (neighbours.empty())
        plan.push_back({TriageRole::NeighbourBatch, checkpointStep, -1, QString("no other saved batch")});

    return plan;
}

// `nanscope triage`'s text: each replay's result, the label and why.
void printTriage(const TriageReport& triage, qint64 step, int64_t checkpointStep)
{
    out() << QString("Triage of step %1: batch %1 with checkpoint %2").arg(step).arg(checkpointStep);
    if (triage.evidence.typicalLoss)
        out() << QString(" (typical loss before it: %1)").arg(*triage.evidence.typicalLoss, 0, 'g', 4);
    out() << "\n\n";
    out() << QString("%1 %2 %3  %4 %5\n").arg("replay", -20).arg("checkpoint", 10).arg("batch", 6).arg("result", -40).arg("loss");
    for (const TriageReplay& r : triage.evidence.replays)
        out() << QString("%1 %2 %3  %4 %5\n")
                     .arg(fromStd(triageRoleName(r.role)), -20)
                     .arg(stepText(r.checkpointStep), 10)
                     .arg(stepText(r.batchStep), 6)
                     .arg(fromStd(triageResultText(r, triage.evidence.typicalLoss)) +
                              (r.wasIncident ? QString(" (an incident step: not counted)") : QString()), -40)
                     .arg(lossText(r));
    out() << "\nLabel: " << fromStd(triageLabelName(triage.verdict.label)) << "\n"
          << fromStd(triage.verdict.why) << "\n";
    for (const std::string& detail : triage.verdict.details)
        out() << "note: " << fromStd(detail) << "\n";
}

} // namespace

int runTriage(const QStringList& arguments)
{
    QCommandLineParser parser;
    parser.setApplicationDescription(
        "Triage an incident: is it the data, the model's state, or both? Replays batch N on the checkpoint\n"
        "paired with it twice (is the replay deterministic?), batch N on the checkpoint before that (does the\n"
        "batch alone do it?) and the nearest saved batches (up to 2 before and 2 after N) on the same\n"
        "checkpoint (does the state alone do it?). Labels the incident data, state, data x state or not\n"
        "reproducible, with the evidence. The checkpoint paired with step N is the latest saved at or before\n"
        "N: a checkpoint of step N holds the weights step N's forward ran on.\n"
        "Note: each replay runs the checkpoint's TorchScript code, in a child process.");
    parser.addPositionalArgument("RUN_DIR", "The run directory.");
    parser.addOption({"step", "The incident's step: its batch must be saved.", "N"});
    parser.addOption({"json", "Print JSON instead of text."});
    parser.addOption(rankOption());
    int code = 0;
    if (!parse(parser, arguments, code))
        return code;
    if (parser.positionalArguments().size() != 1)
        return fail("triage takes one RUN_DIR\n" + helpText(parser));
    QString runDir = parser.positionalArguments().first();
    if (!parser.isSet("step"))
        return fail("triage needs --step N");
    bool stepOk = true;
    const qint64 step = parser.value("step").toLongLong(&stepOk);
    if (!stepOk)
        return fail("--step takes a number, not '" + parser.value("step") + "'");
    if (!QFileInfo(runDir).isDir())
        return fail(runDir + ": not a run directory");
    // One rank's run directory holds its checkpoints and batches.
    if (QString error; !resolveRankFolder(parser, runDir, step, error))
        return fail(error);

    const auto checkpoints = listSteppedFiles(QDir(runDir).filePath("checkpoints").toStdString());
    const auto batches = listSteppedFiles(QDir(runDir).filePath("batches").toStdString());
    auto savedSteps = [](const std::map<int64_t, std::string>& files) {
        QStringList steps;
        for (const auto& entry : files)
            steps << QString::number(entry.first);
        return steps.isEmpty() ? QString("none") : steps.join(", ");
    };
    const auto batch = batches.find(step);
    if (batch == batches.end())
        return fail(QString("%1 has no saved batch for step %2. Saved batches: %3").arg(runDir).arg(step).arg(savedSteps(batches)));
    // The state step N ran on: checkpoint N when saved, else the latest before it (CheckpointPairing).
    const auto paired = checkpointForStep(checkpoints, step);
    if (!paired)
        return fail(QString("%1 has no checkpoint at or before step %2. Saved checkpoints: %3")
                        .arg(runDir).arg(step).arg(savedSteps(checkpoints)));
    const int64_t checkpointStep = paired->step;

    const std::vector<PlannedReplay> plan = planTriage(runDir, step, *paired, batches);

    TriageReport triage;
    triage.evidence.step = step;
    if (auto reader = openRun(runDir.toStdString()))
        triage.evidence.typicalLoss = blowupBaselineBefore(**reader, step).loss;
    const QString program = nanscopeProgram();
    int done = 0;
    QJsonObject incidentReplay; // carried whole in the JSON: the pane shows its ops
    for (const PlannedReplay& p : plan) {
        const QString checkpointFile = p.checkpointStep >= 0 ? fromStd(checkpoints.at(p.checkpointStep)) : QString();
        const QString batchFile = p.batchStep >= 0 ? fromStd(batches.at(p.batchStep)) : QString();
        triage.checkpoints << checkpointFile;
        triage.batches << batchFile;
        ReplayReport report;
        if (p.missing.isEmpty()) {
            err() << QString("nanscope: triage %1/%2: batch %3 on checkpoint %4 (TorchScript: this runs code from the file)")
                         .arg(++done).arg(plan.size()).arg(p.batchStep).arg(p.checkpointStep)
                  << Qt::endl;
            // Each replay in its own process: a model that crashes LibTorch costs one row, and the
            // second replay of the incident starts as fresh as the first.
            const ChildOutcome outcome = ChildProgram::runAndWait(
                program, {"replay", runDir, "--checkpoint", checkpointFile, "--batch", batchFile, "--json"}, kReplayTimeoutMs);
            report = replayReportFrom(outcome, p.batchStep);
            if (p.role == TriageRole::Incident && outcome.succeeded())
                incidentReplay = QJsonDocument::fromJson(outcome.standardOutput).object();
        }
        triage.evidence.replays.push_back(triageReplayFrom(p, report));
    }
    triage.verdict = judgeTriage(triage.evidence);

    if (parser.isSet("json")) {
        out() << QJsonDocument(triageToJson(triage, incidentReplay)).toJson(QJsonDocument::Indented);
        return kExitOk;
    }
    printTriage(triage, step, checkpointStep);
    return kExitOk;
}

} // namespace nanscope::cli

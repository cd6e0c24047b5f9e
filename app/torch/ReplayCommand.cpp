#include "app/cli/CliSupport.h"
#include "core/NumberText.h"
#include "app/children/EagerReplay.h"
#include "app/codecs/ReplayJson.h"
#include "app/cli/Subcommands.h"

#include "core/torch/Replay.h"
#include "core/checkpoint/ExportedProgram.h"
#include "core/run/CheckpointForm.h"
#include "core/run/CheckpointPairing.h"
#include "core/run/RunFormat.h"
#include "core/run/RunWriter.h"
#include "core/open/OpenRun.h"
#include "core/run/RunFolderFiles.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <variant>

#include <unistd.h>

namespace nanscope::cli {

namespace {

// When a step's file is there but is not a regular file (a FIFO, a directory, a broken link), the
// run's listing skips it: say so, naming it, instead of only "no checkpoint".
QString notAFileNote(const QString& folder, int64_t step)
{
    const QDir dir(folder);
    for (const QString& name : dir.entryList(QDir::AllEntries | QDir::System | QDir::NoDotAndDotDot)) {
        const auto parsed = runformat::parseStepFileName(name.toStdString());
        if (!parsed || parsed->step != step || !runformat::isCheckpointExtension(parsed->extension))
            continue;
        const QFileInfo info(dir.filePath(name));
        if (!info.isFile() || !info.exists())
            return QString(" (%1 is there but is not a regular file: a FIFO, a device, a directory or a broken link)")
                .arg(info.filePath());
    }
    return QString();
}

QString range(const std::optional<TensorStats>& s)
{
    const std::string counts = nonfiniteCountsText(s);
    return fromStd(finiteRangeText(s) + (counts.empty() ? "" : "  " + counts));
}

// While it lives, whatever writes to file descriptor 1 (C stdio, std::cout, LibTorch) goes to
// stderr; the real stdout comes back when it ends.
class StdoutToStderr
{
public:
    StdoutToStderr()
    {
        out().flush();
        std::cout.flush();
        std::fflush(stdout);
        m_savedStdout = ::dup(STDOUT_FILENO);
        if (m_savedStdout >= 0)
            ::dup2(STDERR_FILENO, STDOUT_FILENO);
    }
    ~StdoutToStderr()
    {
        std::cout.flush();
        std::fflush(stdout);
        if (m_savedStdout >= 0) {
            ::dup2(m_savedStdout, STDOUT_FILENO);
            ::close(m_savedStdout);
        }
    }
    StdoutToStderr(const StdoutToStderr&) = delete;
    StdoutToStderr& operator=(const StdoutToStderr&) = delete;

private:
    int m_savedStdout = -1;
};

QString stepList(const std::vector<int64_t>& steps)
{
    QStringList list;
    for (int64_t step : steps)
        list << QString::number(step);
    return list.isEmpty() ? QString("none") : list.join(", ");
}

void addReplayOptions(QCommandLineParser& parser)
{
    parser.setApplicationDescription(
        "Replay one training step: run the saved batch through the saved checkpoint with every intermediate\n"
        "value captured, forward and backward, down to the first op that produced a NaN or Inf.\n"
        "Note: a TorchScript checkpoint is a program; replaying it runs code from the file. A torch.export\n"
        "archive (.pt2) is data: its graph of ATen ops runs op by op in LibTorch, and nothing of the file runs as code.");
    parser.addPositionalArgument("RUN_DIR", "The run directory.");
    parser.addOption({"step", "The step to replay (checkpoint N + batch N).", "N"});
    parser.addOption({"checkpoint", "A TorchScript checkpoint or torch.export archive (.pt2) to use instead of the step's own.", "FILE"});
    parser.addOption({"batch", "A batch file to use instead of batches/step_N.pt.", "FILE"});
    parser.addOption({"layer", "List only ops of modules under this path (all still run).", "PREFIX"});
    parser.addOption({"bisect", "Find the bad samples of the batch: those that make a value non-finite, or the loss or "
                                "gradient norm 10 times the run's typical one."});
    parser.addOption({"dtype", "Replay in float16, bfloat16, float32 or float64 (precision what-if, without autocast). Default: float32 for a TorchScript checkpoint; an exported program and an eager replay keep the dtypes their checkpoint holds; a run that trained under autocast (amp_dtype) replays under it.", "DTYPE", "float32"});
    parser.addOption({"device", "cpu, or cuda when LibTorch has it.", "DEVICE", "cpu"});
    parser.addOption({"eval", "Replay in evaluation mode (default: training mode, as the step ran)."});
    parser.addOption({"json", "Print JSON instead of text."});
    parser.addOption({"eager", "Replay in Python, rebuilding the model with its factory (as a state_dict checkpoint "
                               "always is): forward and backward hooked on every module and torch call."});
    parser.addOption({"model-factory", "How eager replay rebuilds the model: module:callable (default: the run's "
                                       "model_factory).", "SPEC"});
    parser.addOption({"python", "The Python interpreter for eager replay (default: the one that trained, else "
                                "python3).", "PROGRAM"});
    parser.addOption(rankOption());
}

// What a replay will run: its options, and whether in Python (eager) rather than in LibTorch.
struct ReplayPlan
{
    ReplayOptions options;
    EagerReplayRequest eager;
    bool eagerly = false;
};

// The line that says an eager replay runs the model's own Python code.
void announceEagerReplay(const ReplayPlan& plan)
{
    err() << "nanscope: replaying " << fromStd(plan.options.checkpoint) << " eagerly: " << plan.eager.python
          << " imports " << plan.eager.factory << " (this runs the model's Python code)" << Qt::endl;
}

// Finds the checkpoint and batch of `step` (or the ones given), the run's loss name, autocast and
// typical figures, and whether the checkpoint replays in LibTorch or eagerly; or says why it cannot.
std::variant<ReplayPlan, QString> planReplay(const QCommandLineParser& parser, const QString& runDir, qint64 step)
{
    ReplayPlan plan;
    ReplayOptions& options = plan.options;
    const auto checkpoints = listSteppedFiles(QDir(runDir).filePath("checkpoints").toStdString());
    const auto batches = listSteppedFiles(QDir(runDir).filePath("batches").toStdString());
    // The steps offered instead: RunInfo's judgement (it leaves out state_dict checkpoints) where
    // run.h5 opens, else every step with both files.
    QString replayable = stepList(stepsWithCheckpointAndBatch(checkpoints, batches));
    // run.h5 supplies the loss name when the batch lacks one; replay works without it.
    std::map<std::string, std::string> runAttributes;
    if (auto reader = openRun(runDir.toStdString())) {
        const auto& attributes = (*reader)->info().attributes;
        runAttributes = attributes;
        if (auto it = attributes.find("loss_name"); it != attributes.end())
            options.lossName = it->second;
        if (auto it = attributes.find("module_path_prefix"); it != attributes.end())
            options.modulePathPrefix = it->second;
        if (auto it = attributes.find("amp_dtype"); it != attributes.end())
            options.ampDtype = it->second;
        replayable = stepList((*reader)->info().replayableSteps());
        if (parser.isSet("step"))
            options.blowupBaseline = blowupBaselineBefore(**reader, step);
    }
    options.checkpoint = parser.value("checkpoint").toStdString();
    options.batch = parser.value("batch").toStdString();
    if (options.checkpoint.empty()) {
        // Step N replays on its own checkpoint only; an earlier one is triage's question.
        const auto paired = checkpointForStep(checkpoints, step);
        if (!paired || !paired->ownStep) {
            // With batch N saved, triage replays it on the latest earlier checkpoint: say so.
            const QString earlier = paired && batches.count(step)
                                        ? QString(" (the latest checkpoint before it is step %1: `nanscope triage "
                                                  "RUN_DIR --step %2` replays batch %2 on it)")
                                              .arg(paired->step).arg(step)
                                        : QString();
            return QString(QString("%1 has no checkpoint for step %2%3%4. Steps with both a checkpoint and a batch: %5")
                            .arg(runDir).arg(step).arg(notAFileNote(QDir(runDir).filePath("checkpoints"), step))
                            .arg(earlier).arg(replayable));
        }
        options.checkpoint = checkpoints.at(paired->step);
    }
    if (options.batch.empty()) {
        auto it = batches.find(step);
        if (it == batches.end())
            return QString(QString("%1 has no saved batch for step %2%3. Steps with both a checkpoint and a batch: %4")
                            .arg(runDir).arg(step).arg(notAFileNote(QDir(runDir).filePath("batches"), step))
                            .arg(replayable));
        options.batch = it->second;
    }
    for (const auto& file : {options.checkpoint, options.batch})
        if (!QFileInfo::exists(fromStd(file)))
            return QString(fromStd(file) + ": no such file");
    // The recorder says beside a checkpoint when it is no program (checkpoints/step_N.form): it
    // replays eagerly when the run names a model factory; else say why and what would make it
    // replayable, rather than LibTorch's failure to load it.
    plan.eager =
        eagerReplayRequestFor(runAttributes, parser.value("python"), parser.value("model-factory"));
    plan.eagerly = parser.isSet("eager");
    if (const auto form = readFormBeside(options.checkpoint))
        if (const std::string why = whyFormCannotReplay(*form); !why.empty()) {
            if (plan.eager.factory.isEmpty())
                return QString(fromStd(options.checkpoint) + " cannot be replayed: it " + fromStd(why) +
                            "; or name a model factory for eager replay (--model-factory module:function, or the "
                            "recorder's model_factory)");
            plan.eagerly = true;
        }
    if (plan.eagerly && plan.eager.factory.isEmpty())
        return QString("--eager needs a model factory: the run names none; give --model-factory module:function (a "
                    "function that builds the model with no arguments)");
    options.layerPrefix = parser.value("layer").toStdString();
    options.bisect = parser.isSet("bisect");
    options.dtype = parser.value("dtype").toStdString();
    options.dtypeChosen = parser.isSet("dtype");
    options.device = parser.value("device").toStdString();
    options.eval = parser.isSet("eval");
    if (plan.eagerly)
        announceEagerReplay(plan);
    else if (isExportArchive(options.checkpoint))
        err() << "nanscope: replaying " << fromStd(options.checkpoint)
              << " (torch.export: its graph's ATen ops run in LibTorch; no code from the file runs)" << Qt::endl;
    else
        err() << "nanscope: replaying " << fromStd(options.checkpoint)
              << " (TorchScript: this runs code from the file)" << Qt::endl;

    return plan;
}

// Runs the plan: in Python for an eager replay, else in this process (which only replays, and
// ends after it).
Result<ReplayResult> runReplayPlan(ReplayPlan& plan, bool json)
{
    Result<ReplayResult> replayed = Error{"not run"};
    {
        // The model runs here, and a model may print (TorchScript print() writes to stdout): with
        // --json its text would corrupt the JSON a parent process parses. Its stdout goes to stderr.
        std::optional<StdoutToStderr> modelOutputAside;
        if (json)
            modelOutputAside.emplace();
        if (plan.eagerly) {
            plan.eager.options = plan.options;
            replayed = runEagerReplay(plan.eager);
        } else {
            keepFreedMemoryForReuse(); // this process only replays, and ends after it
            replayed = replayStep(plan.options);
            // A program the native replay cannot run (an op it refuses, a node kind it does not
            // know) still replays when the run names the model's factory: eagerly, in Python.
            if (!replayed && !plan.eager.factory.isEmpty()) {
                const std::string native = replayed.error();
                err() << "nanscope: the native replay failed (" << fromStd(native) << ")" << Qt::endl;
                announceEagerReplay(plan);
                plan.eager.options = plan.options;
                replayed = runEagerReplay(plan.eager);
                if (replayed)
                    replayed->notes.insert(replayed->notes.begin(),
                                           "the native replay failed (" + native + "): replayed eagerly instead");
                else
                    replayed = Error{"the native replay failed (" + native + "), and the eager replay too: " +
                                     replayed.error()};
            }
        }
    }
    return replayed;
}

// `nanscope replay`'s text: the ops, the first non-finite value and gradient, findings, bad samples.
void printReplay(const ReplayResult& r, qint64 shownStep)
{
    const QString lossFrom = r.lossConvention == LossConvention::None ? QString("no loss") : fromStd(r.lossFrom);
    out() << QString("step %1   loss (%2) = %3   %4 ops captured\n")
                 .arg(shownStep).arg(lossFrom).arg(r.loss, 0, 'g', 6).arg(r.ops.size());
    if (r.lossConvention == LossConvention::InForward)
        out() << "the model computes its loss in forward: replay back-propagates from the loss it returned\n";
    if (r.logits)
        out() << QString("log Z of the logits (%1): mean %2, min %3, max %4 over %5 rows\n")
                     .arg(fromStd(r.logits->from))
                     .arg(r.logits->logZMean.value_or(NAN), 0, 'g', 5)
                     .arg(r.logits->logZMin.value_or(NAN), 0, 'g', 5)
                     .arg(r.logits->logZMax.value_or(NAN), 0, 'g', 5)
                     .arg(r.logits->rows);
    out() << "\n";
    auto bits = [](const std::optional<double>& v) { return v ? QString::number(*v, 'f', 1) : QString("-"); };
    out() << QString("%1 %2 %3 %4 %5 %6 %7\n")
                 .arg("#", 4).arg("op", -22).arg("module", -14).arg("source", -22).arg("fp16 bits", 9).arg("range bits", 10)
                 .arg("output range");
    for (const auto& op : r.ops) {
        const bool culprit = r.firstNonfinite && r.firstNonfinite->index == op.index;
        QString softmax;
        if (op.softmax)
            softmax = QString("   softmax: max|in| %1, entropy %2 of %3")
                          .arg(op.softmax->inputAbsmax, 0, 'g', 4)
                          .arg(op.softmax->entropy ? fromStd(numberText(*op.softmax->entropy, 3)) : QString("-"))
                          .arg(op.softmax->uniformEntropy, 0, 'g', 3);
        out() << QString("%1 %2 %3 %4 %5 %6 %7%8%9\n")
                     .arg(op.index, 4)
                     .arg(fromStd(op.op), -22)
                     .arg(fromStd(op.module.empty() ? "(root)" : op.module) +
                              (op.iteration >= 0 ? QString(" [%1]").arg(op.iteration) : QString()), -14)
                     .arg(fromStd(op.source), -22)
                     .arg(bits(op.headroom.float16Bits), 9)
                     .arg(bits(op.headroom.dynamicRangeBits), 10)
                     .arg(range(op.output), softmax, culprit ? QString("   <== first non-finite") : QString());
    }
    if (r.firstNonfinite) {
        const auto& op = *r.firstNonfinite;
        out() << QString("\nFirst non-finite value: op #%1 %2 in module '%3' at %4%5\n")
                     .arg(op.index).arg(fromStd(op.op), fromStd(op.module), fromStd(op.source),
                          op.iteration >= 0 ? QString(" (loop iteration %1)").arg(op.iteration) : QString());
        if (!op.code.empty())
            out() << QString("  code   : %1\n").arg(fromStd(op.code));
        for (size_t i = 0; i < op.inputs.size(); ++i)
            out() << QString("  input %1: %2\n").arg(i).arg(range(op.inputs[i]));
        out() << QString("  output : %1\n").arg(range(op.output));
    } else if (forwardVerdict(r) == ForwardVerdict::NonfiniteLossUnseen) {
        out() << "\n" << kNonfiniteLossUnseenText << "\n";
    } else {
        out() << "\nThe forward pass is finite.\n";
    }
    if (r.firstNonfiniteGrad)
        out() << QString("First non-finite gradient (backward order): op #%1 %2 in '%3' (%4)\n")
                     .arg(r.firstNonfiniteGrad->index)
                     .arg(fromStd(r.firstNonfiniteGrad->op), fromStd(r.firstNonfiniteGrad->module),
                          fromStd(r.firstNonfiniteGrad->gradFunction));
    if (r.gradCulprit)
        out() << QString("The forward is finite; backward first made a non-finite gradient in op #%1 %2 in '%3' at %4%5\n")
                     .arg(r.gradCulprit->index)
                     .arg(fromStd(r.gradCulprit->op), fromStd(r.gradCulprit->module), fromStd(r.gradCulprit->source),
                          r.gradCulprit->code.empty() ? QString() : QString(" (%1)").arg(fromStd(r.gradCulprit->code)));
    for (const auto& finding : r.findings)
        out() << "\n" << fromStd(finding.cause) << "\n  suggestion: " << fromStd(finding.suggestion) << "\n";
    if (r.bisected) {
        QStringList bad;
        for (int64_t i : r.badSamples)
            bad << QString::number(i);
        out() << "Bad samples (" << fromStd(r.badSampleCriterion.empty() ? "a non-finite value" : r.badSampleCriterion)
              << "): " << (bad.isEmpty() ? QString("none") : bad.join(", ")) << "\n";
    }
    for (const auto& n : r.notes)
        out() << "note: " << fromStd(n) << "\n";
}

} // namespace

int runReplay(const QStringList& arguments)
{
    QCommandLineParser parser;
    addReplayOptions(parser);
    int code = 0;
    if (!parse(parser, arguments, code))
        return code;
    if (parser.positionalArguments().size() != 1)
        return fail("replay takes one RUN_DIR\n" + helpText(parser));
    QString runDir = parser.positionalArguments().first();
    const bool explicitFiles = parser.isSet("checkpoint") && parser.isSet("batch");
    if (!parser.isSet("step") && !explicitFiles)
        return fail("replay needs --step N (or both --checkpoint and --batch)");
    bool stepOk = true;
    const qint64 step = parser.value("step").toLongLong(&stepOk);
    if (parser.isSet("step") && !stepOk)
        return fail("--step takes a number, not '" + parser.value("step") + "'");
    // One rank's run directory holds its checkpoints and batches.
    if (QString error; !resolveRankFolder(parser, runDir, parser.isSet("step") ? std::optional<int64_t>(step) : std::nullopt,
                                          error))
        return fail(error);
    auto planned = planReplay(parser, runDir, step);
    if (auto* error = std::get_if<QString>(&planned))
        return fail(*error); // what the user reads: the plan's failure
    ReplayPlan& plan = std::get<ReplayPlan>(planned);
    const Result<ReplayResult> replayed = runReplayPlan(plan, parser.isSet("json"));
    if (!replayed)
        return fail(fromStd(replayed.error()));
    const ReplayResult& r = *replayed;
    const qint64 shownStep = r.step >= 0 ? r.step : step;
    if (parser.isSet("json"))
        out() << QJsonDocument(replayResultToJson(r, shownStep, plan.options)).toJson(QJsonDocument::Indented);
    else
        printReplay(r, shownStep);
    return kExitOk;
}

} // namespace nanscope::cli

#include "core/torch/Guard.h"

#include "core/record/DefencePolicy.h"
#include "core/record/EventText.h"
#include "core/run/RunFormat.h"
#include "core/run/RunWriterThread.h"
#include "core/scan/OnlineSpikeDetector.h"
#include "core/torch/GuardFiles.h"
#include "core/torch/GuardModel.h"
#include "core/torch/GuardReadback.h"
#include "core/torch/GuardRunLog.h"
#include "core/torch/OptimizerSnapshot.h"
#include "core/torch/TensorRange.h"
#include "core/torch/TorchReductions.h"

#include <torch/script.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <iostream>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

namespace fs = std::filesystem;

namespace nanscope {

namespace rf = runformat;
namespace ts = torchstats;
using guardfiles::saveBatchFile;
using guardfiles::saveCheckpointFiles;

using namespace guardmodel;
using namespace guardreadback;
using namespace optimizersnapshot;

struct Guard::State
{
    std::string directory;
    GuardOptions options;
    std::unique_ptr<ModelAccess> model;
    std::unique_ptr<RunWriterThread> writer; // run.h5's appends, off the training thread
    bool closed = false;

    // ---- the step in progress
    bool inStep = false;
    int64_t step = -1;
    int64_t lastStep = std::numeric_limits<int64_t>::min();
    torch::Tensor inputs, targets;
    std::vector<std::pair<std::string, torch::Tensor>> inputSlots;   // name, reductions
    std::vector<std::pair<std::string, torch::Tensor>> observed;     // module path, reductions
    std::map<std::string, std::string> observedKinds;
    std::vector<torch::Tensor> bufferSnapshot; // the norm layers' buffers before this step's forward
    bool checkpointSaved = false;
    bool batchSaved = false;
    // Saved beside a capture, so that triage has a healthy batch to tell a bad batch from bad weights.
    guardfiles::HealthyBatch lastHealthy;

    // ---- fixed at the first endStep (run.h5's schema)
    std::vector<std::string> scalarNames; // the user's extra scalars
    bool logLearningRate = false;
    std::vector<std::string> inputNames;
    std::vector<std::string> activationColumns;
    bool rollbackUsable = false;
    bool optimizerChecked = false;

    // ---- across steps
    struct PendingEvent
    {
        int64_t step;
        std::string kind, message;
    };
    std::vector<PendingEvent> pendingEvents; // written at the next flush (run.h5 exists from the first endStep)
    std::set<std::string> warned;
    // The recorders' one spike rule (core/scan/OnlineSpikeDetector.h), on the loss and the
    // gradient norm, as the Python recorder applies it; made in open(), with the options.
    OnlineSpikeDetector lossSpikes, gradNormSpikes;
    CapturePolicy capturePolicy;
    DefencePolicy defences;
    double lrScale = 1.0;
    GuardStepResult result;
    bool noteCheckpointKind = true;

    std::optional<GoodState> good; // what a rollback returns to

    void open(const std::string& runDirectory, GuardOptions guardOptions, std::unique_ptr<ModelAccess> access)
    {
        directory = runDirectory;
        options = std::move(guardOptions);
        model = std::move(access);
        requireOneDevice();
        const auto spikeWindow = size_t(std::max<int64_t>(options.spikeWindow, 1));
        lossSpikes = OnlineSpikeDetector(options.spikeMads, spikeWindow);
        gradNormSpikes = OnlineSpikeDetector(options.spikeMads, spikeWindow);
        capturePolicy = CapturePolicy(CaptureBudget{options.spikeCaptures, options.laterNonfiniteCaptures});
        defences = DefencePolicy(static_cast<const DefenceOptions&>(options));
        std::error_code ec;
        if (fs::exists(logPath(), ec))
            throw GuardError(logPath() + " already exists; a run directory is written once (give the Guard a new one)");
        fs::create_directories(fs::path(runDirectory) / rf::kCheckpointDir, ec);
        if (!ec)
            fs::create_directories(fs::path(runDirectory) / rf::kBatchDir, ec);
        if (ec)
            throw GuardError("cannot create run directory " + runDirectory + ": " + ec.message());
    }

    // The Guard reads, snapshots and restores the model on one device; a model split over several
    // (pipeline stages by hand, a layer left on the CPU) is refused before anything of it is touched.
    void requireOneDevice() const
    {
        std::map<std::string, std::string> firstOn; // device -> the first parameter on it
        for (const auto& parameter : model->parameters)
            if (parameter.tensor.defined())
                firstOn.emplace(parameter.tensor.device().str(), parameter.name);
        if (firstOn.size() <= 1)
            return;
        std::string where;
        for (const auto& [device, name] : firstOn)
            where += (where.empty() ? "" : ", ") + name + " on " + device;
        throw GuardError("nanscope::Guard: the model's parameters live on " + std::to_string(firstOn.size()) +
                         " devices (" + where + "); the Guard records a model on one device: move it with "
                         "model->to(device) first, or guard each part's training loop on its own");
    }

    std::string logPath() const { return (fs::path(directory) / rf::kLogFileName).string(); }
    std::string stepFile(const char* folder, int64_t s) const
    {
        return (fs::path(directory) / folder / (rf::stepFileStem(s) + ".pt")).string();
    }
    std::string relative(const std::string& path) const { return fs::path(path).lexically_relative(directory).string(); }

    void event(int64_t atStep, const std::string& kind, const std::string& message)
    {
        pendingEvents.push_back({atStep, kind, message});
    }

    void flushEvents()
    {
        if (!writer)
            return;
        for (const auto& e : pendingEvents)
            check(writer->appendEvent(e.step, e.kind, e.message));
        pendingEvents.clear();
    }

    void check(const Status& status) const
    {
        if (!status)
            throw GuardError("nanscope::Guard: " + status.error());
    }

    void warnOnce(const std::string& key, int64_t atStep, const std::string& message)
    {
        if (!warned.insert(key).second)
            return;
        event(atStep, rf::event::kNote, message);
    }

    // ---------------------------------------------------------------- checkpoints and batches

    // Checkpoint N: the weights step N's forward used, and with `preForwardBuffers` the BatchNorm
    // buffers as they were before that forward changed them (the snapshot taken at beginStep).
    void saveCheckpoint(bool preForwardBuffers)
    {
        const std::string path = stepFile(rf::kCheckpointDir, step);
        saveCheckpointFiles(path, *model, preForwardBuffers ? &bufferSnapshot : nullptr);
        if (noteCheckpointKind && std::string(model->checkpointKind()) != "TorchScript") {
            event(step, rf::event::kNote,
                  "the model is a C++ torch::nn::Module: checkpoints are LibTorch archives of its tensors "
                  "(statistics and diff, no replay); guard a torch::jit::Module for replayable checkpoints");
        }
        noteCheckpointKind = false;
        event(step, rf::event::kCheckpoint, eventtext::checkpoint(relative(path), model->checkpointKind()));
        checkpointSaved = true;
    }

    void saveBatch()
    {
        const std::string path = stepFile(rf::kBatchDir, step);
        saveBatchFile(path, inputs, targets, step, options.lossName);
        event(step, rf::event::kBatchSaved, relative(path));
        batchSaved = true;
    }

    // ---------------------------------------------------------------- buffers

    void snapshotBuffers()
    {
        bufferSnapshot.clear();
        torch::NoGradGuard noGrad;
        for (const auto& layer : model->norms)
            for (const auto& b : layer.buffers)
                bufferSnapshot.push_back(b.tensor.detach().clone());
    }

    void restoreBuffers()
    {
        torch::NoGradGuard noGrad;
        size_t i = 0;
        for (auto& layer : model->norms)
            for (auto& b : layer.buffers)
                b.tensor.copy_(bufferSnapshot[i++]);
    }

    // ---------------------------------------------------------------- rollback

    void takeSnapshot(torch::optim::Optimizer& optimizer)
    {
        // An optimizer we know with a state type we do not keeps the last snapshot.
        if (auto state = takeGoodState(*model, optimizer, step))
            good = std::move(state);
    }

    void rollback(torch::optim::Optimizer& optimizer, int streak)
    {
        if (!good) {
            warnOnce("no-snapshot", step, "no good state to roll back to yet (none was snapshot before step " +
                                              std::to_string(step) + "): steps are skipped");
            return;
        }
        restoreGoodState(*good, *model, optimizer);
        std::vector<std::pair<double, double>> learningRates;
        for (auto& group : optimizer.param_groups()) {
            const double lr = group.options().get_lr();
            group.options().set_lr(lr * options.rollbackLrFactor);
            learningRates.emplace_back(lr, lr * options.rollbackLrFactor);
        }
        lrScale *= options.rollbackLrFactor;
        event(step, rf::event::kRollback,
              eventtext::rollback(good->step, streak, step, options.rollbackLrFactor, learningRates));
        result.rolledBack = true;
    }

    void checkOptimizer(torch::optim::Optimizer& optimizer)
    {
        if (optimizerChecked)
            return;
        try {
            optimizer.param_groups().at(0).options().get_lr();
            logLearningRate = true;
        } catch (const std::exception&) {
            logLearningRate = false; // an optimizer whose options do not say their learning rate
        }
        rollbackUsable = options.rollbackAfter > 0 && rollbackKnows(optimizer) && logLearningRate;
        if (options.rollbackAfter <= 0 || rollbackUsable) {
            optimizerChecked = true;
            return;
        }
        const std::string what = "nanscope::Guard: rollback does not know this optimizer (it knows torch::optim " +
                                 std::string(kKnownOptimizers) + ")";
        if (!options.allowUnknownOptimizer)
            throw GuardError(what + "; set GuardOptions::allowUnknownOptimizer to train on without rollback, "
                                    "or rollbackAfter = 0");
        optimizerChecked = true;
        std::cerr << what << ": training continues without rollback (allowUnknownOptimizer)\n";
        event(step, rf::event::kNote, what + ": training continues without rollback");
    }

    // ---------------------------------------------------------------- run.h5

    void createFile(const std::map<std::string, double>& scalars)
    {
        guardrunlog::FirstStepColumns columns;
        columns.logLearningRate = logLearningRate;
        for (const auto& [name, value] : scalars)
            scalarNames.push_back(name);
        columns.userScalars = scalarNames;
        columns.activations = activationColumns;
        columns.activationKinds = observedKinds;
        columns.inputs = inputNames;
        auto created = RunWriterThread::create(directory, guardrunlog::runSchema(options, directory, *model, columns));
        if (!created)
            throw GuardError("nanscope::Guard: " + created.error());
        writer = std::move(*created);
    }

    // ---------------------------------------------------------------- the step's end

    bool finishStep(const torch::Tensor& loss, torch::optim::Optimizer& optimizer,
                    const std::map<std::string, double>& scalars)
    {
        checkOptimizer(optimizer);
        result = GuardStepResult{};
        result.step = step;

        const StepFigures figures = readStepFigures(loss, *model, inputSlots, observed);
        const double lossValue = figures.loss;
        const double gradNorm = figures.gradNorm;
        const bool finite = figures.finite();

        // The first step fixes run.h5's columns.
        if (!writer) {
            for (const auto& [name, slots] : inputSlots)
                inputNames.push_back(name);
            for (const auto& [name, slots] : observed)
                if (std::find(activationColumns.begin(), activationColumns.end(), name) == activationColumns.end())
                    activationColumns.push_back(name);
            createFile(scalars);
        }
        std::map<std::string, double> scalarRow = userScalars(scalars);

        // Incident capture, then the defences.
        // Every detector sees every finite step (a spike of one does not hide the other's).
        bool spike = false;
        if (finite && spikeDetectionOn(options.spikeMads)) {
            const bool lossSpike = lossSpikes.isSpike(lossValue);
            const bool gradNormSpike = gradNormSpikes.isSpike(gradNorm);
            spike = lossSpike || gradNormSpike;
        }
        const CapturePolicy::Capture capture = capturePolicy.decide(finite, spike);
        if (capture != CapturePolicy::Capture::None) {
            if (!checkpointSaved)
                saveCheckpoint(/*preForwardBuffers=*/true);
            if (!batchSaved)
                saveBatch();
            std::string healthy;
            if (const std::optional<int64_t> neighbour = lastHealthy.unsavedStep()) {
                const std::string path = stepFile(rf::kBatchDir, *neighbour);
                lastHealthy.save(path, options.lossName);
                event(step, rf::event::kBatchSaved, relative(path));
                healthy = "; batch " + std::to_string(*neighbour) + ", the last healthy step's, for triage";
            }
            event(step, rf::event::kIncidentCapture,
                  CapturePolicy::describe(capture) + " at step " + std::to_string(step) + ": checkpoint " +
                      std::to_string(step) + " (the weights its forward ran on) and batch " + std::to_string(step) +
                      healthy);
        } else if (finite && !spike && inputs.defined()) {
            lastHealthy.hold(step, inputs, targets, batchSaved);
        }
        if (!std::isfinite(lossValue))
            event(step, rf::event::kNonfiniteLoss, eventtext::nonfiniteLoss(lossValue));
        // The defences (core/record/DefencePolicy decides, this carries it out).
        const DefencePolicy::Plan plan = defences.planStep(finite, rollbackUsable);
        if (plan.skip)
            event(step, rf::event::kSkippedStep,
                  eventtext::skippedStep(badStepReason(lossValue, figures.nonfiniteGradients)));
        if (plan.tryRollback)
            rollback(optimizer, defences.badStreak());
        const DefencePolicy::Outcome outcome = defences.settle(plan, result.rolledBack, !bufferSnapshot.empty());
        if (outcome.restoreBuffers) {
            restoreBuffers();
            std::vector<std::string> names;
            for (const auto& layer : model->norms)
                names.push_back(layer.path);
            event(step, rf::event::kBuffersRestored, eventtext::buffersRestored(names, step));
        }
        if (outcome.zeroGradients)
            zeroGradients();
        const bool apply = outcome.apply;

        // The step's rows.
        scalarRow[rf::scalar::kLoss] = lossValue;
        scalarRow[rf::scalar::kGradNorm] = gradNorm;
        scalarRow[rf::scalar::kParamNorm] = figures.paramNorm;
        scalarRow[rf::scalar::kSkipped] = apply ? 0.0 : 1.0;
        // Lets the window plot against time, and shows pauses and slow steps.
        scalarRow[rf::kWallTime] =
            std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
        if (logLearningRate)
            scalarRow["lr"] = optimizer.param_groups().at(0).options().get_lr();
        check(writer->appendScalars(step, scalarRow));
        if (!model->parameters.empty())
            check(writer->appendRow(rf::kLayers, step, layerRow(figures)));
        if (!model->norms.empty())
            check(writer->appendRow(rf::kBuffers, step, bufferRow(model->norms.size(), figures.slots.data() + figures.bufferAt)));
        appendInputs(figures.slots.data() + figures.inputAt);
        appendActivations(figures.slots.data() + figures.observedAt);

        if (defences.snapshotDue(finite, rollbackUsable, good ? std::optional<int64_t>(good->step) : std::nullopt, step))
            takeSnapshot(optimizer);
        flushEvents();
        // An incident's rows are the ones a person opens the run for, and a loop that stops at
        // the first NaN may exit right after this call: they are in run.h5 before it returns.
        if (!finite || capture != CapturePolicy::Capture::None)
            check(writer->drain());

        result.loss = lossValue;
        result.gradNorm = gradNorm;
        result.finite = finite;
        result.applied = apply;
        result.spike = spike;
        endOfStep();
        return apply;
    }

    std::string badStepReason(double lossValue, const std::vector<size_t>& nonfiniteParameters) const
    {
        if (!std::isfinite(lossValue))
            return eventtext::reasonNonfiniteLoss(lossValue);
        if (!nonfiniteParameters.empty())
            return eventtext::reasonNonfiniteGradients(nonfiniteParameters.size(),
                                                       model->parameters[nonfiniteParameters.front()].name);
        return eventtext::reasonNormOverflow();
    }

    void zeroGradients()
    {
        torch::NoGradGuard noGrad;
        for (auto& p : model->parameters) {
            auto& grad = p.tensor.mutable_grad();
            if (grad.defined())
                grad.zero_();
        }
    }

    std::map<std::string, double> userScalars(const std::map<std::string, double>& given)
    {
        std::vector<std::string> notLogged;
        std::map<std::string, double> row = guardrunlog::userScalarRow(given, scalarNames, step, notLogged);
        for (const auto& name : notLogged)
            warnOnce("scalar:" + name, step,
                     "scalar " + name + " was not given at the first step and is not logged "
                     "(run.h5's columns are fixed at the first step)");
        return row;
    }

    void appendInputs(const double* slots)
    {
        if (inputNames.empty())
            return;
        std::string whyNot;
        if (auto row = guardrunlog::inputsRow(inputNames, inputSlots, slots, step, whyNot))
            check(writer->appendRow(rf::kInputs, step, *row));
        else
            warnOnce("inputs", step, whyNot);
    }

    void appendActivations(const double* slots)
    {
        if (observed.empty() || activationColumns.empty())
            return;
        std::string notRun;
        check(writer->appendRow(rf::kActivations, step,
                                guardrunlog::activationsRow(activationColumns, observed, slots, step, notRun)));
        if (!notRun.empty())
            warnOnce("activations", step, notRun);
    }

    void endOfStep()
    {
        inStep = false;
        lastStep = step;
        inputs = targets = torch::Tensor();
        inputSlots.clear();
        observed.clear();
        bufferSnapshot.clear();
    }

    bool activationsDue() const
    {
        if (!inStep || options.activationsEvery <= 0)
            return false;
        return !writer || step % options.activationsEvery == 0;
    }
};

Guard::Guard(const std::string& runDirectory, torch::nn::Module& model, GuardOptions options)
    : m_state(std::make_unique<State>())
{
    m_state->open(runDirectory, std::move(options), std::make_unique<CppModelAccess>(model));
}

Guard::Guard(const std::string& runDirectory, const torch::jit::Module& model, GuardOptions options)
    : m_state(std::make_unique<State>())
{
    m_state->open(runDirectory, std::move(options), std::make_unique<ScriptModelAccess>(model));
}

Guard::~Guard()
{
    try {
        close();
    } catch (const std::exception& e) {
        std::cerr << "nanscope::Guard: " << e.what() << "\n";
    }
}

void Guard::beginStep(int64_t step, const at::Tensor& inputs)
{
    beginStep(step, inputs, torch::Tensor());
}

void Guard::beginStep(int64_t step, const at::Tensor& inputs, const at::Tensor& targets)
{
    State& s = *m_state;
    if (s.closed)
        throw GuardError("nanscope::Guard::beginStep after close()");
    if (s.inStep)
        throw GuardError("nanscope::Guard::beginStep(" + std::to_string(step) + ") before endStep of step " +
                         std::to_string(s.step));
    if (s.lastStep != std::numeric_limits<int64_t>::min() && step <= s.lastStep)
        throw GuardError("nanscope::Guard::beginStep: steps must increase: got " + std::to_string(step) + " after " +
                         std::to_string(s.lastStep) + " (pass a global step that keeps counting across epochs)");
    try {
        s.step = step;
        s.inStep = true;
        s.checkpointSaved = s.batchSaved = false;
        s.inputs = inputs;
        s.targets = targets;
        if (inputs.defined())
            s.inputSlots.push_back({"x", rangeSlots(inputs)});
        if (targets.defined() && s.options.logTargets)
            s.inputSlots.push_back({"y", rangeSlots(targets)});
        s.snapshotBuffers();
        if (s.options.checkpointEvery > 0 && step % s.options.checkpointEvery == 0) {
            s.saveCheckpoint(/*preForwardBuffers=*/false); // nothing of step N has run yet
            if (s.options.saveBatchWithCheckpoint && inputs.defined())
                s.saveBatch();
            s.flushEvents();
        }
    } catch (const c10::Error& e) {
        throw GuardError("nanscope::Guard::beginStep(" + std::to_string(step) + "): " + e.what_without_backtrace());
    }
}

bool Guard::activationsDue() const
{
    return m_state->activationsDue();
}

const at::Tensor& Guard::observe(const std::string& name, const at::Tensor& output, const std::string& kind)
{
    State& s = *m_state;
    if (!s.activationsDue() || !output.defined() || !(output.is_floating_point() || output.is_complex()))
        return output;
    if (s.writer && std::find(s.activationColumns.begin(), s.activationColumns.end(), name) == s.activationColumns.end()) {
        s.warnOnce("observe:" + name, s.step, "activation " + name + " was not observed at the first step and is not "
                                                                      "logged (run.h5's columns are fixed at the first step)");
        return output;
    }
    const torch::Tensor values = output.is_complex() ? torch::view_as_real(output.detach()) : output.detach();
    s.observed.push_back({name, rangeSlots(values)});
    if (!s.writer && !s.observedKinds.count(name))
        s.observedKinds[name] = kind.empty() ? s.model->kindOf(name) : kind;
    return output;
}

at::Tensor Guard::forward(torch::nn::SequentialImpl& sequential, const at::Tensor& input, const std::string& prefix)
{
    const auto children = sequential.named_children();
    torch::Tensor x = input;
    size_t index = 0;
    for (auto it = sequential.begin(); it != sequential.end(); ++it, ++index) {
        x = it->forward(x);
        observe(prefix + children[index].key(), x, readableKind(children[index].value()->name()));
    }
    return x;
}

bool Guard::endStep(const at::Tensor& loss, torch::optim::Optimizer& optimizer, const std::map<std::string, double>& scalars)
{
    State& s = *m_state;
    if (!s.inStep)
        throw GuardError("nanscope::Guard::endStep without beginStep");
    if (!loss.defined())
        throw GuardError("nanscope::Guard::endStep(step " + std::to_string(s.step) + "): the loss is an undefined tensor");
    if (loss.numel() != 1)
        throw GuardError("nanscope::Guard::endStep(step " + std::to_string(s.step) +
                         "): the loss must be a single value, not a tensor of shape " + shapeText(loss) +
                         " (reduce it, with mean() or sum(), before backward)");
    try {
        return s.finishStep(loss, optimizer, scalars);
    } catch (const c10::Error& e) {
        throw GuardError("nanscope::Guard::endStep(step " + std::to_string(s.step) + "): " + e.what_without_backtrace());
    }
}

void Guard::note(const std::string& message)
{
    State& s = *m_state;
    const int64_t step = s.inStep ? s.step : (s.lastStep == std::numeric_limits<int64_t>::min() ? 0 : s.lastStep);
    s.event(step, rf::event::kNote, message);
    s.flushEvents();
}

const GuardStepResult& Guard::lastStep() const
{
    return m_state->result;
}

double Guard::learningRateScale() const
{
    return m_state->lrScale;
}

const std::string& Guard::runDirectory() const
{
    return m_state->directory;
}

void Guard::flush()
{
    State& s = *m_state;
    s.flushEvents();
    if (s.writer)
        s.check(s.writer->drain());
}

void Guard::close()
{
    State& s = *m_state;
    if (s.closed)
        return;
    s.closed = true;
    if (!s.writer && !s.pendingEvents.empty())
        s.createFile({}); // the events of a run that never finished a step
    s.flushEvents();
    if (s.writer)
        s.check(s.writer->close());
    s.writer.reset();
}

} // namespace nanscope

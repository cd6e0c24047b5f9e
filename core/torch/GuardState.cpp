#include "core/torch/GuardState.h"

#include "core/record/EventText.h"
#include "core/run/RunFormat.h"
#include "core/torch/GuardReadback.h"
#include "core/torch/GuardRunLog.h"

#include <torch/script.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>

namespace fs = std::filesystem;

namespace nanscope {

namespace rf = runformat;
using guardfiles::saveBatchFile;
using guardfiles::saveCheckpointFiles;

using namespace guardmodel;
using namespace guardreadback;
using namespace optimizersnapshot;

std::string Guard::State::logPath() const
{
    return (fs::path(directory) / rf::kLogFileName).string();
}

std::string Guard::State::relative(const std::string& path) const
{
    return fs::path(path).lexically_relative(directory).string();
}

void Guard::State::open(const std::string& runDirectory, GuardOptions guardOptions, std::unique_ptr<ModelAccess> access)
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

void Guard::State::requireOneDevice() const
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

std::string Guard::State::stepFile(const char* folder, int64_t s) const
{
    return (fs::path(directory) / folder / (rf::stepFileStem(s) + ".pt")).string();
}

void Guard::State::event(int64_t atStep, const std::string& kind, const std::string& message)
{
    pendingEvents.push_back({atStep, kind, message});
}

void Guard::State::flushEvents()
{
    if (!writer)
        return;
    for (const auto& e : pendingEvents)
        check(writer->appendEvent(e.step, e.kind, e.message));
    pendingEvents.clear();
}

void Guard::State::check(const Status& status) const
{
    if (!status)
        throw GuardError("nanscope::Guard: " + status.error());
}

void Guard::State::warnOnce(const std::string& key, int64_t atStep, const std::string& message)
{
    if (!warned.insert(key).second)
        return;
    event(atStep, rf::event::kNote, message);
}

void Guard::State::saveCheckpoint(bool preForwardBuffers)
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

void Guard::State::saveBatch()
{
    const std::string path = stepFile(rf::kBatchDir, step);
    saveBatchFile(path, inputs, targets, step, options.lossName);
    event(step, rf::event::kBatchSaved, relative(path));
    batchSaved = true;
}

void Guard::State::snapshotBuffers()
{
    bufferSnapshot.clear();
    torch::NoGradGuard noGrad;
    for (const auto& layer : model->norms)
        for (const auto& b : layer.buffers)
            bufferSnapshot.push_back(b.tensor.detach().clone());
}

void Guard::State::restoreBuffers()
{
    torch::NoGradGuard noGrad;
    size_t i = 0;
    for (auto& layer : model->norms)
        for (auto& b : layer.buffers)
            b.tensor.copy_(bufferSnapshot[i++]);
}

void Guard::State::takeSnapshot(torch::optim::Optimizer& optimizer)
{
    // An optimizer we know with a state type we do not keeps the last snapshot.
    if (auto state = takeGoodState(*model, optimizer, step))
        good = std::move(state);
}

void Guard::State::rollback(torch::optim::Optimizer& optimizer, int streak)
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

void Guard::State::checkOptimizer(torch::optim::Optimizer& optimizer)
{
    if (optimizerChecked)
        return;
    try {
        optimizer.param_groups().at(0).options().get_lr();
        logLearningRate = true;
    } catch (const std::exception&) {
        logLearningRate = false; // an optimizer whose options do not say their learning rate
    }
    logOptimizerStep = updateCount(optimizer).has_value();
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

void Guard::State::createFile(const std::map<std::string, double>& scalars)
{
    guardrunlog::FirstStepColumns columns;
    columns.logLearningRate = logLearningRate;
    columns.logOptimizerStep = logOptimizerStep;
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

bool Guard::State::finishStep(const torch::Tensor& loss, torch::optim::Optimizer& optimizer,
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
    if (logOptimizerStep) // read before the step's own update, as the Python recorder reads it
        scalarRow[rf::scalar::kOptimizerStep] = double(updateCount(optimizer).value_or(0));
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

std::string Guard::State::badStepReason(double lossValue, const std::vector<size_t>& nonfiniteParameters) const
{
    if (!std::isfinite(lossValue))
        return eventtext::reasonNonfiniteLoss(lossValue);
    if (!nonfiniteParameters.empty())
        return eventtext::reasonNonfiniteGradients(nonfiniteParameters.size(),
                                                   model->parameters[nonfiniteParameters.front()].name);
    return eventtext::reasonNormOverflow();
}

void Guard::State::zeroGradients()
{
    torch::NoGradGuard noGrad;
    for (auto& p : model->parameters) {
        auto& grad = p.tensor.mutable_grad();
        if (grad.defined())
            grad.zero_();
    }
}

std::map<std::string, double> Guard::State::userScalars(const std::map<std::string, double>& given)
{
    std::vector<std::string> notLogged;
    std::map<std::string, double> row = guardrunlog::userScalarRow(given, scalarNames, step, notLogged);
    for (const auto& name : notLogged)
        warnOnce("scalar:" + name, step,
                 "scalar " + name + " was not given at the first step and is not logged "
                 "(run.h5's columns are fixed at the first step)");
    return row;
}

void Guard::State::appendInputs(const double* slots)
{
    if (inputNames.empty())
        return;
    std::string whyNot;
    if (auto row = guardrunlog::inputsRow(inputNames, inputSlots, slots, step, whyNot))
        check(writer->appendRow(rf::kInputs, step, *row));
    else
        warnOnce("inputs", step, whyNot);
}

void Guard::State::appendActivations(const double* slots)
{
    if (observed.empty() || activationColumns.empty())
        return;
    std::string notRun;
    check(writer->appendRow(rf::kActivations, step,
                            guardrunlog::activationsRow(activationColumns, observed, slots, step, notRun)));
    if (!notRun.empty())
        warnOnce("activations", step, notRun);
}

void Guard::State::endOfStep()
{
    inStep = false;
    lastStep = step;
    inputs = targets = torch::Tensor();
    inputSlots.clear();
    observed.clear();
    bufferSnapshot.clear();
}

bool Guard::State::activationsDue() const
{
    if (!inStep || options.activationsEvery <= 0)
        return false;
    return !writer || step % options.activationsEvery == 0;
}

} // namespace nanscope

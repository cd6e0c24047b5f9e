#include "core/torch/Guard.h"

#include "core/run/RunFormat.h"
#include "core/torch/GuardModel.h"
#include "core/torch/GuardReadback.h"
#include "core/torch/GuardState.h"

#include <torch/script.h>
#include <torch/torch.h>

#include <algorithm>
#include <iostream>
#include <limits>

namespace nanscope {

namespace rf = runformat;
using guardmodel::CppModelAccess;
using guardmodel::ScriptModelAccess;
using guardmodel::readableKind;
using guardmodel::shapeText;
using guardreadback::rangeSlots;

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

#pragma once

// Internal to core/torch (includes LibTorch): what a Guard holds across its calls, and the parts of
// a step it carries out (GuardState.cpp). Guard.cpp calls these in the step's order.

#include "core/record/CapturePolicy.h"
#include "core/record/DefencePolicy.h"
#include "core/run/RunWriterThread.h"
#include "core/scan/OnlineSpikeDetector.h"
#include "core/torch/Guard.h"
#include "core/torch/GuardFiles.h"
#include "core/torch/GuardModel.h"
#include "core/torch/OptimizerSnapshot.h"

#include <torch/torch.h>

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace nanscope {

struct Guard::State
{
    std::string directory;
    GuardOptions options;
    std::unique_ptr<guardmodel::ModelAccess> model;
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
    bool logOptimizerStep = false;
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

    std::optional<optimizersnapshot::GoodState> good; // what a rollback returns to

    void open(const std::string& runDirectory, GuardOptions guardOptions, std::unique_ptr<guardmodel::ModelAccess> access);

    // The Guard reads, snapshots and restores the model on one device; a model split over several
    // (pipeline stages by hand, a layer left on the CPU) is refused before anything of it is touched.
    void requireOneDevice() const;
    std::string logPath() const;
    std::string stepFile(const char* folder, int64_t s) const;
    std::string relative(const std::string& path) const;
    void event(int64_t atStep, const std::string& kind, const std::string& message);
    void flushEvents();
    void check(const Status& status) const;
    void warnOnce(const std::string& key, int64_t atStep, const std::string& message);

    // ---------------------------------------------------------------- checkpoints and batches

    // Checkpoint N: the weights step N's forward used, and with `preForwardBuffers` the BatchNorm
    // buffers as they were before that forward changed them (the snapshot taken at beginStep).
    void saveCheckpoint(bool preForwardBuffers);
    void saveBatch();

    // ---------------------------------------------------------------- buffers

    void snapshotBuffers();
    void restoreBuffers();

    // ---------------------------------------------------------------- rollback

    void takeSnapshot(torch::optim::Optimizer& optimizer);
    void rollback(torch::optim::Optimizer& optimizer, int streak);
    void checkOptimizer(torch::optim::Optimizer& optimizer);

    // ---------------------------------------------------------------- run.h5

    void createFile(const std::map<std::string, double>& scalars);

    // ---------------------------------------------------------------- the step's end

    bool finishStep(const torch::Tensor& loss, torch::optim::Optimizer& optimizer,
                    const std::map<std::string, double>& scalars);

    std::string badStepReason(double lossValue, const std::vector<size_t>& nonfiniteParameters) const;
    void zeroGradients();
    std::map<std::string, double> userScalars(const std::map<std::string, double>& given);
    void appendInputs(const double* slots);
    void appendActivations(const double* slots);
    void endOfStep();
    bool activationsDue() const;
};

} // namespace nanscope

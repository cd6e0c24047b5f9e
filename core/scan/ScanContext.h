#pragma once

// What the scan rules share: the run's inputs, the settings, the report they add incidents to,
// and the few facts one rule finds that later rules need. The orchestrator (IncidentDetector.cpp)
// runs the rules in an order that puts each fact's writer before its readers.

#include "core/Progress.h"
#include "core/scan/Diagnosis.h"
#include "core/scan/Incident.h"
#include "core/scan/LayerBlame.h"
#include "core/scan/ScanConfig.h"
#include "core/scan/ScanInputs.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nanscope::scan {

// The vanishing rule's stream of /layers/grad_norm, begun before the rules run (VanishingRule.cpp).
class VanishingHeadStart;

struct ScanContext
{
    // Takes `config` with blockRows rounded up to whole 128-row chunks and smoothingRows >= 0.
    // The report starts with the run's name, directory and step range.
    ScanContext(const ScanInputs& inputs, const ScanConfig& config, const ProgressCallback& progress = {});

    const ScanInputs& inputs;
    const RunScalars& scalars;
    const ScanConfig config;
    const ForwardOrder order;
    ScanReport report; // rules append their incidents
    ProgressCallback progress;
    bool cancelled = false;

    // Reports progress; false (and `cancelled` set) when the user asked to stop.
    bool progressed(double fraction, const std::string& what);
    std::string batchNote(int64_t step) const { return savedBatchNote(inputs.info(), step); }

    // ---- facts shared between rules ---------------------------------------------------------

    // Written by the bad-input rule (first): the BadInput incidents. Read by the BatchNorm rule
    // and the blow-up rule, which name a bad batch as the cause.
    std::vector<Incident> badInputs;
    // Written by the blow-up rule: the scalar rows [first, last] of each non-finite burst the
    // training recovered from (reported as NonfiniteLoss). Read by the blow-up rule itself (a
    // blow-up's baseline starts after the last burst), the spike rule (a burst is not a spike)
    // and the skipped-steps rule (steps skipped in a burst are explained).
    std::vector<std::pair<size_t, size_t>> burstRows;
    // Written by the blow-up rule: where the blow-up began, when there is one. Read by the
    // spike rule and the vanishing rule, which must not look inside it, and the skipped-steps
    // rule (steps skipped after it are explained).
    std::optional<size_t> blowupOnsetRow;
    std::optional<int64_t> blowupOnsetStep;
    // Written by the blow-up rule: where the gradients themselves began to blow up, which is later
    // than the onset when a precursor inside the model set it (a router's logits climbing for
    // hundreds of steps while training goes on). Read by the vanishing rule: the layers beside an
    // exploding one look vanished only from there on.
    std::optional<int64_t> explosionStep;
    // Written by the loss-scale rule: the steps [first, last] of each collapse. Read by the
    // skipped-steps rule (a collapse skips steps by design).
    std::vector<std::pair<int64_t, int64_t>> collapseWindows;

    // Begun by startVanishingStream before the first rule, taken by the vanishing rule; null when
    // the scan runs rule by rule (bench_scan's costs) or the reads may not overlap.
    std::shared_ptr<VanishingHeadStart> vanishingHeadStart;

    // A BadInput incident overlapping [step - before, step + after], or null.
    const Incident* badInputNear(int64_t step, int64_t before, int64_t after) const;
    // Within two rows of a recovered non-finite burst.
    bool nearRecoveredBurst(size_t row) const;
};

} // namespace nanscope::scan

#include "core/importers/SkippedStepEvents.h"

#include "core/importers/ScalarNames.h"
#include "core/run/RunFormat.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace nanscope {

void addSkippedStepEvents(ScalarLog& log)
{
    const std::vector<ScalarPoint>* loss = nullptr;
    const std::vector<ScalarPoint>* gradNorm = nullptr;
    for (const auto& [name, points] : log.series) {
        const std::string canonical = canonicalScalarName(name);
        if (canonical == "loss" && !loss)
            loss = &points;
        else if (canonical == "grad_norm" && !gradNorm)
            gradNorm = &points;
    }
    // Most logs have no non-finite gradient norm: nothing to look up then.
    if (!gradNorm || std::all_of(gradNorm->begin(), gradNorm->end(), [](const ScalarPoint& p) {
            return std::isfinite(p.value);
        }))
        return;
    std::map<int64_t, double> lossAt;
    if (loss)
        for (const auto& p : *loss)
            lossAt[p.step] = p.value;
    for (const auto& p : *gradNorm) {
        if (std::isfinite(p.value))
            continue;
        auto it = lossAt.find(p.step);
        if (it != lossAt.end() && std::isfinite(it->second))
            log.events.push_back({p.step, runformat::event::kSkippedStep,
                                  "the gradient norm is " + std::string(std::isnan(p.value) ? "NaN" : "Inf") +
                                      " while the loss is finite: a loss scaler skips such a step (fp16 overflow)"});
    }
}

} // namespace nanscope

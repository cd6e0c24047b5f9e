#include "core/record/DefencePolicy.h"

namespace nanscope {

DefencePolicy::Plan DefencePolicy::planStep(bool finite, bool rollbackUsable)
{
    Plan plan;
    if (finite) {
        m_badStreak = 0;
        return plan;
    }
    ++m_badStreak;
    plan.skip = m_options.skipNonfinite;
    plan.tryRollback = rollbackUsable && m_options.rollbackAfter > 0 && m_badStreak >= m_options.rollbackAfter;
    return plan;
}

DefencePolicy::Outcome DefencePolicy::settle(const Plan& plan, bool rolledBack, bool haveBufferSnapshot)
{
    Outcome outcome;
    outcome.apply = !plan.skip;
    if (rolledBack) {
        outcome.apply = false;
        m_badStreak = 0;
    }
    // A rollback put back the buffers of its snapshot already.
    outcome.restoreBuffers = !outcome.apply && !rolledBack && m_options.restoreBuffersOnSkip && haveBufferSnapshot;
    outcome.zeroGradients = !outcome.apply;
    return outcome;
}

bool DefencePolicy::snapshotDue(bool finite, bool rollbackUsable, std::optional<int64_t> lastSnapshotStep,
                                int64_t step) const
{
    return finite && rollbackUsable && (!lastSnapshotStep || step - *lastSnapshotStep >= m_options.snapshotEvery);
}

} // namespace nanscope

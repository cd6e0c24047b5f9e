#include "core/open/RunScan.h"

#include "core/run/RankSet.h"
#include "core/run/RunSource.h"
#include "core/scan/RunRules.h"
#include "core/open/OptimizerScanFacts.h"

namespace nanscope {

namespace {
scan::ScanFacts factsBeside(const RunSource& run, std::vector<std::string>& notes)
{
    return optimizerScanFacts(run.info().directory, notes);
}
} // namespace

Result<WholeRunScan> scanRun(const RunSource& reader, const ScanConfig& config, const ProgressCallback& progress,
                             RankScope scope)
{
    WholeRunScan whole;
    if (const RankSet* ranks = reader.rankSet(); ranks && scope == RankScope::EveryRank) {
        auto scanned = scanRanks(*ranks, config, progress, factsBeside);
        if (!scanned)
            return Error{scanned.error()};
        whole.report = scanned->report;
        whole.ranks = std::move(*scanned);
        return whole;
    }
    std::vector<std::string> factNotes;
    const scan::ScanFacts facts = factsBeside(reader, factNotes);
    auto report = scan::applyRules(reader, config, progress, facts);
    if (!report)
        return Error{report.error()};
    whole.report = std::move(*report);
    whole.report.notes.insert(whole.report.notes.end(), factNotes.begin(), factNotes.end());
    return whole;
}

} // namespace nanscope

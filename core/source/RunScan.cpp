#include "core/source/RunScan.h"

#include "core/run/RankSet.h"
#include "core/scan/IncidentDetector.h"
#include "core/source/OptimizerScanFacts.h"

namespace nanscope {

Result<ScanReport> scanRunWithFacts(const RunSource& reader, const ScanConfig& config, const ProgressCallback& progress)
{
    std::vector<std::string> factNotes;
    const scan::ScanFacts facts = optimizerScanFacts(reader.info().directory, factNotes);
    auto report = scanRun(reader, config, progress, facts);
    if (report)
        report->notes.insert(report->notes.end(), factNotes.begin(), factNotes.end());
    return report;
}

Result<WholeRunScan> scanWholeRun(const RunSource& reader, const ScanConfig& config, const ProgressCallback& progress)
{
    WholeRunScan whole;
    if (const RankSet* ranks = reader.rankSet()) {
        auto scanned = scanRanks(*ranks, config, progress);
        if (!scanned)
            return Error{scanned.error()};
        whole.report = scanned->report;
        whole.ranks = std::move(*scanned);
        return whole;
    }
    auto report = scanRunWithFacts(reader, config, progress);
    if (!report)
        return Error{report.error()};
    whole.report = std::move(*report);
    return whole;
}

} // namespace nanscope

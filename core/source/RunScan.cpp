#include "core/source/RunScan.h"

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

} // namespace nanscope

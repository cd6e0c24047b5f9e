#include "core/open/CompareRunSources.h"

#include "core/run/Hdf5Handle.h"
#include "core/run/RunSource.h"
#include "core/open/RunScan.h"

#include <future>

namespace nanscope {

Result<ComparedRun> loadComparedRun(const RunSource& source, const std::string& label, const ScanConfig& scanConfig)
{
    ComparedRun run;
    run.label = label;
    run.format = source.info().source.format;
    auto series = readComparableSeries(source);
    if (!series)
        return Error{label + ": " + series.error()};
    run.series = std::move(*series);
    // As `nanscope scan` scans it: with its optimizer states, every rank of a multi-rank run.
    auto scan = scanRun(source, scanConfig);
    if (!scan)
        return Error{label + ": " + scan.error()};
    run.scan = std::move(scan->report);
    return run;
}

Result<RunComparison> compareRunSources(const std::vector<const RunSource*>& sources,
                                        const std::vector<std::string>& labels, const ScanConfig& scanConfig,
                                        const DivergenceConfig& config)
{
    if (sources.size() != labels.size())
        return Error{"compareRunSources: one label per run"};
    std::vector<Result<ComparedRun>> loaded;
    loaded.reserve(sources.size());
    if (hdf5::isThreadSafe() && sources.size() > 1) {
        // Each thread reads its own source; no source is shared between threads.
        std::vector<std::future<Result<ComparedRun>>> scans;
        for (size_t i = 0; i < sources.size(); ++i)
            scans.push_back(std::async(std::launch::async, [&, i] {
                // A thread-safe HDF5 keeps its error-printing setting per thread: errors are
                // values here (Hdf5Handle's lastErrorMessage), never prints on stderr.
                hdf5::silenceErrorPrinting();
                return loadComparedRun(*sources[i], labels[i], scanConfig);
            }));
        for (auto& scan : scans)
            loaded.push_back(scan.get());
    } else {
        for (size_t i = 0; i < sources.size(); ++i)
            loaded.push_back(loadComparedRun(*sources[i], labels[i], scanConfig));
    }
    std::vector<ComparedRun> runs;
    for (auto& run : loaded) {
        if (!run)
            return Error{run.error()};
        runs.push_back(std::move(*run));
    }
    return compareRuns(std::move(runs), config);
}

} // namespace nanscope

// libFuzzer harness: the trackers' files (core/importers/TrackerFolderReader): the input read as a W&B
// wandb-history.jsonl, as an MLflow metric file of a run folder (meta.yaml + metrics/loss), and as
// MLflow 3's SQLite store (core/importers/MlflowDatabaseReader; a real one is in tests/data/logs).
// Seeds: lines in the shapes of the real files cited in tests/source/TrackerFolderReaderTest.cpp.

#include "FuzzSupport.h"
#include "core/importers/MlflowDatabaseReader.h"
#include "core/importers/TrackerFolderReader.h"

#include <filesystem>
#include <fstream>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    using namespace nanscope;
    static const std::string run = [] {
        const std::string folder = fuzz::scratchDirectory() + "/mlflow-run";
        std::filesystem::create_directories(folder + "/metrics");
        std::ofstream(folder + "/meta.yaml") << "start_time: 1\n";
        return folder;
    }();
    const std::string path = fuzz::writeInput("wandb-history.jsonl", data, size);
    readWandbHistory(path);
    std::filesystem::copy_file(path, run + "/metrics/loss", std::filesystem::copy_options::overwrite_existing);
    mlflowRunStartTime(run);
    readMlflowRun(run);
    readMlflowDatabase(fuzz::writeInput("mlflow.db", data, size));
    return 0;
}

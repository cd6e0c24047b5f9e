#include "core/importers/LogReaderRegistry.h"

#include "core/importers/DelimitedTableReader.h"
#include "core/importers/JsonColumnsLogReader.h"
#include "core/importers/JsonLinesLogReader.h"
#include "core/importers/MetricsCsvReader.h"
#include "core/importers/MlflowDatabaseReader.h"
#include "core/importers/ScalarNames.h"
#include "core/importers/StepTextLogReader.h"
#include "core/importers/TensorBoardReader.h"
#include "core/importers/TextRecordLogReader.h"
#include "core/importers/TrackerFolderReader.h"
#include "core/importers/TrainerStateReader.h"
#include "core/importers/TrainingTextLogReader.h"
#include "core/importers/WandbRecordReader.h"

#include <algorithm>
#include <array>
#include <map>
#include <cctype>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace nanscope {

namespace {

SniffVerdict byName(const FilePrefix& file, const char* name, const char* what)
{
    if (file.name == name)
        return {95, what};
    return {0, std::string("not named ") + name};
}

SniffVerdict sniffTrainerState(const FilePrefix& file)
{
    if (file.name == "trainer_state.json")
        return {95, "Hugging Face Trainer state"};
    // A copy under another name: the Trainer writes "log_history" near its top.
    const size_t brace = file.head.find_first_not_of(" \t\r\n");
    if (brace != std::string::npos && file.head[brace] == '{' &&
        file.head.find("\"log_history\"") != std::string::npos && file.head.find("\"global_step\"") != std::string::npos)
        return {90, "Hugging Face Trainer state (log_history)"};
    return {0, "no log_history"};
}

SniffVerdict sniffMetricsCsv(const FilePrefix& file)
{
    return byName(file, "metrics.csv", "PyTorch Lightning CSVLogger");
}

SniffVerdict sniffTensorBoard(const FilePrefix& file)
{
    if (file.name.find("tfevents") != std::string::npos)
        return {95, "TensorBoard event file"};
    return {0, "not an event file (no \"tfevents\" in its name)"};
}

SniffVerdict sniffWandbHistory(const FilePrefix& file)
{
    return byName(file, "wandb-history.jsonl", "W&B run history (SDK before 0.10)");
}

SniffVerdict sniffTrainingTextLog(const FilePrefix& file)
{
    if (looksLikeTrainingTextLog(file.path))
        return {90, "DeepSpeed or Megatron-LM training lines"};
    return {0, "no DeepSpeed or Megatron-LM training lines"};
}

// nanoGPT-style step lines: above the general text reader, since this one also knows what an
// evaluation line's "train loss" is and fairseq's update counts.
SniffVerdict sniffStepLines(const FilePrefix& file)
{
    if (looksLikeStepTextLog(file.path))
        return {70, "step lines (\"step N | loss X\", \"iter N: loss X\")"};
    return {0, "no step lines"};
}

const std::vector<LogReader> kReaders = {
    {"wandb-records", "W&B run file (.wandb)", sniffWandbRecords, readWandbRecords},
    {"trainer-state", "Hugging Face Trainer state", sniffTrainerState, readTrainerState},
    {"mlflow-database", kMlflowDatabaseFormat, sniffMlflowDatabase, readMlflowDatabase},
    {"tensorboard", "TensorBoard event file", sniffTensorBoard, readTensorBoardEvents},
    {"lightning-csv", "PyTorch Lightning CSVLogger", sniffMetricsCsv, readMetricsCsv},
    {"wandb-history", "W&B history (wandb-history.jsonl)", sniffWandbHistory, readWandbHistory},
    {"deepspeed-megatron", "DeepSpeed / Megatron-LM log", sniffTrainingTextLog, readTrainingTextLog},
    {"json-lines", "JSON lines", sniffJsonLinesLog, readJsonLinesLog},
    {"json-columns", "JSON history of columns", sniffJsonColumnsLog, readJsonColumnsLog},
    {"table", "delimited table (CSV, TSV)", sniffDelimitedTable, readDelimitedTable},
    {"step-lines", "training log (step lines)", sniffStepLines, readStepTextLog},
    {"text-records", "text log (records of named values)", sniffTextRecordLog, readTextRecordLog},
};

} // namespace

const std::vector<LogReader>& logReaders()
{
    return kReaders;
}

SniffedFile sniffLogPrefix(const FilePrefix& file)
{
    SniffedFile sniffed;
    sniffed.path = file.path;
    std::map<std::string_view, std::string> reasons;
    for (const LogReader& reader : kReaders) {
        SniffVerdict verdict = reader.sniff(file);
        if (verdict.confidence > sniffed.verdict.confidence) {
            sniffed.reader = &reader;
            sniffed.verdict = std::move(verdict);
        } else if (verdict.confidence == 0) {
            reasons[reader.id] = std::move(verdict.what);
        }
    }
    if (sniffed.reader)
        return sniffed;
    // One reason, from the reader whose syntax the file is closest to: the named formats' reasons
    // say only what the file is not.
    const size_t first = file.head.find_first_not_of(" \t\r\n");
    const char opening = first == std::string::npos ? '\0' : file.head[first];
    std::string why;
    if (file.extension == ".wandb")
        why = reasons["wandb-records"] + ": damaged, or not a W&B run file";
    else if (file.head.empty())
        why = "empty";
    else if (opening == '{' || opening == '[')
        why = reasons["json-lines"] + (reasons["json-columns"].rfind("a JSON object with no", 0) == 0
                                           ? "; " + reasons["json-columns"]
                                           : std::string());
    else if (reasons["table"].rfind("not a table", 0) != 0 && reasons["table"] != "binary data")
        why = reasons["table"];
    else
        why = reasons["text-records"];
    sniffed.refusal = file.path + ": " + why;
    return sniffed;
}

SniffedFile sniffLogFile(const std::string& path)
{
    FilePrefix file;
    file.path = path;
    const fs::path p(path);
    file.name = p.filename().string();
    file.extension = lowered(p.extension().string());
    std::error_code ec;
    file.size = fs::file_size(p, ec);
    std::ifstream in(path, std::ios::binary);
    if (ec || !in) {
        SniffedFile refused;
        refused.path = path;
        refused.refusal = path + ": cannot be read";
        return refused;
    }
    file.head.resize(size_t(std::min<uint64_t>(file.size, kSniffBytes)));
    in.read(file.head.data(), std::streamsize(file.head.size()));
    file.head.resize(size_t(in.gcount()));
    return sniffLogPrefix(file);
}

std::string notALogByName(const std::string& path)
{
    const fs::path p(path);
    const std::string name = p.filename().string();
    const std::string extension = lowered(p.extension().string());
    static const std::array<const char*, 14> sourceCode = {".py", ".ipynb", ".cpp", ".cc", ".c", ".h", ".hpp",
                                                           ".js", ".ts", ".sh", ".rs", ".go", ".java", ".lua"};
    static const std::array<const char*, 28> data = {
        ".png", ".jpg", ".jpeg", ".gif", ".svg", ".pdf", ".pt", ".pth", ".bin", ".safetensors",
        ".ckpt", ".npy", ".npz", ".pkl", ".pickle", ".h5", ".hdf5", ".zip", ".gz", ".tar",
        ".so", ".onnx", ".parquet", ".arrow", ".wav", ".mp4", ".model", ".index"};
    static const std::array<const char*, 6> settings = {".yaml", ".yml", ".toml", ".ini", ".cfg", ".md"};
    for (const char* e : sourceCode)
        if (extension == e)
            return "source code (" + extension + ")";
    for (const char* e : data)
        if (extension == e)
            return "a " + extension + " file, data rather than a log";
    for (const char* e : settings)
        if (extension == e)
            return extension == ".md" ? "documentation (.md)" : "settings (" + extension + "), not a log";
    // The W&B SDK's own files beside a run: its debug logs, the environment it saw.
    if (name == "debug.log" || name == "debug-internal.log" || name == "debug-core.log" ||
        name == "requirements.txt" || name == "wandb-metadata.json" || name == "conda-environment.yaml" ||
        name == "diff.patch" || name == "LICENSE" || name == "README" || name == ".DS_Store")
        return "not a training log (" + name + ")";
    return {};
}

} // namespace nanscope

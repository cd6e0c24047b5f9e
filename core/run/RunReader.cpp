#include "core/run/RunReader.h"

#include "core/HugePages.h"
#include "core/run/Hdf5Handle.h"
#include "core/run/DirectChunkRead.h"
#include "core/run/Hdf5Reads.h"
#include "core/run/RunFileProbe.h"
#include "core/run/RunFolderFiles.h"
#include "core/run/RunFormat.h"
#include "core/run/StringHeapCheck.h"

#include <algorithm>
#include <chrono>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <thread>

namespace fs = std::filesystem;

namespace nanscope {

namespace rf = runformat;
using namespace hdf5reads;

struct RunReader::Handles
{
    hdf5::Handle file;
    // Open datasets by "table/dataset": kept open so that refresh() and repeated reads are cheap.
    std::map<std::string, hdf5::Handle> datasets;
};

namespace {

// Enough rereads for a reader racing a live writer's flush; few enough that a damaged file
// fails in well under a second.
constexpr unsigned kSwmrMetadataReadAttempts = 4;

// HDF5's own rereads follow each other within microseconds; a writer slowed down (a busy machine,
// a sanitizer build) can take longer than that to finish a flush. An open or read of a run still
// being written that fails is tried again this many times in all, after pauses that grow from
// kLivePause (50 + 100 + 200 ms): long enough for a flush, short enough that a file whose writer
// was killed mid-flush still fails in well under a second.
constexpr int kLiveAttempts = 4;
constexpr std::chrono::milliseconds kLivePause{50};

// The pause after failed attempt number `attempt` (1, 2, ...): 50, 100, 200 ms.
void pauseAfterFailedAttempt(int attempt)
{
    std::this_thread::sleep_for(kLivePause * (1 << (attempt - 1)));
}

// Runs `read` (an HDF5 call returning a negative status on failure) and, on a live file, again
// after a pause while it fails.
template <class Read>
auto retriedWhileLive(bool live, Read read)
{
    auto status = read();
    for (int attempt = 1; status < 0 && live && attempt < kLiveAttempts; ++attempt) {
        pauseAfterFailedAttempt(attempt);
        status = read();
    }
    return status;
}

// Gives a block buffer room for `values` floats before it is first written. A block of a wide
// table is tens of MiB, first written here; in 4 KiB pages that is thousands of page faults each
// time a buffer grows (a tenth of bench_scan's scan on a virtual machine), in the 2 MiB pages asked
// for here a few dozen.
void reserveBlock(std::vector<float>& values, size_t count)
{
    if (values.capacity() >= count)
        return;
    std::vector<float>().swap(values);
    values.reserve(count);
    adviseHugePages(values.data(), count * sizeof(float));
}

std::string describeRank(int rank)
{
    return rank == 1 ? "1-D [n]" : "2-D [n, L]";
}

} // namespace

RunReader::RunReader()
    : m_handles(std::make_unique<Handles>())
{
}

RunReader::~RunReader() = default;

Result<std::unique_ptr<RunReader>> RunReader::open(const std::string& runDirectory)
{
    return std::move(openEach({runDirectory}).front());
}

std::vector<Result<std::unique_ptr<RunReader>>> RunReader::openEach(const std::vector<std::string>& runDirectories)
{
    hdf5::silenceErrorPrinting();
    // Everything that reads variable-length strings (root attributes, table names, event texts)
    // first runs in a child: a damaged string heap crashes libhdf5 itself.
    std::vector<std::string> logPaths;
    for (const std::string& directory : runDirectories) {
        const fs::path given(directory);
        logPaths.push_back(given.filename() == rf::kLogFileName ? directory : (given / rf::kLogFileName).string());
    }
    const std::vector<Status> probed = probeEachInChildProcess(
        logPaths,
        [&](size_t i) {
            // Runs in the probe's child, whose memory is capped: an allocation libhdf5 could not
            // make there is reported as such (RunFileProbe.h).
            const auto outOfMemory = [](const std::string& error) {
                return error.find("memory allocation failed") != std::string::npos ||
                       error.find("unable to allocate") != std::string::npos;
            };
            auto reader = openInThisProcess(runDirectories[i]);
            if (!reader) {
                if (outOfMemory(reader.error()))
                    throw std::bad_alloc();
                return false;
            }
            if ((*reader)->table(rf::kEvents))
                for (const auto& dataset : (*reader)->table(rf::kEvents)->datasets)
                    if (auto strings = (*reader)->readStrings(rf::kEvents, dataset); !strings && outOfMemory(strings.error()))
                        throw std::bad_alloc();
            return true;
        },
        kProbeTimeoutMs);
    std::vector<Result<std::unique_ptr<RunReader>>> readers;
    for (size_t i = 0; i < runDirectories.size(); ++i)
        readers.push_back(probed[i] ? openInThisProcess(runDirectories[i])
                                    : Result<std::unique_ptr<RunReader>>(Error{probed[i].error()}));
    return readers;
}

Result<std::unique_ptr<RunReader>> RunReader::openInThisProcess(const std::string& runDirectory)
{
    for (int attempt = 1;; ++attempt) {
        std::unique_ptr<RunReader> reader(new RunReader());
        Status status;
        try {
            status = reader->load(runDirectory);
        } catch (const std::exception& e) {
            // A size check missed something: the run is refused, the process survives.
            return Error{runDirectory + ": cannot be read (" + e.what() + ")"};
        }
        if (status)
            return reader;
        // A run still being written, read while its writer flushes: try again (see kLiveAttempts).
        if (!reader->m_info.openedForSwmr || attempt == kLiveAttempts)
            return Error{status.error()};
        reader.reset(); // closes the file before the next try
        pauseAfterFailedAttempt(attempt);
    }
}

const std::vector<int64_t>& RunReader::steps(const std::string& table) const
{
    static const std::vector<int64_t> empty;
    auto it = m_steps.find(table);
    return it == m_steps.end() ? empty : it->second;
}

Status RunReader::load(const std::string& runDirectory)
{
    std::error_code ec;
    fs::path dir(runDirectory);
    fs::path log = dir / rf::kLogFileName;
    if (fs::is_regular_file(dir, ec) && dir.filename() == rf::kLogFileName) {
        log = dir;
        dir = dir.parent_path();
    }
    m_info.directory = dir.string();
    m_info.logPath = log.string();
    const std::string path = log.string();
    if (!fs::exists(dir, ec))
        return Error{"run directory " + dir.string() + " does not exist"};
    if (!fs::exists(log, ec))
        return Error{path + ": not found (a run directory holds run.h5; see docs/run-format.md)"};
    // A FIFO named run.h5 would block the signature read forever.
    if (!fs::is_regular_file(log, ec))
        return Error{path + ": not a regular file (a directory, FIFO or device); a run's log is a regular HDF5 file"};
    if (!isHdf5Signature(path))
        return Error{path + ": not an HDF5 file (no HDF5 signature at the start; is it truncated or of another format?)"};

    hdf5::Handle fapl = hdf5::plist(H5Pcreate(H5P_FILE_ACCESS));
    // A run may sit on a read-only or network share: do not insist on file locks.
    H5Pset_file_locking(fapl.get(), false, true);
    // A plain open first: it reads each piece of metadata once, so a damaged file fails at once.
    // It refuses a file still marked open for write (a live run, or one whose writer was killed),
    // and only such a file is opened for SWMR reading, which alone can follow it. Under SWMR,
    // HDF5 rereads metadata with a bad checksum up to 100 times by default, waiting between
    // tries, in case a writer is mid-flush: on a damaged file that looked like a hang, so the
    // attempts are bounded to what a racing writer needs.
    hid_t fileId = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get());
    std::string plainOpenError;
    if (fileId < 0) {
        plainOpenError = hdf5::lastErrorMessage();
        H5Pset_metadata_read_attempts(fapl.get(), kSwmrMetadataReadAttempts);
        fileId = H5Fopen(path.c_str(), H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, fapl.get());
        m_info.openedForSwmr = fileId >= 0;
        H5Eclear2(H5E_DEFAULT);
    }
    if (fileId < 0) {
        if (const std::string newer = hdf5::newerFormatAdvice(plainOpenError); !newer.empty())
            return Error{path + ": cannot be opened: " + newer};
        return Error{path + ": cannot be opened as HDF5 (" + plainOpenError +
                     "); the file is probably truncated or corrupted"};
    }
    m_handles->file = hdf5::file(fileId);

    auto format = readStringAttribute(fileId, "format");
    // A root object header that fails its checksum cannot even say whether 'format' exists.
    if (!format && H5Aexists(fileId, "format") != 0)
        return Error{path + ": root attribute 'format' cannot be read (" + format.error() +
                     "); the file is probably corrupted"};
    if (!format)
        return Error{path + ": missing root attribute 'format' (expected \"training-run\")"};
    if (*format != rf::kFormatName)
        return Error{path + ": root attribute 'format' is \"" + *format + "\", expected \"training-run\""};
    auto version = readStringAttribute(fileId, "format_version");
    if (!version)
        return Error{path + ": missing root attribute 'format_version'"};
    try {
        m_info.formatVersion = std::stoi(*version);
    } catch (...) {
        return Error{path + ": root attribute 'format_version' is not an integer (\"" + *version + "\")"};
    }
    if (m_info.formatVersion > rf::kFormatVersion)
        return Error{path + ": format_version " + *version + " is newer than this nanscope reads (" +
                     std::to_string(rf::kFormatVersion) + "); update nanscope"};
    if (m_info.formatVersion < 1)
        return Error{path + ": format_version " + *version + " is not valid"};

    std::vector<std::string> attributeNames;
    H5Aiterate2(fileId, H5_INDEX_NAME, H5_ITER_INC, nullptr, collectAttributeName, &attributeNames);
    for (const auto& name : attributeNames) {
        auto value = readStringAttribute(fileId, name.c_str());
        if (value)
            m_info.attributes[name] = *value;
    }
    if (auto it = m_info.attributes.find("run_name"); it != m_info.attributes.end())
        m_info.runName = it->second;
    if (m_info.runName.empty())
        m_info.runName = fs::absolute(dir, ec).filename().string();

    std::vector<std::string> tables(std::begin(rf::kTables), std::end(rf::kTables));
    std::vector<std::string> rootLinks;
    H5Literate(fileId, H5_INDEX_NAME, H5_ITER_INC, nullptr, collectLinkName, &rootLinks);
    for (const std::string& link : rootLinks)
        if (rf::isSeriesTableName(link) && link != rf::kScalars)
            tables.push_back(link);
    for (const std::string& table : tables) {
        if (H5Lexists(fileId, table.c_str(), H5P_DEFAULT) <= 0)
            continue;
        Status status = loadTable(table);
        if (!status)
            return Error{path + ": " + status.error()};
    }
    if (!m_info.table(rf::kScalars))
        return Error{path + ": required group /scalars is missing"};
    const TableInfo* scalars = m_info.table(rf::kScalars);
    if (std::find(scalars->datasets.begin(), scalars->datasets.end(), rf::scalar::kLoss) == scalars->datasets.end())
        return Error{path + ": required dataset /scalars/loss is missing"};
    return scanSteppedFiles();
}

Status RunReader::scanSteppedFiles()
{
    const fs::path dir(m_info.directory);
    m_info.checkpoints = listSteppedFiles((dir / rf::kCheckpointDir).string());
    m_info.batches = listSteppedFiles((dir / rf::kBatchDir).string());
    m_info.checkpointForms = readCheckpointForms((dir / rf::kCheckpointDir).string());
    m_info.source.format = rf::kNativeSourceFormat;
    m_info.source.files = {m_info.logPath};
    describeContents(m_info);
    return Status::success();
}

namespace {

// A table's `rows` steps (the dataset `stepsId`), refused unless they increase strictly (/events
// may repeat a step: several events of one step).
Result<std::vector<int64_t>> readIncreasingSteps(hid_t stepsId, const std::string& name, int64_t rows)
{
    std::vector<int64_t> steps(static_cast<size_t>(rows));
    if (rows > 0) {
        hsize_t start = 0, count = hsize_t(rows);
        hdf5::Handle fileSpace = hdf5::space(H5Dget_space(stepsId));
        H5Sselect_hyperslab(fileSpace.get(), H5S_SELECT_SET, &start, nullptr, &count, nullptr);
        hdf5::Handle memSpace = hdf5::space(H5Screate_simple(1, &count, nullptr));
        if (H5Dread(stepsId, H5T_NATIVE_INT64, memSpace.get(), fileSpace.get(), H5P_DEFAULT, steps.data()) < 0)
            return Error{"cannot read /" + name + "/steps: " + hdf5::lastErrorMessage()};
    }
    // /events may hold several events of one step; every other table has one row per step.
    const bool allowRepeats = name == rf::kEvents;
    for (size_t i = 1; i < steps.size(); ++i)
        if (steps[i] < steps[i - 1] || (steps[i] == steps[i - 1] && !allowRepeats))
            return Error{"/" + name + "/steps does not increase strictly: row " + std::to_string(i) + " has step " +
                         std::to_string(steps[i]) + " after " + std::to_string(steps[i - 1])};
    return steps;
}

} // namespace

Status RunReader::loadTable(const std::string& name)
{
    const hid_t fileId = m_handles->file.get();
    hdf5::Handle group = hdf5::group(H5Gopen2(fileId, name.c_str(), H5P_DEFAULT));
    if (!group.valid())
        return Error{"/" + name + " is not a group"};
    std::vector<std::string> links;
    H5Literate(group.get(), H5_INDEX_NAME, H5_ITER_INC, nullptr, collectLinkName, &links);

    const uint64_t fileSize = fileSizeOf(m_info.logPath);
    TableInfo table;
    table.name = name;
    if (std::find(links.begin(), links.end(), rf::kSteps) == links.end())
        return Error{"/" + name + "/steps is missing"};

    const bool isMatrixTable = !rf::isSeriesTableName(name) && name != rf::kEvents;
    for (const char* labels : {rf::kNames, rf::kKinds}) {
        if (std::find(links.begin(), links.end(), labels) == links.end())
            continue;
        hdf5::Handle dset = hdf5::dataset(H5Dopen2(group.get(), labels, H5P_DEFAULT));
        if (!dset.valid()) {
            const std::string hdf5Message = hdf5::lastErrorMessage();
            const std::string newer = hdf5::newerFormatAdvice(hdf5Message);
            return Error{"/" + name + "/" + labels + " cannot be opened: " +
                         (newer.empty() ? hdf5Message + "; the file is probably corrupted" : newer)};
        }
        auto strings = readStringDataset(dset.get(), "/" + name + "/" + labels, m_info.logPath, fileSize);
        if (!strings)
            return Error{strings.error()};
        (std::string(labels) == rf::kNames ? table.names : table.kinds) = std::move(*strings);
    }
    if (isMatrixTable && std::find(links.begin(), links.end(), rf::kNames) == links.end())
        return Error{"/" + name + "/names is missing"};
    if (!table.kinds.empty() && table.kinds.size() != table.names.size())
        return Error{"/" + name + "/kinds has " + std::to_string(table.kinds.size()) + " entries but names has " +
                     std::to_string(table.names.size())};

    int64_t rows = -1;
    for (const auto& link : links) {
        if (link == rf::kNames || link == rf::kKinds)
            continue;
        const std::string where = "/" + name + "/" + link;
        H5O_info_t objectInfo;
        if (H5Oget_info_by_name2(group.get(), link.c_str(), &objectInfo, H5O_INFO_BASIC, H5P_DEFAULT) < 0 ||
            objectInfo.type != H5O_TYPE_DATASET)
            continue; // optional extras a project may add: ignored
        hdf5::Handle dset = hdf5::dataset(H5Dopen2(group.get(), link.c_str(), H5P_DEFAULT));
        if (!dset.valid()) {
            const std::string hdf5Message = hdf5::lastErrorMessage();
            const std::string newer = hdf5::newerFormatAdvice(hdf5Message);
            return Error{where + " cannot be opened: " +
                         (newer.empty() ? hdf5Message + "; the file is probably corrupted" : newer)};
        }
        hdf5::Handle space = hdf5::space(H5Dget_space(dset.get()));
        hdf5::Handle type = hdf5::type(H5Dget_type(dset.get()));
        const int rank = H5Sget_simple_extent_ndims(space.get());
        hsize_t dims[2] = {0, 0};
        if (rank >= 1 && rank <= 2)
            H5Sget_simple_extent_dims(space.get(), dims, nullptr);
        const H5T_class_t cls = H5Tget_class(type.get());
        const bool isStringColumn = name == rf::kEvents && link != rf::kSteps;
        if (isStringColumn) {
            if (cls != H5T_STRING || rank != 1)
                return Error{where + " must be a 1-D string dataset"};
            // Checked at open, so that a run whose event texts would make libhdf5 allocate more
            // than the file holds is refused before anything reads them (StringHeapCheck.h).
            if (H5Tis_variable_str(type.get()) > 0)
                if (Status bounded = hdf5::checkStringHeapReferences(dset.get(), dims[0], m_info.logPath, where);
                    !bounded)
                    return bounded;
            table.datasets.push_back(link);
        } else if (link == rf::kSteps) {
            if (cls != H5T_INTEGER || rank != 1)
                return Error{where + " must be a 1-D integer dataset (int64 steps)"};
        } else {
            if (cls != H5T_FLOAT && cls != H5T_INTEGER)
                return Error{where + " must hold numbers (float32/float64), not " +
                             (cls == H5T_STRING ? std::string("strings") : std::string("this type"))};
            const int expectedRank = isMatrixTable ? 2 : 1;
            if (rank != expectedRank)
                return Error{where + " has rank " + std::to_string(rank) + "; expected " + describeRank(expectedRank)};
            if (isMatrixTable && dims[1] != table.names.size())
                return Error{where + " has " + std::to_string(dims[1]) + " columns but /" + name + "/names lists " +
                             std::to_string(table.names.size())};
            table.datasets.push_back(link);
            if (hasChecksum(dset.get()))
                table.checksummed.push_back(link);
        }
        if (Status fits = checkDeclaredRows(dset.get(), dims[0], rank == 2 ? dims[1] : 1, fileSize, where, "rows"); !fits)
            return fits;
        rows = rows < 0 ? int64_t(dims[0]) : std::min<int64_t>(rows, int64_t(dims[0]));
        m_handles->datasets[name + "/" + link] = std::move(dset);
    }
    table.rows = std::max<int64_t>(rows, 0);

    // Steps must increase strictly: every lookup by step relies on it.
    auto steps = readIncreasingSteps(m_handles->datasets[name + "/" + rf::kSteps].get(), name, table.rows);
    if (!steps)
        return Error{steps.error()};
    m_steps[name] = std::move(*steps);

    auto existing = std::find_if(m_info.tables.begin(), m_info.tables.end(),
                                 [&](const TableInfo& t) { return t.name == name; });
    if (existing != m_info.tables.end())
        *existing = std::move(table);
    else
        m_info.tables.push_back(std::move(table));
    return Status::success();
}

Result<int64_t> RunReader::checkedDataset(const std::string& table, const std::string& dataset, int rank) const
{
    const TableInfo* info = m_info.table(table);
    if (!info)
        return Error{m_info.logPath + ": the run has no /" + table + " group"};
    auto it = m_handles->datasets.find(table + "/" + dataset);
    if (it == m_handles->datasets.end())
        return Error{m_info.logPath + ": the run has no /" + table + "/" + dataset + " dataset"};
    hdf5::Handle space = hdf5::space(H5Dget_space(it->second.get()));
    if (H5Sget_simple_extent_ndims(space.get()) != rank)
        return Error{m_info.logPath + ": /" + table + "/" + dataset + " is not " + describeRank(rank)};
    return int64_t(it->second.get());
}

Result<std::vector<double>> RunReader::readSeries(const std::string& table, const std::string& dataset) const
{
    const TableInfo* info = m_info.table(table);
    return readSeriesRows(table, dataset, 0, info ? info->rows : 0);
}

Result<std::vector<double>> RunReader::readSeriesRows(const std::string& table, const std::string& dataset,
                                                      int64_t rowBegin, int64_t rowCount) const
{
    auto id = checkedDataset(table, dataset, 1);
    if (!id)
        return Error{id.error()};
    const int64_t rows = m_info.table(table)->rows;
    if (rowBegin < 0 || rowCount < 0 || rowBegin + rowCount > rows)
        return Error{"rows [" + std::to_string(rowBegin) + ", " + std::to_string(rowBegin + rowCount) +
                     ") are out of range for /" + table + "/" + dataset + " (" + std::to_string(rows) + " rows)"};
    std::vector<double> values(static_cast<size_t>(rowCount));
    if (rowCount == 0)
        return values;
    hsize_t start = hsize_t(rowBegin), count = hsize_t(rowCount);
    hdf5::Handle fileSpace = hdf5::space(H5Dget_space(hid_t(*id)));
    H5Sselect_hyperslab(fileSpace.get(), H5S_SELECT_SET, &start, nullptr, &count, nullptr);
    hdf5::Handle memSpace = hdf5::space(H5Screate_simple(1, &count, nullptr));
    if (retriedWhileLive(m_info.openedForSwmr, [&] {
            return H5Dread(hid_t(*id), H5T_NATIVE_DOUBLE, memSpace.get(), fileSpace.get(), H5P_DEFAULT, values.data());
        }) < 0)
        return readFailure(table, dataset, rowBegin, rowBegin + rowCount);
    return values;
}

Result<std::vector<float>> RunReader::readColumn(const std::string& table, const std::string& dataset,
                                                 int64_t column) const
{
    auto id = checkedDataset(table, dataset, 2);
    if (!id)
        return Error{id.error()};
    const TableInfo* info = m_info.table(table);
    if (column < 0 || column >= int64_t(info->names.size()))
        return Error{"column " + std::to_string(column) + " is out of range for /" + table + "/" + dataset};
    std::vector<float> values(size_t(info->rows));
    if (info->rows == 0)
        return values;
    hsize_t start[2] = {0, hsize_t(column)}, count[2] = {hsize_t(info->rows), 1};
    hdf5::Handle fileSpace = hdf5::space(H5Dget_space(hid_t(*id)));
    H5Sselect_hyperslab(fileSpace.get(), H5S_SELECT_SET, start, nullptr, count, nullptr);
    hsize_t memCount = count[0];
    hdf5::Handle memSpace = hdf5::space(H5Screate_simple(1, &memCount, nullptr));
    if (retriedWhileLive(m_info.openedForSwmr, [&] {
            return H5Dread(hid_t(*id), H5T_NATIVE_FLOAT, memSpace.get(), fileSpace.get(), H5P_DEFAULT, values.data());
        }) < 0)
        return readFailure(table, dataset, 0, info->rows);
    return values;
}

Result<std::vector<float>> RunReader::readRow(const std::string& table, const std::string& dataset, int64_t row) const
{
    return readBlock(table, dataset, row, 1);
}

Result<std::vector<float>> RunReader::readBlock(const std::string& table, const std::string& dataset,
                                                int64_t rowBegin, int64_t rowCount) const
{
    std::vector<float> values;
    if (Status s = readBlockInto(table, dataset, rowBegin, rowCount, values); !s)
        return Error{s.error()};
    return values;
}

Status RunReader::readBlockInto(const std::string& table, const std::string& dataset, int64_t rowBegin,
                                int64_t rowCount, std::vector<float>& values) const
{
    auto id = checkedDataset(table, dataset, 2);
    if (!id)
        return Error{id.error()};
    const TableInfo* info = m_info.table(table);
    if (rowBegin < 0 || rowCount < 0 || rowBegin + rowCount > info->rows)
        return Error{"rows [" + std::to_string(rowBegin) + ", " + std::to_string(rowBegin + rowCount) +
                     ") are out of range for /" + table + "/" + dataset + " (" + std::to_string(info->rows) +
                     " rows)"};
    const hsize_t columns = info->names.size();
    // resize keeps the buffer's memory when it shrinks or stays (H5Dread overwrites every value).
    reserveBlock(values, size_t(rowCount) * columns);
    values.resize(size_t(rowCount) * columns);
    if (values.empty())
        return Status::success();
    // A finished file's rows are read chunk by chunk, raw, outside HDF5's lock where it can (see
    // DirectChunkRead.h); anything unusual, and a file still being written, goes through HDF5.
    if (!m_info.openedForSwmr)
        if (auto layout = hdf5reads::rowChunksOf(hid_t(*id)); layout && layout->columns == columns)
            if (hdf5reads::readRowsDirect(hid_t(*id), *layout, hsize_t(rowBegin), hsize_t(rowCount), values.data()))
                return Status::success();
    hsize_t start[2] = {hsize_t(rowBegin), 0}, count[2] = {hsize_t(rowCount), columns};
    hdf5::Handle fileSpace = hdf5::space(H5Dget_space(hid_t(*id)));
    H5Sselect_hyperslab(fileSpace.get(), H5S_SELECT_SET, start, nullptr, count, nullptr);
    hdf5::Handle memSpace = hdf5::space(H5Screate_simple(2, count, nullptr));
    if (retriedWhileLive(m_info.openedForSwmr, [&] {
            return H5Dread(hid_t(*id), H5T_NATIVE_FLOAT, memSpace.get(), fileSpace.get(), H5P_DEFAULT, values.data());
        }) < 0)
        return readFailure(table, dataset, rowBegin, rowBegin + rowCount);
    return Status::success();
}

Error RunReader::readFailure(const std::string& table, const std::string& dataset, int64_t rowBegin, int64_t rowEnd) const
{
    std::string why = hdf5::lastErrorMessage();
    std::string lower = why;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    const std::string where = m_info.logPath + ": /" + table + "/" + dataset;
    if (lower.find("checksum") == std::string::npos && lower.find("fletcher") == std::string::npos)
        return Error{where + ": cannot be read: " + why};
    // Name the steps the damaged rows hold, so that a user knows which part of the run is lost.
    const auto& steps = this->steps(table);
    std::string range;
    if (rowBegin >= 0 && rowEnd > rowBegin && size_t(rowEnd) <= steps.size())
        range = ", steps " + std::to_string(steps[size_t(rowBegin)]) + ".." + std::to_string(steps[size_t(rowEnd - 1)]);
    return Error{where + range + ": the data failed its checksum (Fletcher-32): the file is corrupted"};
}

Result<std::vector<std::string>> RunReader::readStrings(const std::string& table, const std::string& dataset) const
{
    auto id = checkedDataset(table, dataset, 1);
    if (!id)
        return Error{id.error()};
    auto strings = readStringDataset(hid_t(*id), m_info.logPath + ": /" + table + "/" + dataset, m_info.logPath,
                                     fileSizeOf(m_info.logPath));
    if (strings && int64_t(strings->size()) > m_info.table(table)->rows)
        strings->resize(size_t(m_info.table(table)->rows));
    return strings;
}

Result<bool> RunReader::refresh()
{
    try {
        std::map<std::string, int64_t> before;
        for (const auto& t : m_info.tables)
            before[t.name] = t.rows;
        if (m_info.openedForSwmr) {
            for (auto& [key, handle] : m_handles->datasets)
                if (H5Drefresh(handle.get()) < 0)
                    return Error{m_info.logPath + ": cannot refresh /" + key + ": " + hdf5::lastErrorMessage()};
        }
        bool grew = false;
        for (const auto& [name, rows] : before) {
            Status status = loadTable(name);
            if (!status)
                return Error{m_info.logPath + ": " + status.error()};
            grew = grew || m_info.table(name)->rows != rows;
        }
        scanSteppedFiles();
        return grew;
    } catch (const std::exception& e) {
        // A size check missed something: the run is refused, the process survives.
        return Error{m_info.logPath + ": cannot be read (" + e.what() + ")"};
    }
}

} // namespace nanscope

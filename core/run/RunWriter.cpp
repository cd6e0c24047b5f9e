#include "core/run/RunWriter.h"

#include "core/run/Hdf5Handle.h"
#include "core/run/RunFormat.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>

namespace fs = std::filesystem;

namespace nanscope {

namespace rf = runformat;

namespace {

struct TableState
{
    hdf5::Handle group;
    hdf5::Handle steps;
    std::map<std::string, hdf5::Handle> datasets; // value datasets
    hsize_t columns = 0;                           // 0: 1-D datasets
    hsize_t rows = 0;
    bool strings = false;
};

// Chunks of 512 rows x 16 columns (32 KiB of float32) keep both access patterns cheap: one
// layer's series touches n/512 chunks, one step's row L/16 of them. Measured by
// bench/bench_run_reader on 100,000 x 1,000: 128 x 32 chunks took twice as long per series.
constexpr hsize_t kRowChunk = 512;
constexpr hsize_t kColumnChunk = 16;
constexpr hsize_t kSeriesChunk = 1024;

Status writeStringAttribute(hid_t object, const std::string& name, const std::string& value)
{
    hdf5::Handle type = hdf5::variableStringType();
    hdf5::Handle space = hdf5::space(H5Screate(H5S_SCALAR));
    hdf5::Handle attr = hdf5::attribute(H5Acreate2(object, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT));
    const char* text = value.c_str();
    if (!attr.valid() || H5Awrite(attr.get(), type.get(), &text) < 0)
        return Error{"cannot write attribute " + name + ": " + hdf5::lastErrorMessage()};
    return Status::success();
}

Result<hdf5::Handle> createExtendible(hid_t group, const char* name, hid_t type, hsize_t columns)
{
    const int rank = columns == 0 ? 1 : 2;
    hsize_t dims[2] = {0, columns};
    hsize_t maxDims[2] = {H5S_UNLIMITED, columns};
    hsize_t chunk[2] = {columns == 0 ? kSeriesChunk : kRowChunk, std::min(std::max<hsize_t>(columns, 1), kColumnChunk)};
    hdf5::Handle space = hdf5::space(H5Screate_simple(rank, dims, maxDims));
    hdf5::Handle dcpl = hdf5::plist(H5Pcreate(H5P_DATASET_CREATE));
    H5Pset_chunk(dcpl.get(), rank, chunk);
    // A Fletcher-32 checksum per chunk: a flipped byte in the numbers is then a read error the
    // reader reports as corruption, instead of a norm of -3e38 plotted as training behaviour.
    // (HDF5 filters cannot apply to variable-length strings: the event texts go without.)
    if (H5Tis_variable_str(type) <= 0)
        H5Pset_fletcher32(dcpl.get());
    if (H5Tget_class(type) == H5T_FLOAT) {
        const double fill = std::numeric_limits<double>::quiet_NaN();
        H5Pset_fill_value(dcpl.get(), H5T_NATIVE_DOUBLE, &fill);
    }
    hdf5::Handle dset = hdf5::dataset(H5Dcreate2(group, name, type, space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT));
    if (!dset.valid())
        return Error{std::string("cannot create dataset ") + name + ": " + hdf5::lastErrorMessage()};
    return dset;
}

Status writeStringList(hid_t group, const char* name, const std::vector<std::string>& values)
{
    hdf5::Handle type = hdf5::variableStringType();
    hsize_t n = values.size();
    hdf5::Handle space = hdf5::space(H5Screate_simple(1, &n, nullptr));
    hdf5::Handle dset = hdf5::dataset(H5Dcreate2(group, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    std::vector<const char*> raw;
    for (const auto& v : values)
        raw.push_back(v.c_str());
    if (!dset.valid() || (n > 0 && H5Dwrite(dset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, raw.data()) < 0))
        return Error{std::string("cannot write ") + name + ": " + hdf5::lastErrorMessage()};
    return Status::success();
}

// Extends a dataset by `count` rows and writes `data` (row-major) into them.
Status appendToDataset(hid_t dset, hsize_t oldRows, hsize_t count, hsize_t columns, hid_t memType, const void* data)
{
    const int rank = columns == 0 ? 1 : 2;
    hsize_t newDims[2] = {oldRows + count, columns};
    if (H5Dset_extent(dset, newDims) < 0)
        return Error{"cannot extend dataset: " + hdf5::lastErrorMessage()};
    hdf5::Handle fileSpace = hdf5::space(H5Dget_space(dset));
    hsize_t start[2] = {oldRows, 0}, blockCount[2] = {count, columns};
    H5Sselect_hyperslab(fileSpace.get(), H5S_SELECT_SET, start, nullptr, blockCount, nullptr);
    hdf5::Handle memSpace = hdf5::space(H5Screate_simple(rank, blockCount, nullptr));
    if (H5Dwrite(dset, memType, memSpace.get(), fileSpace.get(), H5P_DEFAULT, data) < 0)
        return Error{"cannot write rows: " + hdf5::lastErrorMessage()};
    return Status::success();
}

} // namespace

struct RunWriter::State
{
    hdf5::Handle file;
    std::map<std::string, TableState> tables;
    std::string path;
};

RunWriter::RunWriter()
    : m_state(std::make_unique<State>())
{
}

RunWriter::~RunWriter()
{
    close();
}

std::string RunWriter::checkpointPath(int64_t step, const std::string& extension) const
{
    return (fs::path(m_directory) / rf::kCheckpointDir / (rf::stepFileStem(step) + extension)).string();
}

std::string RunWriter::batchPath(int64_t step) const
{
    return (fs::path(m_directory) / rf::kBatchDir / (rf::stepFileStem(step) + ".pt")).string();
}

Result<std::unique_ptr<RunWriter>> RunWriter::create(const std::string& runDirectory, const RunSchema& schema)
{
    hdf5::silenceErrorPrinting();
    std::unique_ptr<RunWriter> writer(new RunWriter());
    writer->m_directory = runDirectory;
    std::error_code ec;
    fs::create_directories(fs::path(runDirectory) / rf::kCheckpointDir, ec);
    fs::create_directories(fs::path(runDirectory) / rf::kBatchDir, ec);
    if (ec)
        return Error{"cannot create run directory " + runDirectory + ": " + ec.message()};
    const std::string path = (fs::path(runDirectory) / rf::kLogFileName).string();
    writer->m_state->path = path;
    if (fs::exists(path, ec))
        return Error{path + " already exists; a run directory is written once"};

    // SWMR needs the latest file format.
    hdf5::Handle fapl = hdf5::plist(H5Pcreate(H5P_FILE_ACCESS));
    H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
    hid_t fileId = H5Fcreate(path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl.get());
    if (fileId < 0)
        return Error{path + ": cannot create (" + hdf5::lastErrorMessage() + ")"};
    State& state = *writer->m_state;
    state.file = hdf5::file(fileId);

    Status status = writeStringAttribute(fileId, "format", rf::kFormatName);
    {
        hdf5::Handle space = hdf5::space(H5Screate(H5S_SCALAR));
        hdf5::Handle attr = hdf5::attribute(
            H5Acreate2(fileId, "format_version", H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT));
        const long long version = rf::kFormatVersion;
        H5Awrite(attr.get(), H5T_NATIVE_LLONG, &version);
    }
    for (const auto& [name, value] : schema.attributes)
        if (status)
            status = writeStringAttribute(fileId, name, value);
    if (!status)
        return Error{path + ": " + status.error()};

    auto addTable = [&](const char* name, const std::vector<std::string>& columns, const std::vector<std::string>& kinds,
                        const std::vector<std::string>& datasets, bool matrix, bool strings) -> Status {
        TableState table;
        table.group = hdf5::group(H5Gcreate2(fileId, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
        if (!table.group.valid())
            return Error{std::string("cannot create group /") + name};
        auto steps = createExtendible(table.group.get(), rf::kSteps, H5T_STD_I64LE, 0);
        if (!steps)
            return Error{steps.error()};
        table.steps = std::move(*steps);
        if (matrix) {
            Status s = writeStringList(table.group.get(), rf::kNames, columns);
            if (s && !kinds.empty())
                s = writeStringList(table.group.get(), rf::kKinds, kinds);
            if (!s)
                return s;
            table.columns = columns.size();
        }
        table.strings = strings;
        hdf5::Handle stringType = hdf5::variableStringType();
        for (const auto& d : datasets) {
            const hid_t type = strings ? stringType.get() : (matrix ? H5T_IEEE_F32LE : H5T_IEEE_F64LE);
            auto dset = createExtendible(table.group.get(), d.c_str(), type, table.columns);
            if (!dset)
                return Error{dset.error()};
            table.datasets[d] = std::move(*dset);
        }
        state.tables[name] = std::move(table);
        return Status::success();
    };

    std::vector<std::string> scalars = schema.scalars;
    if (std::find(scalars.begin(), scalars.end(), runformat::scalar::kLoss) == scalars.end())
        scalars.insert(scalars.begin(), runformat::scalar::kLoss);
    status = addTable(rf::kScalars, {}, {}, scalars, false, false);
    for (const auto& [name, datasets] : schema.seriesTables) {
        if (!status)
            break;
        if (!rf::isSeriesTableName(name) || name == rf::kScalars)
            return Error{path + ": /" + name + " is not a name for a table of its own rate (eval, scalars_<name>)"};
        status = addTable(name.c_str(), {}, {}, datasets, false, false);
    }
    if (status && !schema.layers.empty()) {
        std::vector<std::string> datasets;
        if (schema.layerGradNorm)
            datasets.push_back(rf::column::kGradNorm);
        if (schema.layerParamNorm)
            datasets.push_back(rf::column::kParamNorm);
        if (schema.layerGradNonfinite)
            datasets.push_back(rf::column::kGradNonfinite);
        status = addTable(rf::kLayers, schema.layers, {}, datasets, true, false);
    }
    // The columns of each table are the shared table's (run_format.json), as the Python recorder writes.
    const auto columns = [](const auto& list) { return std::vector<std::string>(std::begin(list), std::end(list)); };
    if (status && !schema.activations.empty())
        status = addTable(rf::kActivations, schema.activations, schema.activationKinds, columns(rf::kActivationsColumns),
                          true, false);
    if (status && !schema.buffers.empty())
        status = addTable(rf::kBuffers, schema.buffers, {}, columns(rf::kBuffersColumns), true, false);
    if (status && !schema.inputs.empty())
        status = addTable(rf::kInputs, schema.inputs, {}, columns(rf::kInputsColumns), true, false);
    if (status && schema.events)
        status = addTable(rf::kEvents, {}, {}, columns(rf::kEventsColumns), false, true);
    if (!status)
        return Error{path + ": " + status.error()};

    if (H5Fstart_swmr_write(fileId) < 0)
        return Error{path + ": cannot switch to SWMR write mode (" + hdf5::lastErrorMessage() + ")"};
    return writer;
}

Status RunWriter::appendRows(const std::string& tableName, const std::vector<int64_t>& steps,
                             const std::map<std::string, std::vector<float>>& values)
{
    auto it = m_state->tables.find(tableName);
    if (!m_state->file.valid())
        return Error{m_state->path + ": writer is closed"};
    if (it == m_state->tables.end())
        return Error{m_state->path + ": the schema has no /" + tableName + " table"};
    TableState& table = it->second;
    if (table.strings)
        return Error{"/" + tableName + " holds strings; use appendEvent"};
    const hsize_t count = steps.size();
    const hsize_t width = std::max<hsize_t>(table.columns, 1);
    for (const auto& [name, row] : values) {
        if (!table.datasets.count(name))
            return Error{m_state->path + ": /" + tableName + " has no dataset " + name};
        if (row.size() != count * width)
            return Error{m_state->path + ": /" + tableName + "/" + name + " row has " + std::to_string(row.size()) +
                         " values, expected " + std::to_string(count * width)};
    }
    Status status = appendToDataset(table.steps.get(), table.rows, count, 0, H5T_NATIVE_INT64, steps.data());
    const std::vector<float> missing(count * width, std::numeric_limits<float>::quiet_NaN());
    for (auto& [name, dset] : table.datasets) {
        if (!status)
            break;
        auto v = values.find(name);
        const float* data = v == values.end() ? missing.data() : v->second.data();
        status = appendToDataset(dset.get(), table.rows, count, table.columns, H5T_NATIVE_FLOAT, data);
    }
    if (!status)
        return Error{m_state->path + ": /" + tableName + ": " + status.error()};
    table.rows += count;
    return flush();
}

Status RunWriter::appendRow(const std::string& table, int64_t step, const std::map<std::string, std::vector<float>>& values)
{
    return appendRows(table, {step}, values);
}

Status RunWriter::appendScalars(int64_t step, const std::map<std::string, double>& values)
{
    auto it = m_state->tables.find(rf::kScalars);
    if (it == m_state->tables.end() || !m_state->file.valid())
        return Error{m_state->path + ": writer is closed"};
    TableState& table = it->second;
    for (const auto& [name, value] : values)
        if (!table.datasets.count(name))
            return Error{m_state->path + ": scalar '" + name + "' is not in the schema"};
    Status status = appendToDataset(table.steps.get(), table.rows, 1, 0, H5T_NATIVE_INT64, &step);
    for (auto& [name, dset] : table.datasets) {
        if (!status)
            break;
        auto v = values.find(name);
        const double value = v == values.end() ? std::numeric_limits<double>::quiet_NaN() : v->second;
        status = appendToDataset(dset.get(), table.rows, 1, 0, H5T_NATIVE_DOUBLE, &value);
    }
    if (!status)
        return Error{m_state->path + ": /scalars: " + status.error()};
    table.rows += 1;
    return flush();
}

Status RunWriter::appendSeries(const std::string& tableName, const std::vector<int64_t>& steps,
                               const std::map<std::string, std::vector<double>>& values)
{
    auto it = m_state->tables.find(tableName);
    if (!m_state->file.valid())
        return Error{m_state->path + ": writer is closed"};
    if (it == m_state->tables.end() || !rf::isSeriesTableName(tableName))
        return Error{m_state->path + ": the schema has no series table /" + tableName};
    TableState& table = it->second;
    const hsize_t count = steps.size();
    for (const auto& [name, column] : values) {
        if (!table.datasets.count(name))
            return Error{m_state->path + ": /" + tableName + " has no dataset " + name};
        if (column.size() != count)
            return Error{m_state->path + ": /" + tableName + "/" + name + " has " + std::to_string(column.size()) +
                         " values for " + std::to_string(count) + " steps"};
    }
    Status status = appendToDataset(table.steps.get(), table.rows, count, 0, H5T_NATIVE_INT64, steps.data());
    const std::vector<double> missing(count, std::numeric_limits<double>::quiet_NaN());
    for (auto& [name, dset] : table.datasets) {
        if (!status)
            break;
        auto v = values.find(name);
        const double* data = v == values.end() ? missing.data() : v->second.data();
        status = appendToDataset(dset.get(), table.rows, count, 0, H5T_NATIVE_DOUBLE, data);
    }
    if (!status)
        return Error{m_state->path + ": /" + tableName + ": " + status.error()};
    table.rows += count;
    return flush();
}

Status RunWriter::appendEvent(int64_t step, const std::string& kind, const std::string& message)
{
    auto it = m_state->tables.find(rf::kEvents);
    if (it == m_state->tables.end() || !m_state->file.valid())
        return Error{m_state->path + ": the schema has no /events table"};
    TableState& table = it->second;
    hdf5::Handle stringType = hdf5::variableStringType();
    Status status = appendToDataset(table.steps.get(), table.rows, 1, 0, H5T_NATIVE_INT64, &step);
    const char* kindText = kind.c_str();
    const char* messageText = message.c_str();
    if (status)
        status = appendToDataset(table.datasets[rf::column::kKind].get(), table.rows, 1, 0, stringType.get(), &kindText);
    if (status)
        status = appendToDataset(table.datasets[rf::column::kMessage].get(), table.rows, 1, 0, stringType.get(), &messageText);
    if (!status)
        return Error{m_state->path + ": /events: " + status.error()};
    table.rows += 1;
    return flush();
}

Status RunWriter::flush()
{
    if (!m_state->file.valid())
        return Error{m_state->path + ": writer is closed"};
    if (H5Fflush(m_state->file.get(), H5F_SCOPE_LOCAL) < 0)
        return Error{m_state->path + ": flush failed: " + hdf5::lastErrorMessage()};
    return Status::success();
}

Status RunWriter::close()
{
    if (!m_state || !m_state->file.valid())
        return Status::success();
    m_state->tables.clear();
    m_state->file.reset();
    return Status::success();
}

} // namespace nanscope

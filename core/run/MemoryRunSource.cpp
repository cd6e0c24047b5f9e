#include "core/run/MemoryRunSource.h"

#include "core/run/RunFormat.h"

#include <algorithm>

namespace nanscope {

MemoryRunSource::MemoryRunSource(RunInfo info)
    : m_info(std::move(info))
{
}

void MemoryRunSource::replaceTableInfo(TableInfo info)
{
    auto& tables = m_info.tables;
    tables.erase(std::remove_if(tables.begin(), tables.end(), [&](const TableInfo& t) { return t.name == info.name; }),
                 tables.end());
    tables.push_back(std::move(info));
}

void MemoryRunSource::addSeriesTable(const std::string& name, std::vector<int64_t> steps,
                                     std::map<std::string, std::vector<double>> series)
{
    TableInfo info{name, int64_t(steps.size()), {}, {}, {}};
    for (auto& [dataset, values] : series) {
        info.datasets.push_back(dataset);
        info.rows = std::min<int64_t>(info.rows, int64_t(values.size()));
    }
    replaceTableInfo(std::move(info));
    m_tables[name] = Table{std::move(steps), std::move(series), {}, {}};
}

void MemoryRunSource::addMatrixTable(const std::string& name, std::vector<std::string> columns,
                                     std::vector<int64_t> steps, std::map<std::string, std::vector<float>> datasets,
                                     std::vector<std::string> kinds)
{
    TableInfo info{name, int64_t(steps.size()), columns, std::move(kinds), {}};
    const size_t width = std::max<size_t>(1, columns.size());
    for (auto& [dataset, values] : datasets) {
        info.datasets.push_back(dataset);
        info.rows = std::min<int64_t>(info.rows, int64_t(values.size() / width));
    }
    replaceTableInfo(std::move(info));
    m_tables[name] = Table{std::move(steps), {}, std::move(datasets), {}};
}

void MemoryRunSource::addEvents(std::vector<int64_t> steps, std::vector<std::string> kinds,
                                std::vector<std::string> messages)
{
    const int64_t rows = int64_t(std::min({steps.size(), kinds.size(), messages.size()}));
    // As in run.h5, the events' string datasets are not listed as value datasets.
    replaceTableInfo(TableInfo{runformat::kEvents, rows, {}, {}, {}});
    Table& table = m_tables[runformat::kEvents];
    table = Table{std::move(steps), {}, {}, {}};
    table.strings[runformat::column::kKind] = std::move(kinds);
    table.strings[runformat::column::kMessage] = std::move(messages);
}

const std::vector<int64_t>& MemoryRunSource::steps(const std::string& table) const
{
    static const std::vector<int64_t> none;
    auto it = m_tables.find(table);
    return it == m_tables.end() ? none : it->second.steps;
}

Error MemoryRunSource::missing(const std::string& table, const std::string& dataset) const
{
    return Error{m_info.logPath + ": the run has no /" + table + "/" + dataset};
}

Result<std::vector<double>> MemoryRunSource::readSeries(const std::string& table, const std::string& dataset) const
{
    auto t = m_tables.find(table);
    if (t == m_tables.end() || !t->second.series.count(dataset))
        return missing(table, dataset);
    return t->second.series.at(dataset);
}

Result<std::vector<double>> MemoryRunSource::readSeriesRows(const std::string& table, const std::string& dataset,
                                                            int64_t rowBegin, int64_t rowCount) const
{
    auto all = readSeries(table, dataset);
    if (!all)
        return all;
    if (rowBegin < 0 || rowCount < 0 || size_t(rowBegin + rowCount) > all->size())
        return Error{m_info.logPath + ": rows out of range in /" + table + "/" + dataset};
    return std::vector<double>(all->begin() + rowBegin, all->begin() + rowBegin + rowCount);
}

const std::vector<float>* MemoryRunSource::matrix(const std::string& table, const std::string& dataset,
                                                  size_t& width) const
{
    auto t = m_tables.find(table);
    const TableInfo* info = m_info.table(table);
    if (t == m_tables.end() || !info)
        return nullptr;
    auto d = t->second.matrices.find(dataset);
    if (d == t->second.matrices.end())
        return nullptr;
    width = std::max<size_t>(1, info->names.size());
    return &d->second;
}

Result<std::vector<float>> MemoryRunSource::readColumn(const std::string& table, const std::string& dataset,
                                                       int64_t column) const
{
    size_t width = 0;
    const std::vector<float>* values = matrix(table, dataset, width);
    if (!values)
        return missing(table, dataset);
    if (column < 0 || size_t(column) >= width)
        return Error{m_info.logPath + ": no column " + std::to_string(column) + " in /" + table + "/" + dataset};
    std::vector<float> out;
    out.reserve(values->size() / width);
    for (size_t k = size_t(column); k < values->size(); k += width)
        out.push_back((*values)[k]);
    return out;
}

Result<std::vector<float>> MemoryRunSource::readRow(const std::string& table, const std::string& dataset,
                                                    int64_t row) const
{
    return readBlock(table, dataset, row, 1);
}

Result<std::vector<float>> MemoryRunSource::readBlock(const std::string& table, const std::string& dataset,
                                                      int64_t rowBegin, int64_t rowCount) const
{
    size_t width = 0;
    const std::vector<float>* values = matrix(table, dataset, width);
    if (!values)
        return missing(table, dataset);
    const size_t begin = size_t(rowBegin) * width;
    const size_t end = size_t(rowBegin + rowCount) * width;
    if (rowBegin < 0 || rowCount < 0 || end > values->size())
        return Error{m_info.logPath + ": rows out of range in /" + table + "/" + dataset};
    return std::vector<float>(values->begin() + begin, values->begin() + end);
}

Result<std::vector<std::string>> MemoryRunSource::readStrings(const std::string& table,
                                                              const std::string& dataset) const
{
    auto t = m_tables.find(table);
    if (t == m_tables.end() || !t->second.strings.count(dataset))
        return missing(table, dataset);
    return t->second.strings.at(dataset);
}

} // namespace nanscope

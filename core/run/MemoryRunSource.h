#pragma once

// A run held in memory: what the readers of other tools' logs build (RunSourceBuilder), and what
// tests hand to the scan without writing an HDF5 file. Reads are bounds-checked copies.

#include "core/run/RunSource.h"

namespace nanscope {

class MemoryRunSource : public RunSource
{
public:
    explicit MemoryRunSource(RunInfo info = {});

    const RunInfo& info() const override { return m_info; }
    RunInfo& mutableInfo() { return m_info; }

    // A table of 1-D series (/scalars, or a table of its own logging rate), each as long as `steps`.
    void addSeriesTable(const std::string& name, std::vector<int64_t> steps,
                        std::map<std::string, std::vector<double>> series);
    // An [steps.size(), columns.size()] table (/layers, /buffers, ...), each dataset row-major.
    void addMatrixTable(const std::string& name, std::vector<std::string> columns, std::vector<int64_t> steps,
                        std::map<std::string, std::vector<float>> datasets, std::vector<std::string> kinds = {});
    // /events: one row per event (steps must not decrease).
    void addEvents(std::vector<int64_t> steps, std::vector<std::string> kinds, std::vector<std::string> messages);

    const std::vector<int64_t>& steps(const std::string& table) const override;
    Result<std::vector<double>> readSeries(const std::string& table, const std::string& dataset) const override;
    Result<std::vector<double>> readSeriesRows(const std::string& table, const std::string& dataset, int64_t rowBegin,
                                               int64_t rowCount) const override;
    Result<std::vector<float>> readColumn(const std::string& table, const std::string& dataset,
                                          int64_t column) const override;
    Result<std::vector<float>> readRow(const std::string& table, const std::string& dataset,
                                       int64_t row) const override;
    Result<std::vector<float>> readBlock(const std::string& table, const std::string& dataset, int64_t rowBegin,
                                         int64_t rowCount) const override;
    Result<std::vector<std::string>> readStrings(const std::string& table, const std::string& dataset) const override;

private:
    struct Table
    {
        std::vector<int64_t> steps;
        std::map<std::string, std::vector<double>> series;
        std::map<std::string, std::vector<float>> matrices;
        std::map<std::string, std::vector<std::string>> strings;
    };
    void replaceTableInfo(TableInfo info);
    Error missing(const std::string& table, const std::string& dataset) const;
    const std::vector<float>* matrix(const std::string& table, const std::string& dataset, size_t& width) const;

    RunInfo m_info;
    std::map<std::string, Table> m_tables;
};

} // namespace nanscope

// Values no training can produce: a negative norm, a negative count of NaN elements, a loss scale
// or learning rate below zero. A run.h5 written without chunk checksums (older recorders) can hold
// damaged bytes that read as such numbers; they are reported as damage to the file, never taken
// for training behaviour. A dataset whose chunks carry checksums (both recorders write them) is
// not read here: damage to it fails its checksum on any read, an error naming the dataset and its
// steps, so it cannot read as numbers. Reading it whole again would cost 40% of the scan's time on
// bench_scan's run, and find nothing a checksum does not.
#include "core/run/RunFormat.h"
#include "core/scan/ScanRules.h"

#include <cmath>

namespace nanscope::scan {

namespace {

namespace rf = runformat;

// Where a dataset held impossible values: how many, and the steps of the first and last.
struct DamagedSpan
{
    std::string dataset;
    int64_t count = 0;
    int64_t firstStep = 0;
    int64_t lastStep = 0;

    void add(int64_t step)
    {
        if (count++ == 0)
            firstStep = step;
        lastStep = step;
    }
};

bool impossible(double value)
{
    return std::isfinite(value) && value < 0;
}

void checkScalars(const RunScalars& scalars, std::vector<DamagedSpan>& spans)
{
    const std::pair<std::string, const std::vector<double>*> series[] = {
        {rf::scalarSeries(rf::scalar::kGradNorm), &scalars.gradNorm.raw}, {rf::scalarSeries("loss_scale"), &scalars.lossScale}, {rf::scalarSeries("lr"), &scalars.lr}};
    for (const auto& [name, values] : series) {
        DamagedSpan span{name};
        for (size_t r = 0; r < values->size() && r < scalars.steps.size(); ++r)
            if (impossible((*values)[r]))
                span.add(scalars.steps[r]);
        if (span.count)
            spans.push_back(span);
    }
}

Status checkTable(ScanContext& context, const char* table, const char* dataset, std::vector<float>& block,
                  std::vector<DamagedSpan>& spans)
{
    const ScanInputs& inputs = context.inputs;
    if (!inputs.hasDataset(table, dataset) || inputs.table(table)->isChecksummed(dataset))
        return Status::success();
    const std::vector<int64_t>& steps = inputs.steps(table);
    const int64_t rows = inputs.table(table)->rows;
    const size_t width = inputs.table(table)->names.size();
    DamagedSpan span{std::string(table) + "/" + dataset};
    for (int64_t begin = 0; begin < rows; begin += context.config.blockRows) {
        const int64_t count = std::min(context.config.blockRows, rows - begin);
        if (Status s = inputs.readBlockInto(table, dataset, begin, count, block); !s)
            return s;
        for (size_t k = 0; k < block.size(); ++k)
            if (impossible(block[k]))
                span.add(steps[size_t(begin) + k / width]);
    }
    if (span.count)
        spans.push_back(span);
    return Status::success();
}

} // namespace

Status detectDamagedValues(ScanContext& context)
{
    std::vector<DamagedSpan> spans;
    checkScalars(context.scalars, spans);
    std::vector<float>& block = context.inputs.blockBuffer(0); // for every dataset's blocks
    for (const char* dataset : {rf::column::kGradNorm, rf::column::kParamNorm, rf::column::kGradNonfinite})
        if (Status s = checkTable(context, rf::kLayers, dataset, block, spans); !s)
            return s;
    for (const char* dataset : {rf::column::kNan, rf::column::kInf})
        if (Status s = checkTable(context, rf::kActivations, dataset, block, spans); !s)
            return s;
    if (spans.empty())
        return Status::success();
    Incident incident;
    incident.kind = IncidentKind::DamagedData;
    incident.severity = Severity::Critical;
    DamagedDataFacts facts;
    int64_t total = 0;
    incident.onsetStep = spans.front().firstStep;
    int64_t last = spans.front().lastStep;
    for (const DamagedSpan& span : spans) {
        incident.onsetStep = std::min(incident.onsetStep, span.firstStep);
        last = std::max(last, span.lastStep);
        total += span.count;
        facts.places.push_back(span.dataset + " (" + std::to_string(span.count) + " values, steps " +
                               std::to_string(span.firstStep) + ".." + std::to_string(span.lastStep) + ")");
    }
    facts.count = total;
    auto& e = incident.evidence;
    e.series = spans.front().dataset;
    e.windowBeginStep = incident.onsetStep;
    e.windowEndStep = last;
    e.count = total;
    e.note = joinNames(facts.places, facts.places.size());
    applyDiagnosis(incident, diagnoseDamagedData(facts));
    context.report.incidents.push_back(std::move(incident));
    return Status::success();
}

} // namespace nanscope::scan

// Input batches with NaN/Inf, or with values orders of magnitude beyond the input's usual range
// (known fill and saturation values are named). Bad batches close in steps form one incident.
#include "core/scan/ScanRules.h"

#include "core/run/RunFormat.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace nanscope::scan {

namespace {

// Known fill and saturation values of data pipelines (int16, uint16, "missing" fills).
constexpr double kSentinels[] = {
    32767.0, 32768.0, 65535.0, 99999.0, 999999.0, 9999999.0, 99999999.0, 999999999.0, 3.4028234663852886e38};

struct BadRow
{
    size_t row;
    bool nonfinite;
    double magnitude;
    double typical; // log10
    std::string input;
    std::string note;
};

// The extreme value in words, naming a fill or saturation value when it is one.
std::string extremeValueNote(double magnitude, double typicalLog)
{
    std::string note = "largest magnitude " + numberText(magnitude, 10);
    for (double sentinel : kSentinels)
        if (std::fabs(magnitude - sentinel) <= 1e-6 * sentinel)
            note += ", the fill or saturation value " + numberText(sentinel, 10);
    return note + "; typically " + numberText(std::pow(10.0, typicalLog));
}

// The bad rows of one input column: non-finite counts, or a magnitude inputDecades above the
// column's median over the run.
void findBadRows(const std::vector<float>& nan, const std::vector<float>& inf, const std::vector<float>& lo,
                 const std::vector<float>& hi, size_t rows, const std::string& input, double inputDecades,
                 std::vector<BadRow>& bad)
{
    std::vector<double> magnitudes(rows, kNaN);
    std::vector<double> logs;
    for (size_t r = 0; r < rows; ++r) {
        double m = 0;
        bool any = false;
        for (const auto* v : {&lo, &hi})
            if (!v->empty() && std::isfinite((*v)[r])) {
                m = std::max(m, std::fabs(double((*v)[r])));
                any = true;
            }
        if (any) {
            magnitudes[r] = m;
            logs.push_back(log10Abs(m));
        }
    }
    const double typical = medianOf(logs);
    for (size_t r = 0; r < rows; ++r) {
        const bool nonfinite = (!nan.empty() && nan[r] > 0) || (!inf.empty() && inf[r] > 0);
        const double m = magnitudes[r];
        const bool extreme = std::isfinite(m) && std::isfinite(typical) && log10Abs(m) - typical >= inputDecades;
        if (nonfinite || extreme)
            bad.push_back({r, nonfinite, m, typical, input, extreme ? extremeValueNote(m, typical) : ""});
    }
}

// One incident for the bad rows [i, j), all within burst_gap_steps of each other.
Incident badInputIncident(const ScanContext& context, const std::vector<int64_t>& steps, const std::vector<BadRow>& bad,
                          size_t i, size_t j)
{
    Incident incident;
    incident.kind = IncidentKind::BadInput;
    incident.onsetStep = steps[bad[i].row];
    bool nonfinite = false;
    std::set<size_t> distinctRows;
    std::vector<std::string> names;
    double peak = 0;
    std::string note;
    for (size_t k = i; k < j; ++k) {
        nonfinite = nonfinite || bad[k].nonfinite;
        distinctRows.insert(bad[k].row);
        if (std::find(names.begin(), names.end(), bad[k].input) == names.end())
            names.push_back(bad[k].input);
        if (std::isfinite(bad[k].magnitude))
            peak = std::max(peak, bad[k].magnitude);
        if (note.empty())
            note = bad[k].note;
        LayerOnset onset{
            bad[k].input,      "inputs",
            steps[bad[k].row], bad[k].nonfinite ? kInf : log10Abs(bad[k].magnitude) - bad[k].typical,
            bad[k].nonfinite,  bad[k].nonfinite ? std::optional<int64_t>(steps[bad[k].row]) : std::nullopt};
        if (incident.evidence.layerOnsets.size() < size_t(context.config.maxLayersListed))
            incident.evidence.layerOnsets.push_back(onset);
    }
    incident.severity = nonfinite ? Severity::Critical : Severity::Warning;
    incident.layers = names;
    incident.evidence.series = nonfinite ? "inputs/nan, inputs/inf" : "inputs/min, inputs/max";
    incident.evidence.windowBeginStep = steps[bad[i].row];
    incident.evidence.windowEndStep = steps[bad[j - 1].row];
    incident.evidence.count = int64_t(distinctRows.size());
    if (peak > 0)
        incident.evidence.peak = peak;
    incident.evidence.note = note;
    BadInputFacts facts;
    facts.onsetStep = incident.onsetStep;
    facts.batches = distinctRows.size();
    facts.nonfinite = nonfinite;
    facts.inputs = names;
    facts.note = note;
    facts.inFirstBatch = incident.onsetStep <= context.report.firstStep + 1;
    facts.batchNote = context.batchNote(incident.onsetStep);
    applyDiagnosis(incident, diagnoseBadInput(facts));
    return incident;
}

} // namespace

Status detectBadInputs(ScanContext& context)
{
    namespace rf = runformat;
    const ScanInputs& inputs = context.inputs;
    const TableInfo* table = inputs.table(rf::kInputs);
    if (!table || table->rows == 0 || table->names.empty())
        return Status::success();
    const auto& steps = inputs.steps(rf::kInputs);
    const size_t rows = std::min<size_t>(steps.size(), size_t(table->rows));
    auto columns = inputs.readColumns(rf::kInputs, {rf::column::kNan, rf::column::kInf, rf::column::kMin, rf::column::kMax}, rows, context.config.blockRows);
    if (!columns)
        return Error{columns.error()};
    std::vector<BadRow> bad;
    for (size_t column = 0; column < table->names.size(); ++column) {
        static const std::vector<float> none;
        auto get = [&](const char* dataset) -> const std::vector<float>& {
            auto it = columns->find(dataset);
            return it == columns->end() ? none : it->second[column];
        };
        findBadRows(get(rf::column::kNan), get(rf::column::kInf), get(rf::column::kMin), get(rf::column::kMax), rows, table->names[column],
                    context.config.inputDecades, bad);
    }
    std::sort(bad.begin(), bad.end(), [](const BadRow& x, const BadRow& y) { return x.row < y.row; });
    size_t i = 0;
    while (i < bad.size()) {
        size_t j = i + 1;
        while (j < bad.size() && steps[bad[j].row] - steps[bad[j - 1].row] <= context.config.burstGapSteps)
            ++j;
        Incident incident = badInputIncident(context, steps, bad, i, j);
        context.badInputs.push_back(incident);
        context.report.incidents.push_back(std::move(incident));
        i = j;
    }
    return Status::success();
}

} // namespace nanscope::scan

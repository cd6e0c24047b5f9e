#include "core/importers/TrainingTextLogReader.h"

#include "core/run/RunFormat.h"

#include "core/importers/LossScaleSteps.h"
#include "core/importers/TextLogLines.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

namespace nanscope {

using namespace textlog;

namespace {

class TextLogParser {
public:
    explicit TextLogParser(const std::string& path)
        : m_path(path)
    {
        m_log.path = path;
    }

    void parseLine(std::string_view line, size_t number)
    {
        if (isOverflowLine(line))
            return parseOverflow(line, number);
        if (isStepReport(line))
            return parseStepReport(line, number);
        if (line.find("overflow on iteration") != std::string_view::npos
            || line.find("dynamic loss scale") != std::string_view::npos
            || line.find("No Grad overflow for") != std::string_view::npos)
            return parseFusedOptimizer(line, number);
        if (const size_t at = line.find("validation loss at iteration"); at != std::string_view::npos) {
            const size_t bar = line.find('|', at);
            if (const auto iteration = integerAt(line, at + 28); iteration && bar != std::string_view::npos)
                addFields(line.substr(bar), *iteration, "validation ", nullptr);
            return;
        }
        size_t fieldsStart = 0;
        if (const auto iteration = megatronIteration(line, &fieldsStart))
            return parseMegatronIteration(line, *iteration, fieldsStart, number);
        parseDsChat(line);
    }

    Result<ScalarLog> finish();

private:
    // ---- DeepSpeed ------------------------------------------------------------------------------
    void parseOverflow(std::string_view line, size_t number)
    {
        const std::optional<double> attempted = numberAfter(line, "Attempted loss scale:");
        if (fromOtherRank(line) || !attempted)
            return;
        ++m_trainingLines;
        ScaleChange change;
        change.line = number;
        change.time = leadingTimestamp(line);
        change.before = *attempted;
        change.after = numberAfter(line, "reducing to").value_or(*attempted);
        change.hysteresis = integerAfter(line, "hysteresis is");
        if (change.hysteresis)
            change.after = *attempted;
        change.reportsBefore = m_dsReports.size();
        m_megatronReportsBefore.push_back(m_megatronReports.size());
        m_currentScale = change.after;
        m_changes.push_back(change);
    }

    void parseStepReport(std::string_view line, size_t number)
    {
        const std::optional<int64_t> step = integerAfter(line, "step=");
        if (fromOtherRank(line) || !step)
            return;
        ++m_trainingLines;
        StepReport report { *step, integerAfter(line, "skipped="), leadingTimestamp(line), number };
        m_dsReports.push_back(report);
        m_lastReportedStep = report.step;
        if (report.skippedTotal)
            m_log.add("skipped_total", report.step, double(*report.skippedTotal));
        const size_t lrAt = findKey(line, "lr=[");
        if (lrAt == std::string_view::npos)
            return;
        std::vector<double> rates;
        for (size_t at = lrAt + 4, end = 0; at < line.size() && line[at] != ']'; at = end + 1) {
            const std::optional<double> rate = numberAt(line, at, &end);
            if (!rate)
                break;
            rates.push_back(*rate);
            end = skipSpaces(line, end);
            if (end >= line.size() || line[end] != ',')
                break;
        }
        if (!rates.empty())
            m_learningRates.push_back({ report.step, rates });
    }

    // The fused fp16 optimizer's lines, printed by every rank.
    void parseFusedOptimizer(std::string_view line, size_t number)
    {
        if (const auto iteration = integerAfter(line, "Grad overflow on iteration")) {
            if (m_seenIterations.insert(*iteration).second)
                m_overflowIterations.push_back(*iteration);
        } else if (const auto window = integerAfter(line, "No Grad overflow for");
                   window && *window < (int64_t(1) << 20)) {
            m_scaleWindow = *window;
        } else if (line.find("Increasing dynamic loss scale from") != std::string_view::npos) {
            const std::optional<double> from = numberAfter(line, "from"), to = numberAfter(line, "to");
            // Every rank prints the same increase: the first one moves the scale, the copies find it moved.
            if (!from || !to || (m_currentScale && *m_currentScale == *to))
                return;
            ScaleChange change;
            change.overflow = false;
            change.line = number;
            change.time = leadingTimestamp(line);
            change.before = *from;
            change.after = *to;
            change.reportsBefore = m_dsReports.size();
            m_megatronReportsBefore.push_back(m_megatronReports.size());
            m_currentScale = *to;
            m_changes.push_back(change);
        }
    }

    // ---- DeepSpeed-Chat -------------------------------------------------------------------------
    void parseDsChat(std::string_view line)
    {
        if (line.rfind("cmd = ", 0) == 0) {
            m_log.attributes["command"] = std::string(line.substr(6));
            if (const auto steps = integerAfter(line, "--gradient_accumulation_steps"); steps && *steps > 0)
                m_gradientAccumulation = *steps;
        } else if (line.rfind("Beginning of Epoch ", 0) == 0) {
            if (const auto batches = integerAfter(line, "Total Micro Batches");
                batches && *batches > 0 && *batches < (int64_t(1) << 30))
                m_microBatchesPerEpoch = *batches;
            if (const auto epochs = integerAt(line, line.find('/') + 1))
                m_log.attributes["num_train_epochs"] = std::to_string(*epochs);
        } else if (line.find("***** Evaluating") != std::string_view::npos) {
            if (const auto epoch = integerAfter(line, "Epoch"))
                m_evalStep = epochEndStep(*epoch);
        } else if (line.rfind("ppl:", 0) == 0) {
            if (const auto ppl = numberAt(line, 4))
                m_log.add("ppl", m_evalStep.value_or(m_lastReportedStep), *ppl);
        } else if (line.find("(higher is better)") != std::string_view::npos) {
            // "chosen_last_scores (higher is better) : 2.81, acc (higher is better) : 0.49"
            for (size_t start = 0; start < line.size();) {
                const size_t comma = std::min(line.find(',', start), line.size());
                const std::string_view part = line.substr(start, comma - start);
                const size_t colon = part.rfind(':');
                const std::string_view name = trimmed(part.substr(0, std::min(part.find('('), colon)));
                if (colon != std::string_view::npos && !name.empty())
                    if (const auto value = numberAt(part, colon + 1))
                        m_log.add(std::string(name), m_evalStep.value_or(m_lastReportedStep), *value);
                start = comma + 1;
            }
        } else if (line.rfind("Epoch ", 0) == 0 && line.find(" with loss ") != std::string_view::npos) {
            const auto epoch = integerAt(line, 6);
            const auto loss = numberAfter(line, "with loss");
            if (epoch && loss)
                m_log.add("epoch_loss", epochEndStep(*epoch), *loss);
        } else if (isDsChatLossLine(line) && !fromOtherRank(line)) {
            const auto epoch = integerAfter(line, "Epoch:"), step = integerAfter(line, "Step:");
            const auto loss = numberAfter(line, "loss =");
            if (!epoch || !step || !loss || *epoch >= (int64_t(1) << 20))
                return;
            ++m_trainingLines;
            // Step is the micro-batch index within the epoch; DeepSpeed's step counts optimizer steps from 1.
            if (m_microBatchesPerEpoch == 0 && *epoch > 0)
                m_lossStepsRestartEachEpoch = true;
            m_log.add("loss", (*epoch * m_microBatchesPerEpoch + *step) / m_gradientAccumulation + 1, *loss);
        }
    }

    // The optimizer step that ends epoch `epoch` (1-based "Epoch E/T"; 0 = before training).
    int64_t epochEndStep(int64_t epoch) const
    {
        if (m_microBatchesPerEpoch > 0 && epoch < (int64_t(1) << 20))
            return epoch * m_microBatchesPerEpoch / m_gradientAccumulation;
        return m_lastReportedStep;
    }

    // ---- Megatron-LM ----------------------------------------------------------------------------
    void parseMegatronIteration(std::string_view line, int64_t iteration, size_t fieldsStart, size_t number)
    {
        ++m_trainingLines;
        std::map<std::string, double> fields;
        addFields(line.substr(fieldsStart), iteration, "", &fields);
        const int64_t previous = m_megatronReports.empty() ? 0 : m_megatronReports.back().step;
        // A count larger than the interval it covers is damage: read as the whole interval (and never
        // more than 10000, since each skipped iteration becomes an event).
        const int64_t largest = std::min<int64_t>(std::max<int64_t>(1, iteration - previous), 10000);
        auto count = [&](const char* name) -> int64_t {
            const auto field = fields.find(name);
            if (field == fields.end() || !(field->second > 0))
                return 0;
            if (field->second > double(largest)) {
                m_log.warnings.push_back(m_path + ": line " + std::to_string(number) + ": " + name + " "
                    + formatScale(field->second) + " for iterations " + std::to_string(previous + 1) + ".."
                    + std::to_string(iteration) + "; read as " + std::to_string(largest));
                return largest;
            }
            return int64_t(field->second);
        };
        MegatronInterval interval { previous, iteration, count("number of skipped iterations"),
            count("number of nan iterations") };
        m_megatronSkippedTotal += interval.skipped;
        m_megatronReports.push_back(StepReport { iteration, m_megatronSkippedTotal, leadingTimestamp(line), number });
        m_megatronIntervals.push_back(interval);
        if (const auto scale = fields.find("loss scale"); scale != fields.end()) {
            if (m_megatronScale && scale->second < *m_megatronScale)
                m_log.events.push_back({ iteration, runformat::event::kLossScaleDecrease,
                    "loss scale " + formatScale(*m_megatronScale) + " -> " + formatScale(scale->second)
                        + " (between iterations " + std::to_string(previous) + " and " + std::to_string(iteration)
                        + ")" });
            m_megatronScale = scale->second;
        }
        if (const auto total = integerAt(line, line.find('/') + 1))
            m_log.attributes["max_steps"] = std::to_string(*total);
    }

    // "| lm loss: 7.1E+00 | loss scale: 65536.0 |": every field with a number, by its name.
    void addFields(std::string_view fields, int64_t step, const std::string& prefix, std::map<std::string, double>* out)
    {
        for (size_t start = 0; start < fields.size();) {
            const size_t bar = std::min(fields.find('|', start), fields.size());
            const std::string_view field = fields.substr(start, bar - start);
            const size_t colon = field.rfind(':');
            if (colon != std::string_view::npos) {
                size_t end = 0;
                const std::optional<double> value = numberAt(field, colon + 1, &end);
                const std::string name = prefix + std::string(trimmed(field.substr(0, colon)));
                if (value && trimmed(field.substr(end)).empty() && name.size() > prefix.size()) {
                    m_log.add(name, step, *value);
                    if (out)
                        (*out)[name] = *value;
                }
            }
            start = bar + 1;
        }
    }

    void addLearningRates();

    std::string m_path;
    ScalarLog m_log;
    size_t m_trainingLines = 0;
    // DeepSpeed
    std::vector<StepReport> m_dsReports;
    std::vector<ScaleChange> m_changes;
    std::vector<size_t> m_megatronReportsBefore; // per change, for logs whose only counter is Megatron's
    std::vector<int64_t> m_overflowIterations;
    std::set<int64_t> m_seenIterations;
    int64_t m_scaleWindow = 0;
    std::optional<double> m_currentScale;
    std::vector<std::pair<int64_t, std::vector<double>>> m_learningRates;
    int64_t m_lastReportedStep = 0;
    // DeepSpeed-Chat
    int64_t m_microBatchesPerEpoch = 0;
    int64_t m_gradientAccumulation = 1;
    std::optional<int64_t> m_evalStep;
    bool m_lossStepsRestartEachEpoch = false;
    // Megatron-LM
    std::vector<StepReport> m_megatronReports;
    std::vector<MegatronInterval> m_megatronIntervals;
    int64_t m_megatronSkippedTotal = 0;
    std::optional<double> m_megatronScale;
};

Result<ScalarLog> TextLogParser::finish()
{
    if (m_trainingLines == 0)
        return Error { m_path
            + ": no DeepSpeed or Megatron training lines found (overflow, step=N, iteration N/M or loss lines)" };
    m_log.format = m_megatronReports.empty() ? "DeepSpeed log" : "Megatron-LM log";
    // DeepSpeed's own step counter places its overflow lines; Megatron's iterations where it has none.
    const bool megatronCounter = m_dsReports.empty() && !m_megatronReports.empty();
    if (megatronCounter)
        for (size_t i = 0; i < m_changes.size(); ++i)
            m_changes[i].reportsBefore = m_megatronReportsBefore[i];
    const StepResolution resolution = resolveSteps(
        m_changes, megatronCounter ? m_megatronReports : m_dsReports, m_overflowIterations, m_scaleWindow, m_path);
    m_log.warnings.insert(m_log.warnings.end(), resolution.warnings.begin(), resolution.warnings.end());
    m_log.notes.insert(m_log.notes.end(), resolution.notes.begin(), resolution.notes.end());
    addLossScaleHistory(m_changes, m_log);
    const bool overflowLines
        = std::any_of(m_changes.begin(), m_changes.end(), [](const ScaleChange& c) { return c.overflow; });
    addMegatronSkips(m_megatronIntervals, !overflowLines, m_log);
    addLearningRates();
    if (m_lossStepsRestartEachEpoch)
        m_log.notes.push_back("the loss lines count steps within each epoch and the log does not say how many make an "
                              "epoch: their steps restart at each epoch");
    std::stable_sort(m_log.events.begin(), m_log.events.end(),
        [](const LoggedEvent& a, const LoggedEvent& b) { return a.step < b.step; });
    if (!m_changes.empty() || m_megatronScale)
        m_log.attributes["amp_dtype"] = "float16"; // only fp16 training scales its loss
    if (m_gradientAccumulation > 1)
        m_log.attributes["gradient_accumulation_steps"] = std::to_string(m_gradientAccumulation);
    if (m_scaleWindow > 0)
        m_log.attributes["loss_scale_window"] = std::to_string(m_scaleWindow);
    return std::move(m_log);
}

void TextLogParser::addLearningRates()
{
    std::set<size_t> differingGroups;
    for (const auto& [step, rates] : m_learningRates)
        for (size_t group = 1; group < rates.size(); ++group)
            if (rates[group] != rates[0])
                differingGroups.insert(group);
    for (const auto& [step, rates] : m_learningRates) {
        m_log.add("lr", step, rates[0]);
        for (size_t group : differingGroups)
            if (group < rates.size())
                m_log.add("lr[" + std::to_string(group) + "]", step, rates[group]);
    }
}

} // namespace

Result<ScalarLog> readTrainingTextLog(const std::string& path)
{
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) // a FIFO would block, a directory never ends
        return Error { path + (std::filesystem::exists(path, ec) ? ": not a regular file" : ": no such file") };
    std::ifstream file(path, std::ios::binary);
    if (!file)
        return Error { path + ": cannot open" };
    TextLogParser parser(path);
    std::string line;
    for (size_t number = 1; std::getline(file, line); ++number) {
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        parser.parseLine(line, number);
    }
    if (file.bad())
        return Error { path + ": read error" };
    return parser.finish();
}

bool looksLikeTrainingTextLog(const std::string& path)
{
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
        return false;
    std::ifstream file(path, std::ios::binary);
    std::string head(64 * 1024, '\0');
    file.read(head.data(), std::streamsize(head.size()));
    head.resize(size_t(file.gcount()));
    if (head.find('\0') != std::string::npos)
        return false; // binary
    std::string_view rest(head);
    while (!rest.empty()) {
        const size_t newline = std::min(rest.find('\n'), rest.size());
        const std::string_view line = rest.substr(0, newline);
        const bool deepSpeedPrefix = startsLikeLogLine(line, "")
            && (line.find("[deepspeed]") != std::string_view::npos
                || line.find("DeepSpeed info: version=") != std::string_view::npos);
        if (deepSpeedPrefix || isTrainingLine(line))
            return true;
        rest.remove_prefix(std::min(newline + 1, rest.size()));
    }
    return false;
}

} // namespace nanscope

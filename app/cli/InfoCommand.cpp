#include "app/cli/CliSupport.h"
#include "app/codecs/JsonNumbers.h"
#include "app/cli/Subcommands.h"

#include "core/run/RankSet.h"
#include "core/run/RunFormat.h"
#include "core/run/StepAxis.h"
#include "core/open/OpenRun.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>

#include <algorithm>
#include <map>
#include <set>

namespace nanscope::cli {

namespace {

// What each rank wrote about itself and how much it logged; the scan judges how each ended.
QJsonObject ranksJson(const RankSet& ranks)
{
    QJsonArray members;
    for (const RankMember& member : ranks.members()) {
        QJsonObject entry{{"rank", member.rank},
                          {"directory", fromStd(member.directory)},
                          {"recorded_state", toString(member.state)},
                          {"readable", member.run != nullptr},
                          {"error", fromStd(member.error)}};
        if (member.run) {
            const auto& steps = member.run->steps(runformat::kScalars);
            entry["scalar_rows"] = qint64(steps.size());
            entry["last_step"] = steps.empty() ? QJsonValue(QJsonValue::Null) : QJsonValue(qint64(steps.back()));
        }
        members.append(entry);
    }
    return QJsonObject{{"world_size", ranks.worldSize()}, {"shown", ranks.selectedRank()}, {"members", members}};
}

// `nanscope info --json`: the run's tables, attributes, source, checkpoints, batches and x axes.
QJsonObject runInfoJson(const RunSource& reader, const StepAxes& axes)
{
    const RunInfo& info = reader.info();
    const RankSet* ranks = reader.rankSet();
    auto axisJson = [](const StepAxis* axis) -> QJsonValue {
        if (!axis)
            return QJsonValue::Null;
        return QJsonObject{{"first_step", axis->firstStep()}, {"last_step", axis->lastStep()},
                           {"first", axis->firstValue()}, {"last", axis->lastValue()}};
    };

    auto steps = [](const std::map<int64_t, std::string>& files) {
        QJsonArray array;
        for (const auto& [step, path] : files)
            array.append(qint64(step));
        return array;
    };
    QJsonObject groups;
    for (const auto& table : info.tables) {
        QJsonObject group{{"rows", qint64(table.rows)}};
        QJsonArray columns;
        for (const auto& d : table.datasets)
            columns.append(fromStd(d));
        group["columns"] = columns;
        if (!table.names.empty()) {
            QJsonArray names;
            for (const auto& n : table.names)
                names.append(fromStd(n));
            group["names"] = names;
        }
        if (!table.kinds.empty()) {
            QJsonArray kinds;
            for (const auto& k : table.kinds)
                kinds.append(fromStd(k));
            group["kinds"] = kinds;
        }
        groups[fromStd(table.name)] = group;
    }
    QJsonObject attributes;
    for (const auto& [name, value] : info.attributes)
        attributes[fromStd(name)] = fromStd(value);
    const SourceDescription& source = info.source;
    QJsonObject sourceJson{{"format", fromStd(source.format)},     {"files", textArray(source.files)},
                           {"holds", textArray(source.holds)},       {"lacks", textArray(source.lacks)},
                           {"warnings", textArray(source.warnings)}, {"notes", textArray(source.notes)}};
    QJsonObject root{{"run_name", fromStd(info.runName)},
                     {"source", sourceJson},
                     {"replayable_steps", [&] {
                          QJsonArray array;
                          for (int64_t step : info.replayableSteps())
                              array.append(qint64(step));
                          return array;
                      }()},
                     {"format_version", info.formatVersion},
                     {"attributes", attributes},
                     {"groups", groups},
                     {"checkpoints", steps(info.checkpoints)},
                     {"checkpoint_forms", [&] {
                          QJsonObject forms;
                          for (const auto& [step, form] : info.checkpointForms)
                              forms[QString::number(step)] = fromStd(form.word);
                          return forms;
                      }()},
                     {"not_replayable", [&] {
                          QJsonArray array;
                          for (const auto& [step, path] : info.checkpoints)
                              if (info.batches.count(step) && !info.whyNotReplayable(step).empty())
                                  array.append(QJsonObject{{"step", qint64(step)},
                                                           {"why", fromStd(info.whyNotReplayable(step))}});
                          return array;
                      }()},
                     {"batches", steps(info.batches)},
                     {"x_axes", QJsonObject{{runformat::kWallTime, axisJson(axes.axis(StepAxisKind::WallTime))},
                                            {"epoch", axisJson(axes.axis(StepAxisKind::Epoch))}}}};
    if (ranks)
        root["ranks"] = ranksJson(*ranks);
    return root;
}

// `nanscope info`, as text.
void printRunInfo(const RunSource& reader, const StepAxes& axes)
{
    const RunInfo& info = reader.info();
    const RankSet* ranks = reader.rankSet();
    out() << "run        " << fromStd(info.runName) << "\n";
    out() << "source     " << fromStd(info.source.format) << "\n";
    for (const auto& file : info.source.files)
        if (file != info.logPath)
            out() << "           " << fromStd(file) << "\n";
    out() << "log        " << fromStd(info.logPath) << (info.openedForSwmr ? "  (SWMR)" : "") << "\n";
    for (const auto& [name, value] : info.attributes)
        if (name != "run_name" && name != "format")
            out() << QString("%1 %2\n").arg(fromStd(name), -10).arg(fromStd(value));
    out() << "\n" << QString("%1 %2 %3  %4\n").arg("group", -16).arg("rows", 8).arg("cols", 5).arg("datasets");
    for (const auto& t : info.tables) {
        QStringList datasets;
        for (const auto& d : t.datasets)
            datasets << fromStd(d);
        const auto& steps = reader.steps(t.name);
        QString span = steps.empty() ? QString("-") : QString("steps %1..%2").arg(steps.front()).arg(steps.back());
        out() << QString("%1 %2 %3  %4  [%5]\n")
                     .arg("/" + fromStd(t.name), -16)
                     .arg(t.rows, 8)
                     .arg(t.names.empty() ? QString("-") : QString::number(t.names.size()), 5)
                     .arg(datasets.join(", "))
                     .arg(span);
    }
    auto list = [](const std::map<int64_t, std::string>& files) {
        QStringList s;
        for (const auto& [step, path] : files)
            s << QString::number(step);
        return s.isEmpty() ? QString("none") : s.join(", ");
    };
    out() << "\ncheckpoints " << list(info.checkpoints) << "\n";
    if (!info.checkpointForms.empty()) {
        std::map<std::string, QStringList> byForm;
        std::map<std::string, std::string> lastWhy; // each form's reason, as its latest checkpoint gives it
        std::set<std::string> stateDictWords;
        for (const auto& [step, form] : info.checkpointForms) {
            byForm[form.word] << QString::number(step);
            if (form.kind == CheckpointForm::Kind::StateDict)
                stateDictWords.insert(form.word);
            if (!form.whyNotReplayable.empty())
                lastWhy[form.word] = form.whyNotReplayable;
        }
        // A state_dict is no program: say how replay runs it (eagerly, by the run's factory) and why.
        const std::string factory = info.eagerReplayFactory();
        for (const auto& [word, formSteps] : byForm) {
            out() << QString("  %1 %2\n").arg(fromStd(word), -10).arg(formSteps.join(", "));
            if (stateDictWords.count(word) && !factory.empty())
                out() << "             replayed eagerly: " << fromStd(factory) << " rebuilds the model\n";
            if (auto why = lastWhy.find(word); why != lastWhy.end())
                out() << "             " << fromStd(why->second) << "\n";
        }
    }
    out() << "batches     " << list(info.batches) << "\n";
    // One line per reason: a run whose every checkpoint is a state_dict gives each the same one,
    // with its own step in it; the later steps are listed after the first's full reason.
    std::vector<std::pair<QString, QStringList>> reasons; // the reason, with its step as "{}"; steps
    std::map<QString, std::string> firstReason;
    for (const auto& [step, path] : info.checkpoints) {
        if (!info.batches.count(step))
            continue;
        const std::string why = info.whyNotReplayable(step);
        if (why.empty())
            continue;
        QString key = fromStd(why);
        key.replace(QRegularExpression("\\b" + QString::number(step) + "\\b"), "{}");
        auto found = std::find_if(reasons.begin(), reasons.end(), [&](const auto& r) { return r.first == key; });
        if (found == reasons.end()) {
            reasons.push_back({key, {QString::number(step)}});
            firstReason[key] = why;
        } else {
            found->second << QString::number(step);
        }
    }
    for (const auto& [key, steps] : reasons) {
        out() << "not replayable: step " << steps.front() << ": " << fromStd(firstReason[key]) << "\n";
        if (steps.size() > 1)
            out() << "not replayable: step" << (steps.size() > 2 ? "s " : " ") << steps.mid(1).join(", ")
                  << ": the same, each for its own checkpoint\n";
    }
    QStringList axisLines;
    if (const StepAxis* wall = axes.axis(StepAxisKind::WallTime))
        axisLines << QString("wall time (%1 from step %2 to %3)")
                         .arg(fromStd(formatElapsed(wall->lastValue() - wall->firstValue())))
                         .arg(wall->firstStep())
                         .arg(wall->lastStep());
    if (const StepAxis* epoch = axes.axis(StepAxisKind::Epoch))
        axisLines << QString("%1 to %2").arg(fromStd(epoch->format(epoch->firstValue())),
                                             fromStd(epoch->format(epoch->lastValue())));
    out() << "x axes      " << (axisLines.isEmpty() ? QString("step only") : "step, " + axisLines.join(", ")) << "\n";
    for (const std::string& note : axes.notes)
        out() << "            " << fromStd(note) << "\n";
    auto section = [](const char* title, const std::vector<std::string>& lines) {
        if (lines.empty())
            return;
        out() << "\n" << title << "\n";
        for (const auto& line : lines)
            out() << "  - " << fromStd(line) << "\n";
    };
    section("holds", info.source.holds);
    section("lacks", info.source.lacks);
    section("warnings", info.source.warnings);
    section("notes", info.source.notes);
    if (ranks) {
        out() << "\nranks (" << ranks->worldSize() << ", showing " << ranks->selectedRank() << ")\n";
        for (const RankMember& member : ranks->members())
            out() << QString("  %1  %2  %3  %4\n")
                         .arg(member.rank, 5)
                         .arg(toString(member.state), -9)
                         .arg(member.run ? QString("%1 scalar rows").arg(member.run->steps(runformat::kScalars).size())
                                         : QString("unreadable"),
                              -18)
                         .arg(fromStd(member.run ? member.directory : member.error));
    }
}

} // namespace

int runInfo(const QStringList& arguments)
{
    QCommandLineParser parser;
    parser.setApplicationDescription("Show what a run directory holds: tables, row counts, checkpoints, batches.");
    parser.addPositionalArgument("RUN", kRunArgumentHelp);
    parser.addOption({"json", "Print JSON instead of text."});
    parser.addOption(rankOption());
    int code = 0;
    if (!parse(parser, arguments, code))
        return code;
    QString error;
    const std::unique_ptr<RunSource> reader = openRunArgument(parser, "info", error);
    if (!reader)
        return fail(error);
    // Wall time and epoch, where logged: the window's other x axes.
    auto axes = readStepAxes(*reader);
    if (!axes)
        return fail(fromStd(axes.error()));
    if (parser.isSet("json"))
        out() << QJsonDocument(runInfoJson(*reader, *axes)).toJson(QJsonDocument::Indented);
    else
        printRunInfo(*reader, *axes);
    return kExitOk;
}

} // namespace nanscope::cli

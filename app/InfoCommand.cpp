#include "CliSupport.h"
#include "Subcommands.h"

#include "core/run/RunReader.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <map>

namespace nanscope::cli {

int runInfo(const QStringList& arguments)
{
    QCommandLineParser parser;
    parser.setApplicationDescription("Show what a run directory holds: tables, row counts, checkpoints, batches.");
    parser.addPositionalArgument("RUN_DIR", "The run directory (holding run.h5).");
    parser.addOption({"json", "Print JSON instead of text."});
    int code = 0;
    if (!parse(parser, arguments, code))
        return code;
    if (parser.positionalArguments().size() != 1)
        return fail("info takes one RUN_DIR\n" + helpText(parser));

    auto reader = RunReader::open(parser.positionalArguments().first().toStdString());
    if (!reader)
        return fail(fromStd(reader.error()));
    const RunInfo& info = (*reader)->info();

    auto steps = [](const std::map<int64_t, std::string>& files) {
        QJsonArray array;
        for (const auto& [step, path] : files)
            array.append(qint64(step));
        return array;
    };
    if (parser.isSet("json")) {
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
        QJsonObject root{{"run_name", fromStd(info.runName)},
                         {"format_version", info.formatVersion},
                         {"attributes", attributes},
                         {"groups", groups},
                         {"checkpoints", steps(info.checkpoints)},
                         {"batches", steps(info.batches)}};
        out() << QJsonDocument(root).toJson(QJsonDocument::Indented);
        return kExitOk;
    }

    out() << "run        " << fromStd(info.runName) << "\n";
    out() << "log        " << fromStd(info.logPath) << (info.openedForSwmr ? "  (SWMR)" : "") << "\n";
    for (const auto& [name, value] : info.attributes)
        if (name != "run_name" && name != "format")
            out() << QString("%1 %2\n").arg(fromStd(name), -10).arg(fromStd(value));
    out() << "\n" << QString("%1 %2 %3  %4\n").arg("group", -12).arg("rows", 8).arg("cols", 5).arg("datasets");
    for (const auto& t : info.tables) {
        QStringList datasets;
        for (const auto& d : t.datasets)
            datasets << fromStd(d);
        const auto& steps = (*reader)->steps(t.name);
        QString span = steps.empty() ? QString("-") : QString("steps %1..%2").arg(steps.front()).arg(steps.back());
        out() << QString("%1 %2 %3  %4  [%5]\n")
                     .arg("/" + fromStd(t.name), -12)
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
    out() << "batches     " << list(info.batches) << "\n";
    return kExitOk;
}


} // namespace nanscope::cli

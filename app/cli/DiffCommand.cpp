#include "app/codecs/CheckpointJson.h"
#include "app/cli/CliSupport.h"
#include "app/codecs/JsonNumbers.h"
#include "app/cli/Subcommands.h"

#include "core/NumberText.h"
#include "core/checkpoint/CheckpointDiff.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace nanscope::cli {

int runDiff(const QStringList& arguments)
{
    QCommandLineParser parser;
    parser.setApplicationDescription("Compare two checkpoints of one model: per tensor the relative update "
                                     "||B - A|| / ||A|| and where NaN or Inf values appeared.");
    parser.addPositionalArgument("A", "The earlier checkpoint.");
    parser.addPositionalArgument("B", "The later checkpoint.");
    parser.addOption({"json", "Print JSON instead of a table."});
    int code = 0;
    if (!parse(parser, arguments, code))
        return code;
    if (parser.positionalArguments().size() != 2)
        return fail("diff takes two checkpoint files, A and B\n" + helpText(parser));

    const std::string pathA = parser.positionalArguments()[0].toStdString();
    const std::string pathB = parser.positionalArguments()[1].toStdString();
    auto a = readCheckpoint(pathA);
    if (!a)
        return fail(fromStd(a.error()));
    auto b = readCheckpoint(pathB);
    if (!b)
        return fail(fromStd(b.error()));
    const CheckpointDiff diff = diffCheckpoints(*a, *b);

    if (parser.isSet("json")) {
        QJsonArray tensors;
        QJsonArray mismatched;
        for (const TensorDiff& d : diff.tensors) {
            if (!d.comparable) {
                mismatched.append(QJsonObject{{"name", fromStd(d.name)},
                                              {"shape_a", shapeToJson(d.shapeA)},
                                              {"shape_b", shapeToJson(d.shapeB)}});
                continue;
            }
            tensors.append(tensorDiffToJson(d));
        }
        QJsonObject root{{"a", fromStd(pathA)},
                         {"b", fromStd(pathB)},
                         {"format_a", checkpointFormatName(a->format)},
                         {"format_b", checkpointFormatName(b->format)},
                         {"tensors", tensors},
                         {"shape_mismatch", mismatched},
                         {"only_in_a", textArray(diff.onlyInA)},
                         {"only_in_b", textArray(diff.onlyInB)}};
        out() << QJsonDocument(root).toJson(QJsonDocument::Indented);
        return kExitOk;
    }

    int nameWidth = 6;
    for (const auto& d : diff.tensors)
        nameWidth = std::min(48, std::max(nameWidth, int(d.name.size())));
    out() << "A " << fromStd(pathA) << "\nB " << fromStd(pathB) << "\n\n";
    out() << QString("%1 %2 %3 %4 %5  %6\n")
                 .arg("tensor", -nameWidth)
                 .arg("||A||", 10)
                 .arg("||B||", 10)
                 .arg("||B-A||/||A||", 14)
                 .arg("new NaN/Inf", 11)
                 .arg("note");
    for (const auto& d : diff.tensors) {
        if (!d.comparable) {
            out() << QString("%1 shapes differ\n").arg(fromStd(d.name), -nameWidth);
            continue;
        }
        QString note;
        if (d.becameNonfinite)
            note = QString("%1 value(s) turned NaN/Inf").arg(d.becameNonfinite);
        else if (d.nonfiniteB)
            note = QString("%1 NaN/Inf (already in A)").arg(d.nonfiniteB);
        out() << QString("%1 %2 %3 %4 %5  %6\n")
                     .arg(fromStd(d.name), -nameWidth)
                     .arg(fromStd(numberText(d.normA, 4)), 10)
                     .arg(fromStd(numberText(d.normB, 4)), 10)
                     .arg(d.relativeUpdate ? fromStd(numberText(*d.relativeUpdate, 4)) : QString("-"), 14)
                     .arg(d.becameNonfinite, 11)
                     .arg(note);
    }
    for (const auto& name : diff.onlyInA)
        out() << "only in A: " << fromStd(name) << "\n";
    for (const auto& name : diff.onlyInB)
        out() << "only in B: " << fromStd(name) << "\n";
    return kExitOk;
}

} // namespace nanscope::cli

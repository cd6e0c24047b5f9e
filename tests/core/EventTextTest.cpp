// The /events messages come from one table both recorders fill (run_format.json, "event_texts"):
// each case of tests/data/event_text_cases.json is filled here by the C++ Guard's functions
// (core/record/EventText), and by the Python recorder's event_text in
// tests/python/test_run_format_table.py, to the same bytes. Before the table the Guard wrote
// "non-finite loss (nan): optimizer step skipped" where the Python recorder wrote "non-finite
// loss (nan)", and each worded a rollback its own way.
#include "core/record/EventText.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <gtest/gtest.h>

#include <set>

using namespace nanscope;

namespace {

double number(const QJsonValue& value)
{
    return value.isString() ? std::stod(value.toString().toStdString()) : value.toDouble();
}

std::string text(const QJsonValue& value)
{
    return value.toString().toStdString();
}

std::vector<std::string> texts(const QJsonValue& value)
{
    std::vector<std::string> out;
    for (const auto& item : value.toArray())
        out.push_back(text(item));
    return out;
}

std::string filled(const std::string& name, const QJsonObject& f)
{
    if (name == "nonfinite_loss")
        return eventtext::nonfiniteLoss(number(f["loss"]));
    if (name == "reason_nonfinite_loss")
        return eventtext::reasonNonfiniteLoss(number(f["loss"]));
    if (name == "reason_nonfinite_gradients")
        return eventtext::reasonNonfiniteGradients(size_t(f["count"].toInt()), text(f["first"]));
    if (name == "reason_norm_overflow")
        return eventtext::reasonNormOverflow();
    if (name == "skipped_step")
        return eventtext::skippedStep(text(f["reason"]));
    if (name == "update_applied")
        return eventtext::updateApplied(text(f["reason"]));
    if (name == "rollback") {
        std::vector<std::pair<double, double>> lrs;
        for (const auto& pair : f["lrs"].toArray())
            lrs.emplace_back(number(pair.toArray().at(0)), number(pair.toArray().at(1)));
        return eventtext::rollback(f["good_step"].toInt(), f["streak"].toInt(), f["step"].toInt(),
                                   number(f["factor"]), lrs);
    }
    if (name == "buffers_restored")
        return eventtext::buffersRestored(texts(f["layers"]), f["step"].toInt());
    if (name == "checkpoint")
        return eventtext::checkpoint(text(f["path"]), text(f["form"]));
    ADD_FAILURE() << "no C++ function fills event text " << name;
    return {};
}

QJsonObject json(const QString& relative)
{
    QFile file(QStringLiteral(NANSCOPE_SOURCE_DIR) + relative);
    EXPECT_TRUE(file.open(QIODevice::ReadOnly)) << relative.toStdString();
    return QJsonDocument::fromJson(file.readAll()).object();
}

} // namespace

TEST(EventText, TheGuardWordsEveryEventAsTheSharedCasesSay)
{
    const QJsonArray cases = json("/tests/data/event_text_cases.json")["cases"].toArray();
    ASSERT_FALSE(cases.isEmpty());
    for (const auto& item : cases) {
        const QJsonObject c = item.toObject();
        EXPECT_EQ(filled(text(c["text"]), c["fields"].toObject()), text(c["expected"])) << text(c["text"]);
    }
}

TEST(EventText, EveryTemplateOfTheTableHasACase)
{
    // A template added to the table without a case would be filled by nobody's test.
    const QJsonObject table = json("/python/nanscope_recorder/run_format.json")["event_texts"].toObject();
    std::set<std::string> covered;
    for (const auto& item : json("/tests/data/event_text_cases.json")["cases"].toArray())
        covered.insert(text(item.toObject()["text"]));
    for (const auto& name : table.keys())
        EXPECT_TRUE(covered.count(name.toStdString())) << name.toStdString() << " has no case";
}

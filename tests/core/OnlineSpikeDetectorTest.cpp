// The recorders' on-line spike rule on the cases the Python recorder is checked against too
// (tests/data/spike_rule_cases.json; tests/python/test_spike_rule.py): one rule in both languages.

#include "core/scan/OnlineSpikeDetector.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <gtest/gtest.h>

#include <limits>
#include <vector>

namespace nanscope {
namespace {

double valueOf(const QJsonValue& v)
{
    if (v.isDouble())
        return v.toDouble();
    const QString text = v.toString();
    if (text == "nan")
        return std::numeric_limits<double>::quiet_NaN();
    return text.startsWith('-') ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
}

TEST(OnlineSpikeDetector, JudgesTheSharedCasesAsThePythonRecorderDoes)
{
    QFile file(NANSCOPE_SOURCE_DIR "/tests/data/spike_rule_cases.json");
    ASSERT_TRUE(file.open(QIODevice::ReadOnly));
    const QJsonArray cases = QJsonDocument::fromJson(file.readAll()).object().value("cases").toArray();
    ASSERT_GE(cases.size(), 5);
    for (const QJsonValue& entry : cases) {
        const QJsonObject c = entry.toObject();
        OnlineSpikeDetector detector(c.value("mads").toDouble(), size_t(c.value("window").toInt()),
                                     size_t(c.value("least_history").toInt()));
        std::vector<int> spikes, expected;
        const QJsonArray values = c.value("values").toArray();
        for (int i = 0; i < values.size(); ++i)
            if (detector.isSpike(valueOf(values[i])))
                spikes.push_back(i);
        for (const QJsonValue& i : c.value("spikes").toArray())
            expected.push_back(i.toInt());
        EXPECT_EQ(spikes, expected) << c.value("name").toString().toStdString();
    }
}

} // namespace
} // namespace nanscope

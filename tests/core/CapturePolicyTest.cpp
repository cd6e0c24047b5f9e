// The incident capture policy of both recorders: its defaults are the table the Python recorder
// reads (python/nanscope_recorder/capture_policy.json), and its decisions on the shared cases
// (tests/data/capture_policy_cases.json, replayed by tests/python/test_capture_policy.py too).
#include "core/record/CapturePolicy.h"
#include "core/torch/Guard.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <gtest/gtest.h>

using namespace nanscope;

namespace {

QJsonObject readJson(const QString& relative)
{
    QFile file(QStringLiteral(NANSCOPE_SOURCE_DIR) + "/" + relative);
    EXPECT_TRUE(file.open(QIODevice::ReadOnly)) << relative.toStdString();
    return QJsonDocument::fromJson(file.readAll()).object();
}

const char* name(CapturePolicy::Capture capture)
{
    switch (capture) {
    case CapturePolicy::Capture::FirstNonfinite:
        return "first_nonfinite";
    case CapturePolicy::Capture::LaterNonfinite:
        return "later_nonfinite";
    case CapturePolicy::Capture::Spike:
        return "spike";
    case CapturePolicy::Capture::None:
        break;
    }
    return "";
}

} // namespace

TEST(CapturePolicy, DefaultsAreTheTableBothRecordersRead)
{
    const QJsonObject table = readJson("python/nanscope_recorder/capture_policy.json");
    ASSERT_FALSE(table.isEmpty());
    EXPECT_EQ(CaptureBudget::defaults().spikeCaptures, table["spike_captures"].toInt());
    EXPECT_EQ(CaptureBudget::defaults().laterNonfiniteCaptures, table["later_nonfinite_captures"].toInt());
    EXPECT_EQ(defaultSpikeMads(), table["spike_mads"].toDouble());
    EXPECT_EQ(defaultSpikeWindow(), table["spike_window"].toInt());
    const GuardOptions guard;
    EXPECT_EQ(guard.spikeCaptures, table["spike_captures"].toInt());
    EXPECT_EQ(guard.laterNonfiniteCaptures, table["later_nonfinite_captures"].toInt());
    EXPECT_EQ(guard.spikeMads, table["spike_mads"].toDouble());
    EXPECT_EQ(guard.spikeWindow, table["spike_window"].toInt());
}

TEST(CapturePolicy, DecidesTheSharedCasesAsThePythonRecorderDoes)
{
    const QJsonArray steps = readJson("tests/data/capture_policy_cases.json")["steps"].toArray();
    ASSERT_GE(steps.size(), 8);
    CapturePolicy policy;
    int index = 0;
    for (const auto& value : steps) {
        const QJsonObject step = value.toObject();
        const auto capture = policy.decide(step["finite"].toBool(), step["spike"].toBool());
        EXPECT_EQ(std::string(name(capture)), step["capture"].toString().toStdString()) << "case " << index;
        ++index;
    }
}

// Three ordinary bumps spent the old shared budget of 3, and the NaN that mattered was not saved.
TEST(CapturePolicy, WhichSpikeMadsTurnSpikeDetectionOnAsInThePythonRecorder)
{
    const QJsonArray cases = readJson("tests/data/capture_policy_cases.json")["spike_detection"].toArray();
    ASSERT_GE(cases.size(), 4);
    for (const QJsonValue& value : cases) {
        const QJsonObject c = value.toObject();
        if (c["spike_mads"].isNull())
            continue; // the Python recorder's None; a C++ option is always a number
        EXPECT_EQ(spikeDetectionOn(c["spike_mads"].toDouble()), c["on"].toBool()) << c["spike_mads"].toDouble();
    }
}

TEST(CapturePolicy, TheFirstNonfiniteStepIsCapturedWhateverTheSpikesSpent)
{
    CapturePolicy policy(CaptureBudget{3, 0});
    for (int i = 0; i < 10; ++i)
        policy.decide(true, true);
    EXPECT_EQ(policy.spikesCaptured(), 3);
    EXPECT_EQ(policy.decide(false, false), CapturePolicy::Capture::FirstNonfinite);
    EXPECT_EQ(policy.decide(false, false), CapturePolicy::Capture::None) << "later ones within their budget of 0";
    CapturePolicy everyOne(CaptureBudget{-1, -1});
    for (int i = 0; i < 100; ++i)
        EXPECT_NE(everyOne.decide(i % 2 == 0, true), CapturePolicy::Capture::None);
}

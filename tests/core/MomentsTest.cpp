// The one merge of moments (core/tensor/Moments.h) on the cases the Python recorder's
// merge_range_stats is checked against too (tests/data/moment_merge_cases.json,
// tests/python/test_recorder_stats.py): parts of one data set merged give the whole's mean and
// sample standard deviation, also where the parts' means are far apart and a sum of squares would
// lose every digit.
#include "core/tensor/Moments.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace nanscope;

namespace {

// Two passes in long double: the reference, computed the slow and obvious way.
MomentSums twoPass(const std::vector<double>& values)
{
    MomentSums m;
    m.count = int64_t(values.size());
    if (values.empty())
        return m;
    long double sum = 0, squares = 0;
    for (double v : values)
        sum += v;
    const long double mean = sum / values.size();
    for (double v : values)
        squares += (v - mean) * (v - mean);
    m.mean = double(mean);
    m.m2 = double(squares);
    return m;
}

double sampleStd(const MomentSums& m) { return m.count > 1 ? std::sqrt(m.m2 / double(m.count - 1)) : 0.0; }

} // namespace

TEST(Moments, PartsMergeIntoTheWholesMeanAndDeviationOnTheSharedCases)
{
    QFile file(NANSCOPE_SOURCE_DIR "/tests/data/moment_merge_cases.json");
    ASSERT_TRUE(file.open(QIODevice::ReadOnly));
    const QJsonArray cases = QJsonDocument::fromJson(file.readAll()).object().value("cases").toArray();
    ASSERT_GE(cases.size(), 5);
    for (const QJsonValue& entry : cases) {
        const QJsonObject c = entry.toObject();
        const std::string name = c.value("name").toString().toStdString();
        std::vector<double> whole;
        MomentSums merged;
        for (const QJsonValue& part : c.value("parts").toArray()) {
            std::vector<double> values;
            for (const QJsonValue& v : part.toArray())
                values.push_back(v.toDouble());
            whole.insert(whole.end(), values.begin(), values.end());
            merged = combineMoments(merged, twoPass(values));
        }
        const MomentSums expected = twoPass(whole);
        EXPECT_EQ(merged.count, expected.count) << name;
        EXPECT_NEAR(merged.mean, expected.mean, 1e-12 * std::fabs(expected.mean) + 1e-300) << name;
        // Values near 1e8 carry 1.5e-8 of rounding each: 1e-7 of the deviation is what the data holds, and
        // a sum of squares (1e18, rounded to 256) would miss by far more.
        EXPECT_NEAR(sampleStd(merged), sampleStd(expected), 1e-7 * sampleStd(expected)) << name;
    }
}

TEST(Moments, AnEmptyPartChangesNothing)
{
    const MomentSums part{3, 2.0, 8.0};
    const MomentSums left = combineMoments({}, part), right = combineMoments(part, {});
    EXPECT_EQ(left.count, 3);
    EXPECT_EQ(left.mean, 2.0);
    EXPECT_EQ(left.m2, 8.0);
    EXPECT_EQ(right.m2, 8.0);
}

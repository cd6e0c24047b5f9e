#include "AppTestSupport.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <gtest/gtest.h>

using namespace nanscope::test;

namespace {

QString checkpoint(const QString& run, int step)
{
    return QDir(demoRun(run)).filePath(QString("checkpoints/step_%1.pt").arg(step, 8, 10, QChar('0')));
}

QJsonObject parse(const ProcessResult& result)
{
    QJsonParseError error;
    const QJsonObject root = QJsonDocument::fromJson(result.out.toUtf8(), &error).object();
    EXPECT_EQ(error.error, QJsonParseError::NoError) << result.out.toStdString();
    return root;
}

} // namespace

TEST(StatsCommand, PoisonedRunningMeanIsAllNaNWithNullFigures)
{
    const auto result = runNanscope({"stats", checkpoint("batchnorm-poisoned", 250), "--json"});
    ASSERT_EQ(result.exitCode, 0) << result.err.toStdString();
    const QJsonObject root = parse(result);
    EXPECT_EQ(root["format"].toString(), "torchscript");
    bool found = false;
    for (const auto& value : root["tensors"].toArray()) {
        const QJsonObject t = value.toObject();
        if (t["name"].toString() != "bn1.running_mean")
            continue;
        found = true;
        EXPECT_EQ(t["nan"].toInteger(), t["numel"].toInteger());
        EXPECT_TRUE(t["mean"].isNull());
        EXPECT_TRUE(t["min"].isNull());
        EXPECT_EQ(t["inf"].toInteger(), t["posinf"].toInteger() + t["neginf"].toInteger());
    }
    EXPECT_TRUE(found);
}

TEST(StatsCommand, HealthyCheckpointHasNoFlags)
{
    const auto result = runNanscope({"stats", checkpoint("healthy", 100)});
    ASSERT_EQ(result.exitCode, 0) << result.err.toStdString();
    EXPECT_TRUE(result.out.contains("no flags")) << result.out.toStdString();
}

TEST(StatsCommand, NotACheckpointExitsTwoNamingTheFile)
{
    QTemporaryDir dir;
    QFile file(dir.filePath("weights.pt"));
    ASSERT_TRUE(file.open(QIODevice::WriteOnly));
    file.write("PK\x03\x04 truncated");
    file.close();
    const auto result = runNanscope({"stats", file.fileName()});
    EXPECT_EQ(result.exitCode, 2);
    EXPECT_TRUE(result.err.contains(file.fileName())) << result.err.toStdString();
}

TEST(StatsCommand, CudaWithoutAGpuIsAUsageErrorNotACrash)
{
    const auto result = runNanscope({"stats", checkpoint("healthy", 100), "--device", "cuda"});
    if (result.exitCode == 0)
        GTEST_SKIP() << "this LibTorch has a GPU";
    EXPECT_EQ(result.exitCode, 2);
    EXPECT_TRUE(result.err.contains("CUDA")) << result.err.toStdString();
}

TEST(DiffCommand, FindsWhereBatchNormTurnedNaN)
{
    const auto result = runNanscope({"diff", checkpoint("batchnorm-poisoned", 200), checkpoint("batchnorm-poisoned", 250), "--json"});
    ASSERT_EQ(result.exitCode, 0) << result.err.toStdString();
    const QJsonObject root = parse(result);
    bool found = false;
    for (const auto& value : root["tensors"].toArray()) {
        const QJsonObject t = value.toObject();
        if (t["name"].toString() == "bn1.running_mean") {
            found = true;
            EXPECT_GT(t["became_nonfinite"].toInteger(), 0);
        }
    }
    EXPECT_TRUE(found);
}

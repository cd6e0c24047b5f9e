// MLflow 3's local tracking store, mlflow.db (SQLite), on a real public store:
// tests/data/logs/1412010__nda-mlops-zoomcamp-2024__mlflow-db/SOURCE.md says where it comes from
// and what it holds. tests/python/test_framework_logs.py reads one written by a Trainer run.
#include "core/importers/LogReaderRegistry.h"
#include "core/importers/MlflowDatabaseReader.h"

#include "SourceTestSupport.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

using namespace nanscope;
using namespace nanscope::testing;

namespace {

const std::string kStore =
    std::string(NANSCOPE_LOG_FIXTURES) + "/1412010__nda-mlops-zoomcamp-2024__mlflow-db/mlflow.db";

std::vector<std::string> folderListing(const std::string& folder)
{
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(folder))
        names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

} // namespace

TEST(MlflowDatabaseReader, TheRealStoreIsSniffedAndItsLatestRunWithMetricsRead)
{
    const SniffedFile sniffed = sniffLogFile(kStore);
    ASSERT_NE(sniffed.reader, nullptr) << sniffed.refusal;
    EXPECT_STREQ(sniffed.reader->id, "mlflow-database");

    const auto before = folderListing(std::filesystem::path(kStore).parent_path().string());
    Result<ScalarLog> log = readMlflowDatabase(kStore);
    ASSERT_TRUE(log.ok()) << log.error();
    // SOURCE.md: 17 runs; the newest by start time logged nothing; the next, spiffy-donkey-347, one accuracy.
    EXPECT_EQ(log->attributes.at("mlflow_run_id"), "05e1247c0ded4579835ec988a587c5a2");
    EXPECT_EQ(log->attributes.at("run_name"), "spiffy-donkey-347");
    ASSERT_EQ(log->series.size(), 1u);
    EXPECT_EQ(pointCount(*log, "accuracy"), 1u);
    EXPECT_TRUE(anyContains(log->notes, "17 MLflow runs in the database; the latest that logged metrics"));
    EXPECT_TRUE(anyContains(log->notes, "1 newer logged none"));
    // Opened read-only: no journal, -shm or -wal file beside it.
    EXPECT_EQ(folderListing(std::filesystem::path(kStore).parent_path().string()), before);
}

TEST(MlflowDatabaseReader, AStoreWithoutMetricsOrNotSqliteIsAClearError)
{
    ScratchFolder folder;
    const std::string notSqlite = folder.write("mlflow.db", "SQLite format 3 but not really a database");
    Result<ScalarLog> refused = readMlflowDatabase(notSqlite);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().find(notSqlite), std::string::npos) << refused.error();

    // The real store cut after its first 4 KiB page: the schema page alone.
    std::ifstream in(kStore, std::ios::binary);
    std::string head(4096, '\0');
    in.read(head.data(), std::streamsize(head.size()));
    const std::string cut = folder.write("cut.db", head);
    Result<ScalarLog> damaged = readMlflowDatabase(cut);
    ASSERT_FALSE(damaged.ok());
    EXPECT_NE(damaged.error().find(cut), std::string::npos) << damaged.error();
}

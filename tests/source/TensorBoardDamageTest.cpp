// readTensorBoardEvents on damaged copies of real event files (cut, flipped bytes, an absurd
// length) and on files that are no event file: the damage is a warning naming the file, the record
// and its byte offset, and everything readable around it is kept.

#include "LogFileTestSupport.h"
#include "TfEventTestSupport.h"
#include "core/importers/TensorBoardReader.h"

#include <gtest/gtest.h>

#include <random>

using namespace nanscope;
using namespace nanscope::test;

namespace {

const char* kHfFolder = "10844110__t5-summarization-demo__trainer-state-and-tfevents";
const char* kLightningFolder = "192cm__Retail-Store-TFT__lightning-tfevents-healthy";

} // namespace

// A copy cut inside a record keeps exactly what a copy cut at that record's start holds.
TEST(TensorBoardReader, TruncatedCopyKeepsTheRecordsBeforeTheCut)
{
    NANSCOPE_REAL_LOG_OR_SKIP(folder, kLightningFolder);
    TempFolder temp;
    ASSERT_TRUE(temp.ok());
    const std::string original = fileIn(folder, "tfevents");
    const std::string bytes = readBytes(original);
    const std::vector<RecordSpan> records = recordsOf(original);
    ASSERT_EQ(records.size(), 1697u);
    const RecordSpan& cutRecord = records[1000];

    const std::string cut = temp.file("events.out.tfevents.cut");
    writeBytes(cut, bytes.substr(0, cutRecord.offset + cutRecord.size / 2));
    const std::string atBoundary = temp.file("events.out.tfevents.boundary");
    writeBytes(atBoundary, bytes.substr(0, cutRecord.offset));

    const Result<ScalarLog> damaged = readTensorBoardEvents(cut);
    const Result<ScalarLog> clean = readTensorBoardEvents(atBoundary);
    ASSERT_TRUE(damaged.ok()) << damaged.error();
    ASSERT_TRUE(clean.ok()) << clean.error();
    EXPECT_TRUE(clean->warnings.empty());
    ASSERT_EQ(damaged->warnings.size(), 1u);
    const std::string& warning = damaged->warnings[0];
    EXPECT_NE(warning.find(cut), std::string::npos) << warning;
    EXPECT_NE(warning.find("record 1001 (byte " + std::to_string(cutRecord.offset) + ")"), std::string::npos)
        << warning;
    EXPECT_NE(warning.find("truncated"), std::string::npos) << warning;
    EXPECT_GT(totalPoints(*damaged), 900u);
    EXPECT_EQ(totalPoints(*damaged), totalPoints(*clean));
    EXPECT_EQ(damaged->series.at("train_loss_step").back().step, clean->series.at("train_loss_step").back().step);
}

TEST(TensorBoardReader, FlippedDataByteSkipsOnlyThatRecord)
{
    NANSCOPE_REAL_LOG_OR_SKIP(folder, kHfFolder);
    TempFolder temp;
    ASSERT_TRUE(temp.ok());
    const std::string original = fileIn(folder, ".107869.0");
    const Result<ScalarLog> full = readTensorBoardEvents(original);
    ASSERT_TRUE(full.ok());
    const std::vector<RecordSpan> records = recordsOf(original);
    const RecordSpan& target = records[200];
    std::string bytes = readBytes(original);
    bytes[target.offset + 12 + 5] ^= 0x40; // inside the data, past the length and its CRC

    const std::string damagedPath = temp.file("events.out.tfevents.flipped");
    writeBytes(damagedPath, bytes);
    const Result<ScalarLog> damaged = readTensorBoardEvents(damagedPath);
    ASSERT_TRUE(damaged.ok()) << damaged.error();
    ASSERT_EQ(damaged->warnings.size(), 1u);
    EXPECT_NE(damaged->warnings[0].find(damagedPath + ": record 201 (byte " + std::to_string(target.offset) + ")"),
        std::string::npos)
        << damaged->warnings[0];
    EXPECT_NE(damaged->warnings[0].find("CRC-32C of the data"), std::string::npos);
    // HF writes one scalar per record: one point fewer, and the records after it all read.
    EXPECT_EQ(totalPoints(*damaged), totalPoints(*full) - 1);
    EXPECT_EQ(damaged->series.at("train/train_loss").size(), 1u) << "the last record is still read";
}

TEST(TensorBoardReader, BadLengthCrcOrAbsurdLengthStopsWithoutAllocating)
{
    NANSCOPE_REAL_LOG_OR_SKIP(folder, kHfFolder);
    TempFolder temp;
    ASSERT_TRUE(temp.ok());
    const std::string original = fileIn(folder, ".107869.0");
    const std::vector<RecordSpan> records = recordsOf(original);
    const RecordSpan& target = records[300];
    const std::string bytes = readBytes(original);
    const std::string boundary = temp.file("events.out.tfevents.boundary");
    writeBytes(boundary, bytes.substr(0, target.offset));
    const Result<ScalarLog> before = readTensorBoardEvents(boundary);
    ASSERT_TRUE(before.ok());

    // A length of 2^60 with a CRC that checks: only the file size can tell it is false.
    std::string huge = bytes;
    const std::string length = littleEndian(uint64_t(1) << 60, 8);
    huge.replace(target.offset, 12, length + littleEndian(maskCrc32c(crc32c(length.data(), 8)), 4));
    const std::string hugePath = temp.file("events.out.tfevents.huge");
    writeBytes(hugePath, huge);
    const Result<ScalarLog> hugeLog = readTensorBoardEvents(hugePath);
    ASSERT_TRUE(hugeLog.ok()) << hugeLog.error();
    ASSERT_EQ(hugeLog->warnings.size(), 1u);
    EXPECT_NE(hugeLog->warnings[0].find("record 301 (byte " + std::to_string(target.offset)
                  + "): truncated: the record claims 1152921504606846976 bytes"),
        std::string::npos)
        << hugeLog->warnings[0];
    EXPECT_EQ(totalPoints(*hugeLog), totalPoints(*before));

    // A flipped length byte: its CRC no longer checks, and nothing after it can be trusted.
    std::string flipped = bytes;
    flipped[target.offset] ^= 0x01;
    const std::string flippedPath = temp.file("events.out.tfevents.length");
    writeBytes(flippedPath, flipped);
    const Result<ScalarLog> flippedLog = readTensorBoardEvents(flippedPath);
    ASSERT_TRUE(flippedLog.ok()) << flippedLog.error();
    ASSERT_EQ(flippedLog->warnings.size(), 1u);
    EXPECT_NE(flippedLog->warnings[0].find("record 301"), std::string::npos);
    EXPECT_NE(flippedLog->warnings[0].find("CRC-32C of the length field"), std::string::npos);
    EXPECT_EQ(totalPoints(*flippedLog), totalPoints(*before));
}

TEST(TensorBoardReader, WhatIsNotAnEventFile)
{
    TempFolder temp;
    ASSERT_TRUE(temp.ok());
    const std::string text = temp.file("events.out.tfevents.notes");
    writeBytes(text, "this is a text file with a misleading name\n");
    const Result<ScalarLog> log = readTensorBoardEvents(text);
    ASSERT_FALSE(log.ok());
    EXPECT_NE(log.error().find(text), std::string::npos) << log.error();
    EXPECT_FALSE(isTensorBoardEventFile(text));

    const std::string empty = temp.file("events.out.tfevents.empty");
    writeBytes(empty, "");
    const Result<ScalarLog> emptyLog = readTensorBoardEvents(empty);
    ASSERT_TRUE(emptyLog.ok()) << "a writer that has not flushed yet";
    EXPECT_TRUE(emptyLog->empty());

    const std::string missing = temp.file("events.out.tfevents.missing");
    ASSERT_FALSE(readTensorBoardEvents(missing).ok());
    EXPECT_NE(readTensorBoardEvents(missing).error().find(missing), std::string::npos);

    NANSCOPE_REAL_LOG_OR_SKIP(folder, kHfFolder);
    const std::string real = fileIn(folder, ".107869.0");
    EXPECT_TRUE(isTensorBoardEventFile(real));
    const std::string renamed = temp.file("run.bin");
    writeBytes(renamed, readBytes(real));
    EXPECT_FALSE(isTensorBoardEventFile(renamed)) << "the name must say tfevents";
}

// Random damage anywhere (header, data, CRCs): a result or an error, never a crash or a hang, and
// every warning names the file.
TEST(TensorBoardReader, RandomDamageIsReportedNotFatal)
{
    NANSCOPE_REAL_LOG_OR_SKIP(folder, "jr7072__adl_hw3__eval-loss-nan");
    TempFolder temp;
    ASSERT_TRUE(temp.ok());
    const std::string original = readBytes(fileIn(folder, "tfevents"));
    std::mt19937 random(20240601);
    const std::string path = temp.file("events.out.tfevents.random");
    for (int trial = 0; trial < 300; ++trial) {
        std::string bytes = original;
        const int flips = 1 + int(random() % 8);
        for (int i = 0; i < flips; ++i)
            bytes[random() % bytes.size()] ^= char(1 + random() % 255);
        if (trial % 3 == 0)
            bytes.resize(random() % bytes.size());
        writeBytes(path, bytes);
        const Result<ScalarLog> log = readTensorBoardEvents(path);
        if (!log.ok()) {
            EXPECT_NE(log.error().find(path), std::string::npos) << log.error();
            continue;
        }
        for (const std::string& warning : log->warnings)
            EXPECT_EQ(warning.rfind(path + ": record ", 0), 0u) << warning;
    }
}

// A TF2 histogram whose first dimension times 3 wraps around 2^64 to the number of values given
// ([6148914691236517206, 3] with 2 values: 3 x that is 2^64 + 2) once passed the shape check and
// read its rows past the values' end. It is a histogram of an unexpected shape, skipped.
TEST(TensorBoardReader, HistogramShapeThatWrapsAroundIsSkipped)
{
    TempFolder temp;
    ASSERT_TRUE(temp.ok());
    const uint64_t wrapsToTwo = 6148914691236517206ull;
    ASSERT_EQ(wrapsToTwo * 3, 2u);
    std::string file = summaryEvent(1,
        Proto()
            .blob(1, "acts")
            .message(9, pluginMetadata("histograms"))
            .message(8, Proto().varint(1, 2).message(2, shape({ int64_t(wrapsToTwo), 3 })).packedDoubles(6, { 1, 2 })));
    // A sound histogram after it is still read.
    file += summaryEvent(2,
        Proto().blob(1, "acts").message(8, Proto().varint(1, 2).message(2, shape({ 1, 3 })).packedDoubles(6, { 5, 7, 2 })));
    const std::string path = temp.file("events.out.tfevents.wrapping-shape");
    writeBytes(path, file);

    const Result<ScalarLog> log = readTensorBoardEvents(path);
    ASSERT_TRUE(log.ok()) << log.error();
    ASSERT_EQ(log->histograms.count("acts"), 1u);
    ASSERT_EQ(log->histograms.at("acts").size(), 1u);
    EXPECT_EQ(log->histograms.at("acts")[0].step, 2);
    EXPECT_TRUE(hasNote(*log, "1 histogram tensor of an unexpected shape or type skipped"));
}

// The reader takes the file in large blocks: records that straddle a block's end, a record larger
// than a block (a 3 MiB graph), and a damaged record just past a block's end are all read as a
// record-by-record reader reads them. Simple values at steps 0..n-1, one of them damaged.
TEST(TensorBoardReader, RecordsAcrossReadBlocksAreAllRead)
{
    TempFolder temp;
    ASSERT_TRUE(temp.ok());
    constexpr int64_t kSteps = 60000; // about 2.4 MB of records: two block ends at least
    std::string file;
    int64_t damagedStep = -1;
    uint64_t damagedOffset = 0;
    for (int64_t step = 0; step < kSteps; ++step) {
        if (step == 2 * kSteps / 3)
            file += tfRecord(Proto().float64(1, 1).blob(4, std::string(size_t(3) << 20, 'g')).bytes);
        std::string record = summaryEvent(step, Proto().blob(1, "loss").float32(2, float(step)));
        if (damagedStep < 0 && file.size() > (size_t(1) << 20) + 100) {
            damagedStep = step;
            damagedOffset = file.size();
            record[12 + 3] ^= 0x10; // in the data: its CRC no longer checks
        }
        file += record;
    }
    // A last record cut short: the file ends inside it.
    file += summaryEvent(kSteps, Proto().blob(1, "loss").float32(2, 1.0f)).substr(0, 20);
    const std::string path = temp.file("events.out.tfevents.blocks");
    writeBytes(path, file);

    const Result<ScalarLog> log = readTensorBoardEvents(path);
    ASSERT_TRUE(log.ok()) << log.error();
    const auto& loss = log->series.at("loss");
    ASSERT_EQ(loss.size(), size_t(kSteps - 1));
    for (size_t i = 0; i < loss.size(); ++i) {
        const int64_t step = int64_t(i) + (int64_t(i) >= damagedStep ? 1 : 0);
        ASSERT_EQ(loss[i].step, step) << "point " << i;
        ASSERT_EQ(loss[i].value, double(step)) << "point " << i;
    }
    EXPECT_TRUE(hasNote(*log, "1 graph record skipped"));
    ASSERT_EQ(log->warnings.size(), 2u);
    EXPECT_NE(log->warnings[0].find("record " + std::to_string(damagedStep + 1) + " (byte " + std::to_string(damagedOffset)
                  + "): CRC-32C of the data does not match"),
        std::string::npos)
        << log->warnings[0] << " (record n holds step n-1 before the graph)";
    EXPECT_NE(log->warnings[1].find("truncated"), std::string::npos) << log->warnings[1];
}

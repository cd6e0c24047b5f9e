// The names both recorders write come from one table (python/nanscope_recorder/run_format.json),
// which the Python recorder reads at import: what the C++ side compiled in must be what that
// table says, and the step-file names it writes must read back. tests/python/test_run_format_table.py
// compares the files the two recorders actually write.
#include "core/run/CheckpointForm.h"
#include "core/run/RunFormat.h"
#include "core/torch/Guard.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <gtest/gtest.h>

#include <iterator>

using namespace nanscope;
namespace rf = nanscope::runformat;

namespace {

QJsonObject runFormatTable()
{
    QFile file(QStringLiteral(NANSCOPE_SOURCE_DIR) + "/python/nanscope_recorder/run_format.json");
    EXPECT_TRUE(file.open(QIODevice::ReadOnly));
    return QJsonDocument::fromJson(file.readAll()).object();
}

template <typename List>
QStringList names(const List& list)
{
    QStringList out;
    for (const char* name : list)
        out << QString::fromUtf8(name);
    return out;
}

} // namespace

TEST(RunFormatTable, TheCompiledNamesAreTheTablesThePythonRecorderReads)
{
    const QJsonObject table = runFormatTable();
    ASSERT_FALSE(table.isEmpty());
    const QJsonObject columns = table["columns"].toObject();
    EXPECT_EQ(names(rf::kLayersColumns), columns["layers"].toVariant().toStringList());
    EXPECT_EQ(names(rf::kActivationsColumns), columns["activations"].toVariant().toStringList());
    EXPECT_EQ(names(rf::kInputsColumns), columns["inputs"].toVariant().toStringList());
    EXPECT_EQ(names(rf::kBuffersColumns), columns["buffers"].toVariant().toStringList());
    EXPECT_EQ(names(rf::kEventsColumns), columns["events"].toVariant().toStringList());
    EXPECT_EQ(names(rf::event::kAll), table["event_kinds"].toVariant().toStringList());
    EXPECT_EQ(QString(rf::kStepFilePrefix), table["step_file_prefix"].toString());
    EXPECT_EQ(rf::kStepFileDigits, table["step_file_digits"].toInt());
    // The defences' defaults: a C++ Guard and a Python recorder given no options behave alike
    // (the Guard's snapshot interval was 20, the recorder's 50).
    const QJsonObject defaults = table["recorder_defaults"].toObject();
    const GuardOptions guard;
    EXPECT_EQ(guard.snapshotEvery, defaults["snapshot_every"].toInt());
    EXPECT_EQ(guard.rollbackLrFactor, defaults["rollback_lr_factor"].toDouble());
}

TEST(RunFormatTable, AStepFileNameReadsBackAsItsStepAndKind)
{
    EXPECT_EQ(rf::stepFileStem(42), "step_00000042");
    EXPECT_EQ(rf::stepFileStem(123456789), "step_123456789");
    const auto written = rf::parseStepFileName(rf::stepFileStem(1234) + ".pt");
    ASSERT_TRUE(written);
    EXPECT_EQ(written->step, 1234);
    EXPECT_EQ(written->extension, "pt");
    // Other tools do not pad: step_7.safetensors is step 7.
    const auto unpadded = rf::parseStepFileName("step_7.safetensors");
    ASSERT_TRUE(unpadded);
    EXPECT_EQ(unpadded->step, 7);
    EXPECT_EQ(unpadded->extension, "safetensors");
    // An unfinished write, another file, no digits, a step too long to be one: not step files.
    for (const char* name : {"step_00000042.pt.partial", "optimizer.pt", "step_.pt", "step_42", "step_42.",
                             "step_1234567890123456789.pt", "Step_42.pt", "step_4x2.pt"})
        EXPECT_FALSE(rf::parseStepFileName(name)) << name;
}

// A checkpoint's form file is written by both recorders and read here: the C++ Guard writes it
// through checkpointFormText, the Python recorder through run_format.checkpoint_form_text (held to
// the same cases by tests/python/test_run_format_table.py). The Guard wrote its literal before.
TEST(RunFormatTable, FormFilesAreWrittenAndReadAsTheSharedCasesSay)
{
    QFile file(QStringLiteral(NANSCOPE_SOURCE_DIR) + "/tests/data/checkpoint_form_cases.json");
    ASSERT_TRUE(file.open(QIODevice::ReadOnly));
    const QJsonArray cases = QJsonDocument::fromJson(file.readAll()).object()["cases"].toArray();
    ASSERT_GE(cases.size(), 5);
    const QStringList words = runFormatTable()["checkpoint_forms"].toVariant().toStringList();
    ASSERT_EQ(words.size(), 4);
    const CheckpointForm::Kind kinds[] = { CheckpointForm::Kind::Scripted, CheckpointForm::Kind::Traced,
                                           CheckpointForm::Kind::StateDict, CheckpointForm::Kind::Exported };
    for (const QJsonValue& value : cases) {
        const QJsonObject c = value.toObject();
        const std::string word = c["kind"].toString().toStdString();
        const int index = int(words.indexOf(c["kind"].toString()));
        ASSERT_GE(index, 0) << word << " is not a form of run_format.json";
        const std::string text = c["text"].toString().toStdString();
        EXPECT_EQ(checkpointFormText(kinds[index], c["why"].toString().toStdString()), text) << word;
        const CheckpointForm read = parseCheckpointForm(text);
        EXPECT_EQ(read.kind, kinds[index]) << text;
        EXPECT_EQ(read.word, word);
        EXPECT_EQ(read.whyNotReplayable, c["reads_as"].toString().toStdString()) << text;
    }
    EXPECT_THROW(checkpointFormText(CheckpointForm::Kind::Unknown), std::invalid_argument)
        << "a form without a word would be read back as another";
}

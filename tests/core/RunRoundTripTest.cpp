#include "TestRuns.h"

#include "core/run/RunReader.h"
#include "core/run/RunFormat.h"
#include "core/run/RunWriter.h"

#include <cmath>
#include <fstream>
#include <limits>

using namespace nanscope;

namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

RunSchema smallSchema()
{
    RunSchema schema;
    schema.attributes = {{"run_name", "roundtrip"}, {"amp_dtype", "float16"}};
    schema.scalars = {"loss", "grad_norm", "lr"};
    schema.layers = {"enc.weight", "enc.bias", "dec.weight"};
    schema.activations = {"enc", "dec"};
    schema.activationKinds = {"Linear", "Linear"};
    schema.buffers = {"bn"};
    schema.inputs = {"x"};
    return schema;
}

} // namespace

TEST(RunRoundTrip, EveryTableReadsBackWhatWasWritten)
{
    test::ScratchDir dir;
    {
        auto writer = RunWriter::create(dir.path(), smallSchema());
        ASSERT_TRUE(writer) << writer.error();
        for (int step = 0; step < 300; ++step) {
            const float s = float(step);
            ASSERT_TRUE((*writer)->appendScalars(step, {{"loss", 2.0 - step * 0.001}, {"grad_norm", s}, {"lr", 0.1}}));
            ASSERT_TRUE((*writer)->appendRow("layers", step,
                                             {{"grad_norm", {s, s * 2, step == 299 ? kNan : s * 3}},
                                              {"param_norm", {1, 2, 3}},
                                              {"grad_nonfinite", {0, 0, step == 299 ? 4.f : 0.f}}}));
            if (step % 10 == 0)
                ASSERT_TRUE((*writer)->appendRow("activations", step,
                                                 {{"min", {-s, -1}}, {"max", {s, step == 290 ? kInf : 1.f}}}));
        }
        ASSERT_TRUE((*writer)->appendEvent(299, "nonfinite_loss", "loss is nan"));
        ASSERT_TRUE((*writer)->close());
    }
    auto opened = RunReader::open(dir.path());
    ASSERT_TRUE(opened) << opened.error();
    RunReader& reader = **opened;
    const RunInfo& info = reader.info();
    EXPECT_EQ(info.runName, "roundtrip");
    EXPECT_EQ(info.formatVersion, 1);
    EXPECT_EQ(info.attributes.at("amp_dtype"), "float16");
    // A closed run opens plainly: SWMR reading is only for a file still marked open for write.
    EXPECT_FALSE(info.openedForSwmr);

    ASSERT_NE(reader.table("scalars"), nullptr);
    EXPECT_EQ(reader.table("scalars")->rows, 300);
    EXPECT_EQ(reader.table("layers")->names, (std::vector<std::string>{"enc.weight", "enc.bias", "dec.weight"}));
    EXPECT_EQ(reader.table("activations")->rows, 30);
    EXPECT_EQ(reader.table("activations")->kinds, (std::vector<std::string>{"Linear", "Linear"}));
    EXPECT_EQ(reader.steps("activations")[3], 30);
    EXPECT_EQ(reader.table("buffers")->rows, 0);

    auto loss = reader.readSeries("scalars", "loss");
    ASSERT_TRUE(loss);
    EXPECT_DOUBLE_EQ((*loss)[100], 2.0 - 100 * 0.001);

    auto column = reader.readColumn("layers", "grad_norm", 1);
    ASSERT_TRUE(column);
    ASSERT_EQ(column->size(), 300u);
    EXPECT_FLOAT_EQ((*column)[123], 246.f);

    auto row = reader.readRow("layers", "grad_norm", 299);
    ASSERT_TRUE(row);
    EXPECT_FLOAT_EQ((*row)[0], 299.f);
    EXPECT_TRUE(std::isnan((*row)[2])) << "NaN is data and must survive the round trip";

    auto maxes = reader.readColumn("activations", "max", 1);
    ASSERT_TRUE(maxes);
    EXPECT_TRUE(std::isinf((*maxes)[29]));
    auto unwritten = reader.readColumn("activations", "mean", 0);
    ASSERT_TRUE(unwritten);
    EXPECT_TRUE(std::isnan((*unwritten)[0])) << "a dataset left out of a row is written as NaN";

    auto block = reader.readBlock("layers", "grad_norm", 10, 2);
    ASSERT_TRUE(block);
    EXPECT_EQ(*block, (std::vector<float>{10, 20, 30, 11, 22, 33}));

    EXPECT_EQ(reader.table("events")->datasets, (std::vector<std::string>{"kind", "message"}));
    auto kinds = reader.readStrings("events", "kind");
    ASSERT_TRUE(kinds);
    EXPECT_EQ(*kinds, std::vector<std::string>{"nonfinite_loss"});

    EXPECT_FALSE(reader.readColumn("layers", "grad_norm", 7)) << "column out of range must be an error";
    EXPECT_FALSE(reader.readSeries("scalars", "no_such_scalar"));
}

TEST(RunRoundTrip, FindsCheckpointsAndBatchesByStep)
{
    test::ScratchDir dir;
    auto writer = RunWriter::create(dir.path(), smallSchema());
    ASSERT_TRUE(writer);
    ASSERT_TRUE((*writer)->appendScalars(0, {{"loss", 1}}));
    for (const std::string& path : {(*writer)->checkpointPath(1200), (*writer)->checkpointPath(50, ".safetensors"),
                                    (*writer)->batchPath(1234)})
        std::ofstream(path) << "x";
    std::ofstream(dir / "checkpoints/notes.txt") << "ignored";
    (*writer)->close();
    EXPECT_EQ(runformat::stepFileStem(1234), "step_00001234");

    auto reader = RunReader::open(dir.path());
    ASSERT_TRUE(reader);
    const auto& info = (*reader)->info();
    ASSERT_EQ(info.checkpoints.size(), 2u);
    EXPECT_TRUE(info.checkpoints.count(1200));
    EXPECT_TRUE(info.checkpoints.count(50));
    ASSERT_EQ(info.batches.size(), 1u);
    EXPECT_NE(info.batches.at(1234).find("step_00001234.pt"), std::string::npos);
}

TEST(RunRoundTrip, WriterRefusesToOverwriteARun)
{
    test::ScratchDir dir;
    ASSERT_TRUE(RunWriter::create(dir.path(), smallSchema()));
    auto second = RunWriter::create(dir.path(), smallSchema());
    ASSERT_FALSE(second);
    EXPECT_NE(second.error().find("already exists"), std::string::npos);
}

TEST(RunRoundTrip, WriterRejectsRowsOfTheWrongWidth)
{
    test::ScratchDir dir;
    auto writer = RunWriter::create(dir.path(), smallSchema());
    ASSERT_TRUE(writer);
    Status status = (*writer)->appendRow("layers", 0, {{"grad_norm", {1, 2}}});
    ASSERT_FALSE(status);
    EXPECT_NE(status.error().find("expected 3"), std::string::npos) << status.error();
}

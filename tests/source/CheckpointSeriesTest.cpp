// The checkpoint series and the optimizer state summary on checkpoints written by real torch code
// (CheckpointSeriesFixtures.h), as a user opening a Hugging Face or Lightning run would see them.
#include "core/run/LayerHeatmap.h"
#include "core/run/RunFormat.h"
#include "core/checkpoint/CheckpointReader.h"
#include "core/importers/CheckpointSeries.h"
#include "core/open/OpenRun.h"
#include "core/importers/CheckpointTables.h"
#include "core/importers/OptimizerState.h"
#include "tests/source/CheckpointSeriesFixtures.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

namespace nanscope {
namespace {

namespace fs = std::filesystem;

class CheckpointSeriesTest : public ::testing::Test
{
protected:
    static void SetUpTestSuite()
    {
        char pattern[] = "/tmp/nanscope-ckptseries-XXXXXX";
        if (!mkdtemp(pattern)) {
            s_skipReason = "cannot create a temporary folder";
            return;
        }
        s_root = pattern;
        const fs::path script = s_root / "make_fixtures.py";
        std::ofstream(script) << test::kCheckpointFixtureScript;
        const std::string command = "/usr/bin/python3 " + script.string() + " " + s_root.string() + " > "
            + (s_root / "fixtures.log").string() + " 2>&1";
        if (std::system(command.c_str()) != 0) {
            std::ifstream log(s_root / "fixtures.log");
            std::stringstream text;
            text << log.rdbuf();
            s_skipReason = "python3-torch could not write the fixtures: " + text.str();
        }
    }
    static void TearDownTestSuite()
    {
        std::error_code ignored;
        if (!s_root.empty())
            fs::remove_all(s_root, ignored);
    }
    void SetUp() override
    {
        if (!s_skipReason.empty())
            GTEST_SKIP() << s_skipReason;
    }

    static std::string path(const std::string& relative) { return (s_root / relative).string(); }
    static std::map<int64_t, std::string> hfFolders(
        std::initializer_list<int64_t> steps, const std::string& under = "hf")
    {
        std::map<int64_t, std::string> folders;
        for (int64_t step : steps)
            folders[step] = path(under + "/checkpoint-" + std::to_string(step));
        return folders;
    }
    static std::string joined(const std::vector<std::string>& lines)
    {
        std::string text;
        for (const auto& line : lines)
            text += line + "\n";
        return text;
    }

    static fs::path s_root;
    static std::string s_skipReason;
};
fs::path CheckpointSeriesTest::s_root;
std::string CheckpointSeriesTest::s_skipReason;

float cell(const std::vector<float>& matrix, size_t columns, size_t row, size_t column)
{
    return matrix.at(row * columns + column);
}

size_t columnOf(const std::vector<std::string>& names, const std::string& name)
{
    const auto it = std::find(names.begin(), names.end(), name);
    EXPECT_NE(it, names.end()) << name;
    return size_t(it - names.begin());
}

TEST_F(CheckpointSeriesTest, HuggingFaceFoldersShowTheNaNRowAndTheUpdateRatio)
{
    auto series = readCheckpointSeries(hfFolders({ 10, 20, 30, 40 }));
    ASSERT_TRUE(series.ok()) << series.error();
    EXPECT_EQ(series->steps, (std::vector<int64_t> { 10, 20, 30, 40 }));
    EXPECT_TRUE(series->warnings.empty()) << joined(series->warnings);
    // safetensors keeps no model order: natural name order, and said so.
    EXPECT_FALSE(series->parametersInModelOrder);
    EXPECT_EQ(series->parameters,
        (std::vector<std::string> { "embed.weight", "layers.0.bias", "layers.0.weight", "layers.1.bias",
            "layers.1.weight", "layers.10.weight" }));
    EXPECT_EQ(series->parameterShapes[2], (std::vector<int64_t> { 4, 4 }));

    const size_t columns = series->parameters.size();
    const auto& nonfinite = series->layerDatasets.at("param_nonfinite");
    const auto& norm = series->layerDatasets.at("param_norm");
    ASSERT_EQ(nonfinite.size(), 4 * columns);
    const size_t poisoned = columnOf(series->parameters, "layers.0.weight");
    for (size_t row = 0; row < 4; ++row)
        for (size_t column = 0; column < columns; ++column) {
            const bool nanHere = row == 2 && column == poisoned;
            EXPECT_EQ(cell(nonfinite, columns, row, column), nanHere ? 1.0f : 0.0f)
                << "row " << row << " column " << column;
            EXPECT_TRUE(std::isfinite(cell(norm, columns, row, column)));
        }

    // The first checkpoint has no update row; the others are measured against the one before.
    EXPECT_EQ(series->updateSteps, (std::vector<int64_t> { 20, 30, 40 }));
    EXPECT_EQ(series->updateBaseSteps, (std::vector<int64_t> { 10, 20, 30 }));
    const auto& ratio = series->updateDatasets.at("update_ratio");
    ASSERT_EQ(ratio.size(), 3 * columns);
    EXPECT_NEAR(cell(ratio, columns, 0, columnOf(series->parameters, "layers.1.weight")), 9.0, 1e-5);
    EXPECT_LT(cell(ratio, columns, 1, columnOf(series->parameters, "layers.1.bias")), 0.1);
}

TEST_F(CheckpointSeriesTest, TruncatedCheckpointIsLeftOutAndNamed)
{
    auto series = readCheckpointSeries(hfFolders({ 10, 20, 25, 30, 40 }));
    ASSERT_TRUE(series.ok()) << series.error();
    EXPECT_EQ(series->steps, (std::vector<int64_t> { 10, 20, 30, 40 }));
    ASSERT_EQ(series->warnings.size(), 1u) << joined(series->warnings);
    EXPECT_NE(series->warnings[0].find("checkpoint-25/model.safetensors"), std::string::npos) << series->warnings[0];
    EXPECT_NE(series->warnings[0].find("step 25"), std::string::npos) << series->warnings[0];
    // Step 30's update spans the damaged checkpoint.
    EXPECT_EQ(series->updateBaseSteps, (std::vector<int64_t> { 10, 20, 30 }));
}

TEST_F(CheckpointSeriesTest, ShardedCheckpointReadsEveryShardAndNamesAMissingOne)
{
    auto sharded = readCheckpointSeries(hfFolders({ 10, 20, 30 }, "sharded"));
    ASSERT_TRUE(sharded.ok()) << sharded.error();
    EXPECT_EQ(sharded->steps, (std::vector<int64_t> { 10, 20 }));
    ASSERT_EQ(sharded->warnings.size(), 1u) << joined(sharded->warnings);
    EXPECT_NE(sharded->warnings[0].find("model-00002-of-00002.safetensors is missing"), std::string::npos)
        << sharded->warnings[0];

    auto whole = readCheckpointSeries(hfFolders({ 10, 20 }));
    ASSERT_TRUE(whole.ok()) << whole.error();
    EXPECT_EQ(sharded->parameters, whole->parameters);
    EXPECT_EQ(sharded->layerDatasets, whole->layerDatasets);
    EXPECT_EQ(sharded->updateDatasets, whole->updateDatasets);
}

TEST_F(CheckpointSeriesTest, ReadingThePreviousCheckpointAgainGivesTheSameUpdates)
{
    // A budget of 0 bytes keeps nothing: every update reads the previous checkpoint's files again.
    for (const char* under : { "hf", "sharded" }) {
        auto kept = readCheckpointSeries(hfFolders({ 10, 20 }, under));
        auto reread = readCheckpointSeries(hfFolders({ 10, 20 }, under), {}, 0);
        ASSERT_TRUE(kept.ok() && reread.ok()) << under;
        EXPECT_EQ(kept->updateDatasets, reread->updateDatasets) << under;
        EXPECT_EQ(kept->updateSteps, reread->updateSteps) << under;
    }
}

TEST_F(CheckpointSeriesTest, LightningCheckpointShowsCollapsedBatchNormVariance)
{
    const std::string folder = path("lightning/checkpoints/");
    auto series = readCheckpointSeries({ { 5, folder + "epoch=0-step=5.ckpt" }, { 7, folder + "epoch=0-step=7.ckpt" },
        { 10, folder + "epoch=0-step=10.ckpt" } });
    ASSERT_TRUE(series.ok()) << series.error();
    EXPECT_EQ(series->steps, (std::vector<int64_t> { 5, 10 }));
    ASSERT_EQ(series->warnings.size(), 1u) << joined(series->warnings);
    EXPECT_NE(series->warnings[0].find("epoch=0-step=7.ckpt"), std::string::npos) << series->warnings[0];

    // The state_dict's tensors without their prefix, buffers apart, in the model's order.
    EXPECT_TRUE(series->parametersInModelOrder);
    EXPECT_EQ(series->parameters,
        (std::vector<std::string> { "conv.weight", "conv.bias", "bn.weight", "bn.bias", "fc.weight", "fc.bias" }));
    // Said once for the run, not once per checkpoint.
    const std::string notes = joined(series->notes);
    EXPECT_NE(notes.find("outside state_dict"), std::string::npos) << notes;
    EXPECT_EQ(notes.find("outside state_dict"), notes.rfind("outside state_dict")) << notes;
    EXPECT_NE(notes.find("the same in 1 more checkpoints"), std::string::npos) << notes;
    ASSERT_EQ(series->buffers, (std::vector<std::string> { "bn" }));
    const auto& varMin = series->bufferDatasets.at("running_var_min");
    const auto& varMax = series->bufferDatasets.at("running_var_max");
    EXPECT_GT(varMin[0], 0.0f);
    EXPECT_EQ(varMin[1], 0.0f);
    EXPECT_EQ(varMax[1], 0.0f);
    EXPECT_EQ(series->bufferDatasets.at("nonfinite"), (std::vector<float> { 0, 0 }));
    EXPECT_TRUE(std::isfinite(series->bufferDatasets.at("running_mean_max")[1]));
}

TEST_F(CheckpointSeriesTest, LightningOptimizerStatesTakeTheStateDictNames)
{
    const std::string ckpt = path("lightning/checkpoints/epoch=0-step=10.ckpt");
    auto series = readCheckpointSeries({ { 10, ckpt } });
    ASSERT_TRUE(series.ok()) << series.error();
    std::vector<ModelParameter> parameters;
    for (size_t i = 0; i < series->parameters.size(); ++i)
        parameters.push_back({ series->parameters[i], series->parameterShapes[i] });
    auto optimizer = readOptimizerState(ckpt, parameters);
    ASSERT_TRUE(optimizer.ok()) << optimizer.error();
    EXPECT_TRUE(optimizer->isAdam);
    EXPECT_TRUE(optimizer->namesMapped) << joined(optimizer->notes);
    ASSERT_EQ(optimizer->parameters.size(), parameters.size());
    for (size_t i = 0; i < parameters.size(); ++i)
        EXPECT_EQ(optimizer->parameters[i].name, parameters[i].name);
    EXPECT_EQ(optimizer->parameters[0].step, 2.0);
}

std::vector<ModelParameter> tinyModel()
{
    return { { "0.weight", { 3, 4 } }, { "0.bias", { 3 } }, { "2.weight", { 2, 3 } }, { "2.bias", { 2 } } };
}

TEST_F(CheckpointSeriesTest, AdamWStateGivesUpdateSizeAndEpsilonDomination)
{
    auto optimizer = readOptimizerState(path("opt/optimizer.pt"), tinyModel());
    ASSERT_TRUE(optimizer.ok()) << optimizer.error();
    EXPECT_TRUE(optimizer->isAdam);
    EXPECT_TRUE(optimizer->namesMapped) << joined(optimizer->notes);
    ASSERT_EQ(optimizer->parameters.size(), 4u);
    ASSERT_EQ(optimizer->groups.size(), 1u);
    EXPECT_DOUBLE_EQ(*optimizer->groups[0].lr, 1e-3);

    std::map<std::string, double> measured; // the update torch applied at the last step
    std::ifstream file(path("opt/last_update_rms.txt"));
    for (std::string name; file >> name;)
        file >> measured[name];
    for (const OptimizerParameterState& p : optimizer->parameters) {
        SCOPED_TRACE(p.name);
        ASSERT_TRUE(p.hasState && p.step && p.updateRms && p.epsilonDominatedShare);
        EXPECT_EQ(*p.step, 3.0);
        EXPECT_NEAR(*p.updateRms, measured.at(p.name), 1e-3 * 1e-3 + 1e-3 * measured.at(p.name));
    }
    const OptimizerParameterState& zeroGradient = optimizer->parameters[3];
    EXPECT_EQ(zeroGradient.name, "2.bias");
    EXPECT_EQ(*zeroGradient.epsilonDominatedShare, 1.0);
    EXPECT_EQ(*zeroGradient.updateRms, 0.0);
    const OptimizerParameterState& normal = optimizer->parameters[0];
    EXPECT_EQ(normal.name, "0.weight");
    EXPECT_EQ(normal.shape, (std::vector<int64_t> { 3, 4 }));
    EXPECT_EQ(*normal.epsilonDominatedShare, 0.0);
    EXPECT_NEAR(*normal.updateRms, 1e-3, 0.2e-3); // Adam's early steps move each element by about lr
    EXPECT_GT(*normal.expAvgRms, 0.0);
    EXPECT_GT(*normal.expAvgSqRootRms, 0.0);
}

TEST_F(CheckpointSeriesTest, TrainerWeightDecayGroupsStillMapNames)
{
    auto optimizer = readOptimizerState(path("opt/grouped_optimizer.pt"), tinyModel());
    ASSERT_TRUE(optimizer.ok()) << optimizer.error();
    EXPECT_TRUE(optimizer->namesMapped) << joined(optimizer->notes);
    std::vector<std::string> names;
    for (const auto& p : optimizer->parameters)
        names.push_back(p.name);
    EXPECT_EQ(names, (std::vector<std::string> { "0.weight", "2.weight", "0.bias", "2.bias" }));
    EXPECT_EQ(optimizer->parameters[2].group, 1u);

    // Names without shapes cannot tell the groups' order: indices, and a note saying why.
    auto unnamed = readOptimizerState(
        path("opt/grouped_optimizer.pt"), std::vector<std::string> { "0.weight", "0.bias", "2.weight", "2.bias" });
    ASSERT_TRUE(unnamed.ok()) << unnamed.error();
    EXPECT_FALSE(unnamed->namesMapped);
    EXPECT_EQ(unnamed->parameters[0].name, "param #0 [3, 4]");
    EXPECT_NE(joined(unnamed->notes).find("param groups"), std::string::npos) << joined(unnamed->notes);

    // A different model: counts disagree.
    auto other = readOptimizerState(path("opt/optimizer.pt"), std::vector<ModelParameter> { { "w", { 3, 4 } } });
    ASSERT_TRUE(other.ok()) << other.error();
    EXPECT_FALSE(other->namesMapped);
    EXPECT_NE(joined(other->notes).find("the model 1"), std::string::npos) << joined(other->notes);
}

TEST_F(CheckpointSeriesTest, TrainerFolderWithPytorchModelBinNamesItsOptimizerState)
{
    auto series = readCheckpointSeries(hfFolders({ 1, 2 }, "hfbin"));
    ASSERT_TRUE(series.ok()) << series.error();
    EXPECT_TRUE(series->parametersInModelOrder);
    EXPECT_EQ(series->parameters, (std::vector<std::string> { "0.weight", "0.bias", "2.weight", "2.bias" }));
    std::vector<ModelParameter> parameters;
    for (size_t i = 0; i < series->parameters.size(); ++i)
        parameters.push_back({ series->parameters[i], series->parameterShapes[i] });
    auto optimizer = readOptimizerState(path("hfbin/checkpoint-2/optimizer.pt"), parameters);
    ASSERT_TRUE(optimizer.ok()) << optimizer.error();
    EXPECT_TRUE(optimizer->namesMapped) << joined(optimizer->notes);
    EXPECT_EQ(optimizer->parameters[1].name, "2.weight");
    EXPECT_NE(joined(optimizer->notes).find("Hugging Face Trainer"), std::string::npos) << joined(optimizer->notes);
}

TEST_F(CheckpointSeriesTest, AdapterFromZeroHasAnInfiniteUpdateRatio)
{
    auto series = readCheckpointSeries(hfFolders({ 1, 2 }, "peft"));
    ASSERT_TRUE(series.ok()) << series.error();
    ASSERT_EQ(series->parameters,
        (std::vector<std::string> { "base_model.model.0.lora_A.weight", "base_model.model.0.lora_B.weight" }));
    const auto& ratio = series->updateDatasets.at("update_ratio");
    EXPECT_EQ(ratio, (std::vector<float> { 0.0f, std::numeric_limits<float>::infinity() }));
}

TEST_F(CheckpointSeriesTest, SgdStateIsSaidNotToBeAdam)
{
    auto optimizer = readOptimizerState(path("opt/sgd_optimizer.pt"), tinyModel());
    ASSERT_TRUE(optimizer.ok()) << optimizer.error();
    EXPECT_FALSE(optimizer->isAdam);
    EXPECT_NE(joined(optimizer->notes).find("momentum_buffer"), std::string::npos) << joined(optimizer->notes);
    EXPECT_FALSE(optimizer->parameters[0].updateRms);
}

TEST_F(CheckpointSeriesTest, NotAnOptimizerFileIsAnErrorNamingIt)
{
    const std::string model = path("lightning/checkpoints/epoch=0-step=7.ckpt");
    auto truncated = readOptimizerState(model, tinyModel());
    ASSERT_FALSE(truncated.ok());
    EXPECT_NE(truncated.error().find("epoch=0-step=7.ckpt"), std::string::npos) << truncated.error();
}

TEST_F(CheckpointSeriesTest, ModelParametersLeaveOutBuffersAndComeOnlyFromPickledStateDicts)
{
    // A Lightning checkpoint: its state_dict alone, without BatchNorm running statistics (buffers
    // the optimizer never sees) or num_batches_tracked.
    const std::string ckpt = path("lightning/checkpoints/epoch=0-step=10.ckpt");
    auto checkpoint = readCheckpoint(ckpt);
    ASSERT_TRUE(checkpoint.ok()) << checkpoint.error();
    std::vector<std::string> names;
    for (const ModelParameter& p : modelParametersOf(checkpoint->tensors))
        names.push_back(p.name);
    EXPECT_EQ(names, (std::vector<std::string> { "conv.weight", "conv.bias", "bn.weight", "bn.bias", "fc.weight",
                         "fc.bias" }));
    auto optimizer = readOptimizerState(ckpt, modelParametersOf(checkpoint->tensors));
    ASSERT_TRUE(optimizer.ok()) << optimizer.error();
    EXPECT_TRUE(optimizer->namesMapped) << joined(optimizer->notes);

    // A Trainer folder: pytorch_model.bin keeps the model's order.
    const ModelParametersFound bin = findModelParameters(path("hfbin/checkpoint-2"));
    EXPECT_EQ(bin.parameters.size(), 4u) << joined(bin.notes);
    EXPECT_NE(bin.source.find("pytorch_model.bin"), std::string::npos);
    // model.safetensors sorts by name: not read, and a note says why.
    const ModelParametersFound sorted = findModelParameters(path("hf/checkpoint-10"));
    EXPECT_TRUE(sorted.parameters.empty());
    EXPECT_NE(joined(sorted.notes).find("sorted by name"), std::string::npos) << joined(sorted.notes);
    // A folder with no model at all.
    const ModelParametersFound none = findModelParameters(path("opt"));
    EXPECT_TRUE(none.parameters.empty());
    EXPECT_FALSE(none.notes.empty());
}

TEST_F(CheckpointSeriesTest, ProgressCanCancel)
{
    std::vector<double> fractions;
    auto series = readCheckpointSeries(hfFolders({ 10, 20, 30 }), [&](double fraction, const std::string&) {
        fractions.push_back(fraction);
        return fractions.size() < 2;
    });
    ASSERT_FALSE(series.ok());
    EXPECT_NE(series.error().find("cancelled"), std::string::npos) << series.error();
    EXPECT_EQ(fractions.size(), 2u);
}

TEST_F(CheckpointSeriesTest, NothingReadableIsAnError)
{
    auto series = readCheckpointSeries({ { 1, path("hf/checkpoint-25") }, { 2, path("no-such-folder") } });
    ASSERT_FALSE(series.ok());
    EXPECT_NE(series.error().find("none of the 2 checkpoints"), std::string::npos) << series.error();
}

TEST(CheckpointTables, NaturalOrderComparesDigitRunsAsNumbers)
{
    using checkpointtables::naturalLess;
    EXPECT_TRUE(naturalLess("layers.2.weight", "layers.10.weight"));
    EXPECT_FALSE(naturalLess("layers.10.weight", "layers.2.weight"));
    EXPECT_TRUE(naturalLess("layers.2.bias", "layers.2.weight"));
    EXPECT_TRUE(naturalLess("a", "a.b"));
    EXPECT_FALSE(naturalLess("a", "a"));
}

// A folder of checkpoint-N/ folders and nothing else opens as a run: the per-layer tables come
// from the checkpoints, the heatmap opens on parameter norms, and the damaged one is named.
TEST_F(CheckpointSeriesTest, AFolderOfCheckpointsOpensAsARunWithLayerTables)
{
    auto run = openRun(path("hf"));
    ASSERT_TRUE(run.ok()) << run.error();
    const RunInfo& info = (*run)->info();
    const TableInfo* layers = info.table(runformat::kLayers);
    ASSERT_NE(layers, nullptr);
    EXPECT_EQ((*run)->steps(runformat::kLayers), (std::vector<int64_t>{10, 20, 30, 40}));
    EXPECT_NE(std::find(layers->datasets.begin(), layers->datasets.end(), "param_nonfinite"), layers->datasets.end());
    EXPECT_NE(info.table(kCheckpointUpdatesTable), nullptr);
    EXPECT_EQ(defaultHeatmapQuantity(**run), HeatmapQuantity::ParamNormLog10);
    auto heatmap = buildLayerHeatmap(**run, HeatmapQuantity::NonfiniteCount, 100);
    ASSERT_TRUE(heatmap.ok()) << heatmap.error();
    EXPECT_EQ(info.checkpoints.size(), 5u) << "checkpoint-25 is listed; its damage is a warning, not a refusal";
    EXPECT_TRUE(joined(info.source.warnings).find("checkpoint-25") != std::string::npos) << joined(info.source.warnings);
    EXPECT_TRUE(info.replayableSteps().empty());
}

} // namespace
} // namespace nanscope

// Which file of a Hugging Face Trainer's checkpoint-N/ folder holds the weights is judged in one
// place (core/importers/CheckpointFiles): the run finder, the checkpoint statistics, the optimizer's
// parameter names and the window's checkpoint loader each had their own list and precedence before.
// The judgement reads names only, so empty files stand in for the weights here.
#include "core/importers/CheckpointFiles.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

using namespace nanscope;
namespace fs = std::filesystem;

namespace {

class TrainerFolder
{
public:
    explicit TrainerFolder(std::initializer_list<const char*> files)
    {
        std::random_device rd;
        m_path = fs::temp_directory_path() / ("nanscope-trainer-" + std::to_string(rd()) + std::to_string(rd()));
        fs::create_directories(m_path);
        for (const char* name : files)
            std::ofstream(m_path / name) << "";
    }
    ~TrainerFolder()
    {
        std::error_code ec;
        fs::remove_all(m_path, ec);
    }
    std::string path() const { return m_path.string(); }
    std::string operator/(const char* name) const { return (m_path / name).string(); }

private:
    fs::path m_path;
};

} // namespace

TEST(TrainerWeightFiles, SafetensorsStandsForTheFolderAndThePickledFormNamesTheOptimizersParameters)
{
    const TrainerFolder folder({ "model.safetensors", "pytorch_model.bin", "optimizer.pt", "training_args.bin" });
    EXPECT_EQ(trainerWeightsFile(folder.path()), folder / "model.safetensors");
    EXPECT_TRUE(holdsTrainerWeights(folder.path()));
    auto all = findCheckpointFiles(folder.path());
    ASSERT_TRUE(all.ok()) << all.error();
    EXPECT_EQ(all->files, std::vector<std::string>{ folder / "model.safetensors" });
    ASSERT_EQ(all->notes.size(), 1u);
    EXPECT_NE(all->notes[0].find("pytorch_model.bin skipped"), std::string::npos);
    // The optimizer's parameters are named in the model's order, which only the pickled form keeps.
    auto trained = findTrainedParameterFiles(folder.path());
    ASSERT_TRUE(trained.ok()) << trained.error();
    EXPECT_EQ(trained->files, std::vector<std::string>{ folder / "pytorch_model.bin" });
}

TEST(TrainerWeightFiles, ShardsOfThePickledFormNameTheOptimizersParametersBesideSafetensors)
{
    // A sharded pickled state_dict keeps the model's order in each shard, in shard order: it names
    // the optimizer's parameters where model.safetensors, sorted by name, cannot.
    const TrainerFolder folder({ "model.safetensors", "pytorch_model-00001-of-00002.bin",
                                 "pytorch_model-00002-of-00002.bin" });
    auto trained = findTrainedParameterFiles(folder.path());
    ASSERT_TRUE(trained.ok()) << trained.error();
    EXPECT_EQ(trained->files, (std::vector<std::string>{ folder / "pytorch_model-00001-of-00002.bin",
                                                         folder / "pytorch_model-00002-of-00002.bin" }));
    auto all = findCheckpointFiles(folder.path());
    ASSERT_TRUE(all.ok()) << all.error();
    EXPECT_EQ(all->files, std::vector<std::string>{ folder / "model.safetensors" })
        << "the statistics read the safetensors file, which holds the same weights";
}

TEST(TrainerWeightFiles, AnAdapterComesAfterTheModelButAloneHoldsWhatTheOptimizerTrained)
{
    const TrainerFolder folder({ "model.safetensors", "adapter_model.safetensors", "adapter_model.bin" });
    auto all = findCheckpointFiles(folder.path());
    ASSERT_TRUE(all.ok()) << all.error();
    EXPECT_EQ(all->files, (std::vector<std::string>{ folder / "model.safetensors", folder / "adapter_model.safetensors" }));
    auto trained = findTrainedParameterFiles(folder.path());
    ASSERT_TRUE(trained.ok()) << trained.error();
    EXPECT_EQ(trained->files, std::vector<std::string>{ folder / "adapter_model.bin" });

    const TrainerFolder adapterOnly({ "adapter_model.safetensors", "optimizer.pt" });
    EXPECT_EQ(trainerWeightsFile(adapterOnly.path()), adapterOnly / "adapter_model.safetensors");
    EXPECT_TRUE(holdsTrainerWeights(adapterOnly.path()));
}

TEST(TrainerWeightFiles, ShardsHoldWeightsWithoutOneFileToStandForThem)
{
    const TrainerFolder folder({ "model-00002-of-00002.safetensors", "model-00001-of-00002.safetensors" });
    EXPECT_EQ(trainerWeightsFile(folder.path()), "");
    EXPECT_TRUE(holdsTrainerWeights(folder.path()));
    auto all = findCheckpointFiles(folder.path());
    ASSERT_TRUE(all.ok()) << all.error();
    EXPECT_EQ(all->files, (std::vector<std::string>{ folder / "model-00001-of-00002.safetensors",
                                                     folder / "model-00002-of-00002.safetensors" }));
    ASSERT_EQ(all->notes.size(), 1u);
    EXPECT_NE(all->notes[0].find("found by name"), std::string::npos) << all->notes[0];
}

TEST(TrainerWeightFiles, AFolderOfOptimizerAndTrainerStateHoldsNoWeights)
{
    // A tokenizer's or the Trainer's own files are not weights, whatever their extension.
    const TrainerFolder folder({ "optimizer.pt", "scheduler.pt", "training_args.bin", "rng_state.pth",
                                 "trainer_state.json", "tokenizer.json" });
    EXPECT_FALSE(holdsTrainerWeights(folder.path()));
    EXPECT_EQ(trainerWeightsFile(folder.path()), "");
    auto all = findCheckpointFiles(folder.path());
    ASSERT_FALSE(all.ok());
    EXPECT_NE(all.error().find(folder.path()), std::string::npos) << "the error names the folder";
    EXPECT_FALSE(findTrainedParameterFiles(folder.path()).ok());
}

TEST(TrainerWeightFiles, TheFileNamesATrainerWritesWeightsUnder)
{
    for (const char* name : { "model.safetensors", "pytorch_model.bin", "adapter_model.safetensors", "adapter_model.bin" })
        EXPECT_TRUE(isTrainerWeightsFileName(name)) << name;
    for (const char* name : { "optimizer.pt", "training_args.bin", "model-00001-of-00002.safetensors", "step_00000010.pt" })
        EXPECT_FALSE(isTrainerWeightsFileName(name)) << name;
}

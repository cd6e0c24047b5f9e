// `nanscope stats` on optimizer states written by real torch.optim.AdamW steps (made at test time
// by Debian's python3-torch, never committed), and the checkpoints pane showing them: a Hugging
// Face checkpoint folder (pytorch_model.bin + optimizer.pt, the Trainer's two param groups) and a
// Lightning .ckpt holding optimizer_states. One bias gets a zero gradient in a group with a large
// eps (epsilon dominates all of it); one exp_avg_sq gets a NaN (the next step writes NaN into its
// weights).
#include "AppTestSupport.h"
#include "WindowTestSupport.h"

#include "app/window/MainWindow.h"
#include "app/codecs/OptimizerJson.h"
#include "widgets/CheckpointsView.h"
#include "widgets/OptimizerStateModel.h"
#include "widgets/TensorStatsModel.h"

#include <QAbstractItemModelTester>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSignalSpy>
#include <QTabWidget>

#include <gtest/gtest.h>

#include <memory>

using namespace nanscope;
using namespace nanscope::test;

namespace {

constexpr const char* kFixtureScript = R"PY(
import json, os, sys
import torch

out = sys.argv[1]
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 2))
x, y = torch.randn(8, 4), torch.randn(8, 2)
# The Hugging Face Trainer's grouping: weights with decay, then biases without; eps 1e-3 there.
decay = [p for n, p in model.named_parameters() if "bias" not in n]
no_decay = [p for n, p in model.named_parameters() if "bias" in n]
adamw = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                           {"params": no_decay, "weight_decay": 0.0, "eps": 1e-3}], lr=1e-3)
history = []
for step in (1, 2, 3):
    adamw.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    model[2].bias.grad.zero_()  # no gradient ever reaches it: sqrt(v_hat) = 0 <= eps everywhere
    adamw.step()
    history.append({"step": step, "loss": loss.item(), "learning_rate": 1e-3})
    state = adamw.state_dict()
    if step == 3:
        state["state"][1]["exp_avg_sq"][0, 1] = float("nan")  # optimizer index 1 is 2.weight
    folder = f"{out}/hf/checkpoint-{step}"
    os.makedirs(folder, exist_ok=True)
    torch.save(model.state_dict(), f"{folder}/pytorch_model.bin")
    torch.save(state, f"{folder}/optimizer.pt")
with open(f"{out}/hf/trainer_state.json", "w") as f:
    json.dump({"global_step": 3, "max_steps": 3, "log_history": history}, f)

os.makedirs(f"{out}/lightning", exist_ok=True)
torch.save({"epoch": 0, "global_step": 3, "pytorch-lightning_version": "2.1.0", "state_dict": model.state_dict(),
            "optimizer_states": [state], "lr_schedulers": []}, f"{out}/lightning/epoch=0-step=3.ckpt")

# An optimizer.pt alone, with no model file beside it to name its parameters.
os.makedirs(f"{out}/alone", exist_ok=True)
torch.save(state, f"{out}/alone/optimizer.pt")
print("fixtures written")
)PY";

class OptimizerStats : public ::testing::Test
{
protected:
    static void SetUpTestSuite()
    {
        s_dir = std::make_unique<QTemporaryDir>();
        QFile script(s_dir->filePath("make_fixtures.py"));
        if (!script.open(QIODevice::WriteOnly)) {
            s_skipReason = "cannot write the fixture script";
            return;
        }
        script.write(kFixtureScript);
        script.close();
        QProcess python;
        python.setProcessChannelMode(QProcess::MergedChannels);
        python.start("/usr/bin/python3", {script.fileName(), s_dir->path()});
        if (!python.waitForFinished(120000) || python.exitStatus() != QProcess::NormalExit || python.exitCode() != 0)
            s_skipReason = "python3-torch could not write the fixtures: " + python.readAll().toStdString();
    }
    static void TearDownTestSuite() { s_dir.reset(); }
    void SetUp() override
    {
        if (!s_skipReason.empty())
            GTEST_SKIP() << s_skipReason;
    }

    static QString path(const QString& relative) { return s_dir->filePath(relative); }

    static QJsonObject json(const QStringList& arguments)
    {
        const auto result = runNanscope(arguments);
        EXPECT_EQ(result.exitCode, 0) << result.err.toStdString();
        QJsonParseError error;
        const QJsonObject root = QJsonDocument::fromJson(result.out.toUtf8(), &error).object();
        EXPECT_EQ(error.error, QJsonParseError::NoError) << result.out.toStdString();
        return root;
    }

    // The parameter object named `name` in stats' "optimizer" JSON.
    static QJsonObject parameter(const QJsonObject& optimizer, const QString& name)
    {
        for (const auto& value : optimizer["parameters"].toArray())
            if (value.toObject()["name"].toString() == name)
                return value.toObject();
        ADD_FAILURE() << "no parameter " << name.toStdString();
        return {};
    }

    static inline std::unique_ptr<QTemporaryDir> s_dir;
    static inline std::string s_skipReason;
};

// The flags as the command judged them, joined for a readable failure.
QString flagsOf(const QJsonObject& parameter)
{
    QStringList flags;
    for (const auto& flag : parameter["flags"].toArray())
        flags << flag.toString();
    return flags.join("; ");
}

TEST_F(OptimizerStats, TrainerOptimizerPtIsNamedFromThePytorchModelBinBesideIt)
{
    const QJsonObject root = json({"stats", path("hf/checkpoint-3/optimizer.pt"), "--json"});
    EXPECT_FALSE(root.contains("tensors")) << "an optimizer state alone is no tensor-health table";
    const QJsonObject optimizer = root["optimizer"].toObject();
    EXPECT_TRUE(optimizer["is_adam"].toBool());
    EXPECT_TRUE(optimizer["names_mapped"].toBool());
    EXPECT_TRUE(optimizer["names_from"].toString().endsWith("checkpoint-3/pytorch_model.bin"));
    ASSERT_EQ(optimizer["groups"].toArray().size(), 2);
    const QJsonObject biases = optimizer["groups"].toArray()[1].toObject();
    EXPECT_DOUBLE_EQ(biases["eps"].toDouble(), 1e-3);
    EXPECT_DOUBLE_EQ(biases["lr"].toDouble(), 1e-3);
    EXPECT_EQ(biases["weight_decay"].toDouble(), 0.0);
    EXPECT_DOUBLE_EQ(biases["betas"].toArray()[1].toDouble(), 0.999);

    // The Trainer's order: weights with decay first, then the biases.
    QStringList names;
    for (const auto& value : optimizer["parameters"].toArray())
        names << value.toObject()["name"].toString();
    EXPECT_EQ(names, (QStringList{"0.weight", "2.weight", "0.bias", "2.bias"}));

    const QJsonObject healthy = parameter(optimizer, "0.weight");
    EXPECT_EQ(healthy["step"].toDouble(), 3.0);
    EXPECT_NEAR(healthy["update_to_lr"].toDouble(), 1.0, 0.2) << "Adam's early steps move each element by about lr";
    EXPECT_EQ(healthy["eps_dominated"].toDouble(), 0.0);
    EXPECT_TRUE(healthy["flags"].toArray().isEmpty()) << flagsOf(healthy).toStdString();

    const QJsonObject starved = parameter(optimizer, "2.bias");
    EXPECT_EQ(starved["eps_dominated"].toDouble(), 1.0);
    EXPECT_EQ(starved["update_rms"].toDouble(), 0.0);
    EXPECT_TRUE(flagsOf(starved).contains("epsilon dominates 100%")) << flagsOf(starved).toStdString();
    EXPECT_TRUE(flagsOf(starved).contains("lr/eps * g")) << flagsOf(starved).toStdString();

    const QJsonObject poisoned = parameter(optimizer, "2.weight");
    EXPECT_EQ(poisoned["nonfinite_exp_avg_sq"].toInteger(), 1);
    EXPECT_EQ(poisoned["nonfinite"].toInteger(), 1);
    EXPECT_TRUE(flagsOf(poisoned).contains("NaN/Inf in exp_avg_sq: the next step will write NaN into the weights"))
        << flagsOf(poisoned).toStdString();
}

TEST_F(OptimizerStats, TextTableNamesFlagsAndGroups)
{
    const auto result = runNanscope({"stats", path("hf/checkpoint-3/optimizer.pt")});
    ASSERT_EQ(result.exitCode, 0) << result.err.toStdString();
    const QString& text = result.out;
    EXPECT_TRUE(text.contains("Adam-family optimizer state, 4 parameters in 2 param group(s)")) << text.toStdString();
    EXPECT_TRUE(text.contains("update/lr")) << text.toStdString();
    EXPECT_TRUE(text.contains("eps-dom")) << text.toStdString();
    EXPECT_TRUE(text.contains("0.9, 0.999")) << "the betas of the groups";
    EXPECT_TRUE(text.contains("2 parameter(s) flagged")) << text.toStdString();
    bool sawStarved = false, sawPoisoned = false;
    for (const QString& line : text.split('\n')) {
        if (line.startsWith("2.bias ")) {
            sawStarved = true;
            EXPECT_TRUE(line.contains("100.0%")) << line.toStdString();
            EXPECT_TRUE(line.contains("epsilon dominates")) << line.toStdString();
        } else if (line.startsWith("2.weight ")) {
            sawPoisoned = true;
            EXPECT_TRUE(line.contains("NaN/Inf in exp_avg_sq")) << line.toStdString();
        } else if (line.startsWith("0.weight ")) {
            EXPECT_TRUE(line.contains("[3, 4]")) << line.toStdString();
        }
    }
    EXPECT_TRUE(sawStarved && sawPoisoned) << text.toStdString();
}

TEST_F(OptimizerStats, WithoutAModelBesideItParametersAreNumberedAndTheOutputSaysSo)
{
    const auto result = runNanscope({"stats", path("alone/optimizer.pt")});
    ASSERT_EQ(result.exitCode, 0) << result.err.toStdString();
    EXPECT_TRUE(result.out.contains("param #3 [2]")) << result.out.toStdString();
    EXPECT_TRUE(result.out.contains("named by the optimizer's index")) << result.out.toStdString();
    EXPECT_TRUE(result.out.contains("--names-from")) << result.out.toStdString();

    const QJsonObject named = json({"stats", path("alone/optimizer.pt"), "--json", "--names-from", path("hf/checkpoint-3")});
    EXPECT_TRUE(named["optimizer"].toObject()["names_mapped"].toBool());
    EXPECT_EQ(named["optimizer"].toObject()["parameters"].toArray()[3].toObject()["name"].toString(), "2.bias");
}

TEST_F(OptimizerStats, LightningCheckpointKeepsItsTensorTableAndAddsTheOptimizer)
{
    const QString ckpt = path("lightning/epoch=0-step=3.ckpt");
    const auto text = runNanscope({"stats", ckpt});
    ASSERT_EQ(text.exitCode, 0) << text.err.toStdString();
    EXPECT_TRUE(text.out.contains("state_dict.0.weight")) << "the tensor-health table is still there";
    EXPECT_TRUE(text.out.contains("Optimizer state (optimizer_states[0])")) << text.out.toStdString();
    EXPECT_TRUE(text.out.contains("names from its state_dict")) << text.out.toStdString();

    const QJsonObject both = json({"stats", ckpt, "--json"});
    EXPECT_FALSE(both["tensors"].toArray().isEmpty());
    EXPECT_TRUE(both["optimizer"].toObject()["names_mapped"].toBool());
    EXPECT_EQ(parameter(both["optimizer"].toObject(), "2.weight")["nonfinite_exp_avg_sq"].toInteger(), 1);

    const QJsonObject only = json({"stats", ckpt, "--json", "--optimizer"});
    EXPECT_FALSE(only.contains("tensors"));
    EXPECT_EQ(only["optimizer"].toObject()["parameters"].toArray().size(), 4);
}

TEST_F(OptimizerStats, OptimizerOptionOnAModelFileIsAnErrorNamingIt)
{
    const QString weights = path("hf/checkpoint-3/pytorch_model.bin");
    const auto result = runNanscope({"stats", weights, "--optimizer"});
    EXPECT_EQ(result.exitCode, 2);
    EXPECT_TRUE(result.err.contains(weights)) << result.err.toStdString();
    EXPECT_TRUE(result.err.contains("not an optimizer state")) << result.err.toStdString();
}

TEST_F(OptimizerStats, JsonCodecReadsBackWhatTheCommandWrote)
{
    const QJsonObject written = json({"stats", path("hf/checkpoint-3/optimizer.pt"), "--json"})["optimizer"].toObject();
    const CheckpointOptimizer read = checkpointOptimizerFromJson(written);
    EXPECT_EQ(checkpointOptimizerToJson(read), written) << "a field dropped or spelled two ways";
    ASSERT_EQ(read.summary.parameters.size(), 4u);
    EXPECT_EQ(read.flaggedCount(), 2);
    EXPECT_EQ(read.summary.groups[1].parameterIndices, (std::vector<int64_t>{2, 3}));
}

TEST_F(OptimizerStats, CheckpointsPaneShowsTheOptimizerOfATrainerCheckpoint)
{
    MainWindow window;
    window.setReplayProgram(NANSCOPE_BINARY);
    QSignalSpy shown(&window, &MainWindow::checkpointShown);
    window.openRun(path("hf"));
    ASSERT_TRUE(shown.wait(60000)) << window.errorText().toStdString();
    EXPECT_EQ(shown.last().first().toLongLong(), 3);
    CheckpointsView* pane = window.checkpoints();
    EXPECT_TRUE(pane->optimizerTabShown());
    EXPECT_TRUE(pane->tabs()->tabText(1).contains("2 flagged")) << pane->tabs()->tabText(1).toStdString();
    OptimizerStateModel* model = pane->optimizerModel();
    QAbstractItemModelTester tester(model, QAbstractItemModelTester::FailureReportingMode::Fatal);
    ASSERT_EQ(model->rowCount(), 4);
    bool sawStarved = false, sawPoisoned = false;
    for (int row = 0; row < model->rowCount(); ++row) {
        const QString name = model->index(row, OptimizerStateModel::Name).data().toString();
        const QString flags = model->index(row, OptimizerStateModel::Flags).data().toString();
        const bool red = model->index(row, OptimizerStateModel::Name).data(Qt::ForegroundRole).isValid();
        if (name == "2.bias") {
            sawStarved = true;
            EXPECT_EQ(model->index(row, OptimizerStateModel::EpsilonDominated).data().toString(), "100.0%");
            EXPECT_TRUE(flags.contains("epsilon dominates")) << flags.toStdString();
            EXPECT_TRUE(red);
        } else if (name == "2.weight") {
            sawPoisoned = true;
            EXPECT_EQ(model->index(row, OptimizerStateModel::Nonfinite).data().toLongLong(), 1);
            EXPECT_TRUE(red);
        } else if (name == "0.weight") {
            EXPECT_FALSE(red);
            EXPECT_NEAR(model->index(row, OptimizerStateModel::UpdateToLr).data(OptimizerStateModel::SortRole).toDouble(),
                        1.0, 0.2);
        }
    }
    EXPECT_TRUE(sawStarved && sawPoisoned);
    EXPECT_TRUE(pane->optimizerDescription().contains("pytorch_model.bin")) << "where the names came from";
    EXPECT_TRUE(pane->optimizerDescription().contains("eps 0.001")) << pane->optimizerDescription().toStdString();
    EXPECT_GT(pane->model()->rowCount(), 0) << "the tensor table is still filled";
}

TEST_F(OptimizerStats, CheckpointsPaneShowsTheOptimizerStatesOfALightningCheckpoint)
{
    MainWindow window;
    window.setReplayProgram(NANSCOPE_BINARY);
    QSignalSpy shown(&window, &MainWindow::checkpointShown);
    window.openRun(path("lightning"));
    ASSERT_TRUE(shown.wait(60000)) << window.errorText().toStdString();
    CheckpointsView* pane = window.checkpoints();
    EXPECT_TRUE(pane->optimizerTabShown()) << "the .ckpt's optimizer_states came with its stats";
    ASSERT_EQ(pane->optimizerModel()->rowCount(), 4);
    EXPECT_EQ(pane->optimizerModel()->optimizer().flaggedCount(), 2);
    EXPECT_TRUE(pane->optimizerDescription().contains("Names from")) << pane->optimizerDescription().toStdString();
}

} // namespace

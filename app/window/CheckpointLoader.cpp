#include "app/window/CheckpointLoader.h"

#include "app/codecs/CheckpointJson.h"
#include "app/codecs/OptimizerJson.h"

#include "core/importers/CheckpointFiles.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cmath>
#include <memory>

namespace nanscope {


CheckpointLoader::CheckpointLoader(QObject* parent)
    : QObject(parent)
    , m_child(new ChildProgram(this))
{
    qRegisterMetaType<std::vector<CheckpointTensor>>();
    qRegisterMetaType<CheckpointOptimizer>();
}

QString CheckpointLoader::optimizerFileBeside(const QString& weightsFile)
{
    const QFileInfo weights(weightsFile);
    if (!isTrainerWeightsFileName(weights.fileName().toStdString()))
        return {};
    const QFileInfo optimizer(weights.dir().filePath("optimizer.pt"));
    return optimizer.isFile() ? optimizer.filePath() : QString();
}

CheckpointLoader::~CheckpointLoader() = default;

void CheckpointLoader::setProgram(const QString& program)
{
    m_child->setProgram(program);
}

void CheckpointLoader::load(qint64 step, const std::map<int64_t, std::string>& checkpoints)
{
    auto it = checkpoints.find(step);
    if (it == checkpoints.end())
        return;
    m_step = step;
    m_file = QString::fromStdString(it->second);
    m_previous = it == checkpoints.begin() ? QString() : QString::fromStdString(std::prev(it)->second);
    m_rows.clear();
    m_optimizer = {};
    m_optimizerError.clear();
    m_optimizerFile = optimizerFileBeside(m_file);
    runStats();
}

void CheckpointLoader::runChild(const QStringList& args,
                                std::function<void(const QJsonObject& json, const QString& error)> done)
{
    // `stats FILE` names the file it read (the weights, or the optimizer.pt); a diff, the checkpoint.
    const QString file = args.value(0) == "stats" ? args.value(1) : m_file;
    // A checkpoint's statistics of thousands of tensors are parsed off the GUI thread.
    auto root = std::make_shared<QJsonObject>();
    m_child->start(
        args,
        [file, done, root](const ChildOutcome& outcome) {
            if (outcome.succeeded())
                done(*root, QString());
            else
                done({}, outcome.failureText(tr("Reading %1").arg(file)));
        },
        [root](const ChildOutcome& outcome) {
            if (outcome.succeeded())
                *root = QJsonDocument::fromJson(outcome.standardOutput).object();
        });
}

void CheckpointLoader::runStats()
{
    runChild({"stats", m_file, "--json", "--histogram", "40", "--device", "cpu"},
             [this](const QJsonObject& root, const QString& error) {
                 if (!error.isEmpty()) {
                     emit optimizerLoaded(m_step, {}, QString());
                     emit loaded(m_step, {}, error);
                     return;
                 }
                 for (const auto& value : root["tensors"].toArray()) {
                     CheckpointTensor row;
                     row.stats = tensorStatsFromJson(value.toObject(), &row.flags);
                     m_rows.push_back(std::move(row));
                 }
                 // A Lightning checkpoint's optimizer_states come with its tensors.
                 if (root.contains("optimizer"))
                     m_optimizer = checkpointOptimizerFromJson(root["optimizer"].toObject());
                 m_optimizerError = root["optimizer_error"].toString();
                 if (!m_previous.isEmpty())
                     runDiff();
                 else if (!m_optimizerFile.isEmpty())
                     runOptimizer();
                 else
                     finish();
             });
}

void CheckpointLoader::runDiff()
{
    // A failed diff leaves the update column empty; the statistics still stand.
    runChild({"diff", m_previous, m_file, "--json"}, [this](const QJsonObject& root, const QString&) {
        for (const auto& value : root["tensors"].toArray()) {
            TensorDiff diff = tensorDiffFromJson(value.toObject());
            for (auto& row : m_rows)
                if (row.stats.name == diff.name)
                    row.update = diff;
        }
        if (!m_optimizerFile.isEmpty())
            runOptimizer();
        else
            finish();
    });
}

void CheckpointLoader::runOptimizer()
{
    // A failed read is shown in the optimizer's place; the tensors still stand.
    runChild({"stats", m_optimizerFile, "--json"}, [this](const QJsonObject& root, const QString& error) {
        if (!error.isEmpty())
            m_optimizerError = error;
        else if (root.contains("optimizer"))
            m_optimizer = checkpointOptimizerFromJson(root["optimizer"].toObject());
        else
            m_optimizerError = tr("%1 holds no optimizer state").arg(m_optimizerFile);
        finish();
    });
}

void CheckpointLoader::finish()
{
    emit optimizerLoaded(m_step, m_optimizer, m_optimizerError);
    emit loaded(m_step, m_rows, QString());
}

} // namespace nanscope

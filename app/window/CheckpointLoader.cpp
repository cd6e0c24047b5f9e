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
#include <optional>
#include <unordered_map>

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

void CheckpointLoader::runChild(const QStringList& args, std::function<void(const QJsonObject& json)> decode,
                                std::function<void(const QString& error)> done)
{
    // `stats FILE` names the file it read (the weights, or the optimizer.pt); a diff, the checkpoint.
    const QString file = args.value(0) == "stats" ? args.value(1) : m_file;
    // A checkpoint's statistics of thousands of tensors are parsed, and made into rows, off the GUI
    // thread; `done` only takes them over.
    m_child->start(
        args,
        [file, done](const ChildOutcome& outcome) {
            done(outcome.succeeded() ? QString() : outcome.failureText(tr("Reading %1").arg(file)));
        },
        [decode](const ChildOutcome& outcome) {
            if (outcome.succeeded())
                decode(QJsonDocument::fromJson(outcome.standardOutput).object());
        });
}

namespace {
// What a `stats --json` answer becomes, on the worker thread.
struct StatsReply
{
    std::vector<CheckpointTensor> rows;
    std::optional<CheckpointOptimizer> optimizer;
    QString optimizerError;
};
} // namespace

void CheckpointLoader::runStats()
{
    auto reply = std::make_shared<StatsReply>();
    runChild(
        {"stats", m_file, "--json", "--histogram", "40", "--device", "cpu"},
        [reply](const QJsonObject& root) {
            for (const auto& value : root["tensors"].toArray()) {
                CheckpointTensor row;
                row.stats = tensorStatsFromJson(value.toObject(), &row.flags);
                reply->rows.push_back(std::move(row));
            }
            // A Lightning checkpoint's optimizer_states come with its tensors.
            if (root.contains("optimizer"))
                reply->optimizer = checkpointOptimizerFromJson(root["optimizer"].toObject());
            reply->optimizerError = root["optimizer_error"].toString();
        },
        [this, reply](const QString& error) {
            if (!error.isEmpty()) {
                emit optimizerLoaded(m_step, {}, QString());
                emit loaded(m_step, {}, error);
                return;
            }
            m_rows = std::move(reply->rows);
            if (reply->optimizer)
                m_optimizer = std::move(*reply->optimizer);
            m_optimizerError = reply->optimizerError;
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
    // Each tensor's update is joined to its row by name on the worker (a map, not a search of
    // every row for every tensor); the GUI thread only stores them.
    auto names = std::make_shared<std::vector<std::string>>();
    names->reserve(m_rows.size());
    for (const auto& row : m_rows)
        names->push_back(row.stats.name);
    auto updates = std::make_shared<std::vector<std::pair<size_t, TensorDiff>>>();
    // A failed diff leaves the update column empty; the statistics still stand.
    runChild(
        {"diff", m_previous, m_file, "--json"},
        [names, updates](const QJsonObject& root) {
            std::unordered_map<std::string, size_t> rowOf;
            for (size_t i = 0; i < names->size(); ++i)
                rowOf.emplace((*names)[i], i);
            for (const auto& value : root["tensors"].toArray()) {
                TensorDiff diff = tensorDiffFromJson(value.toObject());
                if (auto it = rowOf.find(diff.name); it != rowOf.end())
                    updates->emplace_back(it->second, std::move(diff));
            }
        },
        [this, updates](const QString&) {
            for (auto& [row, diff] : *updates)
                if (row < m_rows.size())
                    m_rows[row].update = std::move(diff);
            if (!m_optimizerFile.isEmpty())
                runOptimizer();
            else
                finish();
        });
}

void CheckpointLoader::runOptimizer()
{
    auto optimizer = std::make_shared<std::optional<CheckpointOptimizer>>();
    // A failed read is shown in the optimizer's place; the tensors still stand.
    runChild(
        {"stats", m_optimizerFile, "--json"},
        [optimizer](const QJsonObject& root) {
            if (root.contains("optimizer"))
                *optimizer = checkpointOptimizerFromJson(root["optimizer"].toObject());
        },
        [this, optimizer](const QString& error) {
            if (!error.isEmpty())
                m_optimizerError = error;
            else if (*optimizer)
                m_optimizer = std::move(**optimizer);
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

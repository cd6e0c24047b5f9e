#include "CheckpointLoader.h"

#include "CheckpointJson.h"

#include <QCoreApplication>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cmath>

namespace nanscope {


CheckpointLoader::CheckpointLoader(QObject* parent)
    : QObject(parent)
    , m_child(new ChildProgram(this))
{
    qRegisterMetaType<std::vector<CheckpointTensor>>();
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
    runStats();
}

void CheckpointLoader::runChild(const QStringList& args,
                                std::function<void(const QJsonObject& json, const QString& error)> done)
{
    m_child->start(args, [this, done](const ChildOutcome& outcome) {
        if (outcome.kind == ChildOutcome::Kind::Crashed)
            done({}, tr("reading %1 crashed").arg(m_file));
        else if (!outcome.succeeded())
            done({}, outcome.message);
        else
            done(QJsonDocument::fromJson(outcome.standardOutput).object(), QString());
    });
}

void CheckpointLoader::runStats()
{
    runChild({"stats", m_file, "--json", "--histogram", "40", "--device", "cpu"},
             [this](const QJsonObject& root, const QString& error) {
                 if (!error.isEmpty()) {
                     emit loaded(m_step, {}, error);
                     return;
                 }
                 for (const auto& value : root["tensors"].toArray()) {
                     CheckpointTensor row;
                     row.stats = tensorStatsFromJson(value.toObject(), &row.flags);
                     m_rows.push_back(std::move(row));
                 }
                 if (m_previous.isEmpty())
                     emit loaded(m_step, m_rows, QString());
                 else
                     runDiff();
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
        emit loaded(m_step, m_rows, QString());
    });
}

} // namespace nanscope

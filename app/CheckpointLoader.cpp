#include "CheckpointLoader.h"

#include "ReplayProcess.h"

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
    qRegisterMetaType<std::vector<TensorRow>>();
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
                     const QJsonObject o = value.toObject();
                     TensorRow row;
                     row.name = o["name"].toString();
                     QStringList dims;
                     for (const auto& d : o["shape"].toArray())
                         dims << QString::number(d.toInteger());
                     row.shape = "[" + dims.join(", ") + "]";
                     row.dtype = o["dtype"].toString();
                     row.numel = o["numel"].toInteger();
                     row.min = jsonNumberOrNan(o["min"]);
                     row.max = jsonNumberOrNan(o["max"]);
                     row.mean = jsonNumberOrNan(o["mean"]);
                     row.std = jsonNumberOrNan(o["std"]);
                     row.norm = jsonNumberOrNan(o["norm"]);
                     row.nan = o["nan"].toInteger();
                     row.inf = o["inf"].toInteger();
                     for (const auto& f : o["flags"].toArray())
                         row.flags << f.toString();
                     for (const auto& h : o["histogram"].toArray())
                         row.histogram.push_back(h.toInteger());
                     row.relativeUpdate = std::nan("");
                     m_rows.push_back(row);
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
            const QJsonObject o = value.toObject();
            for (auto& row : m_rows)
                if (row.name == o["name"].toString()) {
                    row.relativeUpdate = jsonNumberOrNan(o["relative_update"]);
                    row.becameNonfinite = o["became_nonfinite"].toInteger();
                }
        }
        emit loaded(m_step, m_rows, QString());
    });
}

} // namespace nanscope

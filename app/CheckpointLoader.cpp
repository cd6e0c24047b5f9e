#include "CheckpointLoader.h"

#include "ReplayProcess.h"

#include <QCoreApplication>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>

#include <cmath>

namespace nanscope {

namespace {
double numberOrNan(const QJsonValue& v)
{
    return v.isDouble() ? v.toDouble() : std::nan("");
}
} // namespace

CheckpointLoader::CheckpointLoader(QObject* parent)
    : QObject(parent)
    , m_program(nanscopeProgram())
{
    qRegisterMetaType<std::vector<TensorRow>>();
}

CheckpointLoader::~CheckpointLoader()
{
    ++m_generation; // a process killed now must not report to a window being destroyed
    if (m_process) {
        m_process->disconnect(this);
        m_process->kill();
        m_process->waitForFinished(2000);
    }
}

void CheckpointLoader::load(qint64 step, const std::map<int64_t, std::string>& checkpoints)
{
    auto it = checkpoints.find(step);
    if (it == checkpoints.end())
        return;
    ++m_generation;
    if (m_process)
        m_process->kill();
    m_step = step;
    m_file = QString::fromStdString(it->second);
    m_previous = it == checkpoints.begin() ? QString() : QString::fromStdString(std::prev(it)->second);
    m_rows.clear();
    runStats();
}

void CheckpointLoader::runStats()
{
    auto* process = new QProcess(this);
    m_process = process;
    const int generation = m_generation;
    connect(process, &QProcess::finished, this, [this, process, generation](int code, QProcess::ExitStatus status) {
        process->deleteLater();
        if (generation != m_generation)
            return;
        if (status != QProcess::NormalExit || code != 0) {
            const QString why = status == QProcess::CrashExit ? tr("reading %1 crashed").arg(m_file)
                                                              : QString::fromUtf8(process->readAllStandardError()).trimmed();
            emit loaded(m_step, {}, why);
            return;
        }
        const QJsonObject root = QJsonDocument::fromJson(process->readAllStandardOutput()).object();
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
            row.min = numberOrNan(o["min"]);
            row.max = numberOrNan(o["max"]);
            row.mean = numberOrNan(o["mean"]);
            row.std = numberOrNan(o["std"]);
            row.norm = numberOrNan(o["norm"]);
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
    process->start(m_program, {"stats", m_file, "--json", "--histogram", "40", "--device", "cpu"});
}

void CheckpointLoader::runDiff()
{
    auto* process = new QProcess(this);
    m_process = process;
    const int generation = m_generation;
    connect(process, &QProcess::finished, this, [this, process, generation](int code, QProcess::ExitStatus status) {
        process->deleteLater();
        if (generation != m_generation)
            return;
        if (status == QProcess::NormalExit && code == 0) {
            const QJsonObject root = QJsonDocument::fromJson(process->readAllStandardOutput()).object();
            for (const auto& value : root["tensors"].toArray()) {
                const QJsonObject o = value.toObject();
                for (auto& row : m_rows)
                    if (row.name == o["name"].toString()) {
                        row.relativeUpdate = numberOrNan(o["relative_update"]);
                        row.becameNonfinite = o["became_nonfinite"].toInteger();
                    }
            }
        }
        emit loaded(m_step, m_rows, QString());
    });
    process->start(m_program, {"diff", m_previous, m_file, "--json"});
}

} // namespace nanscope

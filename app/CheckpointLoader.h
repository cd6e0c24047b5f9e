#pragma once

#include "ChildProgram.h"

#include "widgets/ViewData.h"

#include <QJsonObject>
#include <QObject>

#include <functional>
#include <map>
#include <string>

namespace nanscope {

// Reads a checkpoint's tensor statistics with `nanscope stats --json` and its update against the
// previous checkpoint with `nanscope diff --json`, in child processes: the files are untrusted
// input, and a parser bug must not take the window down. Latest request wins.
class CheckpointLoader : public QObject
{
    Q_OBJECT
public:
    explicit CheckpointLoader(QObject* parent = nullptr);
    ~CheckpointLoader() override;
    void setProgram(const QString& program);
    void load(qint64 step, const std::map<int64_t, std::string>& checkpoints);

signals:
    void loaded(qint64 step, const std::vector<nanscope::TensorRow>& tensors, const QString& error);

private:
    void runStats();
    void runDiff();
    // Starts the child; `done` gets its stdout as JSON, or the reason it failed. A reply from a
    // replaced request is dropped (ChildProgram: latest request wins).
    void runChild(const QStringList& args, std::function<void(const QJsonObject& json, const QString& error)> done);

    ChildProgram* m_child = nullptr;
    qint64 m_step = -1;
    QString m_file, m_previous;
    std::vector<TensorRow> m_rows;
};

} // namespace nanscope

Q_DECLARE_METATYPE(std::vector<nanscope::TensorRow>)

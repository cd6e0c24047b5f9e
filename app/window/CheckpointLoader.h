#pragma once

#include "app/children/ChildProgram.h"

#include "widgets/ViewData.h"

#include <QJsonObject>
#include <QObject>

#include <functional>
#include <map>
#include <string>

namespace nanscope {

// Reads a checkpoint's tensor statistics with `nanscope stats --json`, its update against the
// previous checkpoint with `nanscope diff --json`, and its optimizer state (a Lightning checkpoint's
// optimizer_states come with its stats; a Hugging Face checkpoint folder's optimizer.pt with
// `nanscope stats optimizer.pt --json`), in child processes: the files are untrusted input, and a
// parser bug must not take the window down. Latest request wins.
class CheckpointLoader : public QObject
{
    Q_OBJECT
public:
    explicit CheckpointLoader(QObject* parent = nullptr);
    ~CheckpointLoader() override;
    void setProgram(const QString& program);
    void load(qint64 step, const std::map<int64_t, std::string>& checkpoints);

    // The optimizer.pt of a Hugging Face checkpoint folder whose weights file is `weightsFile`, or
    // empty: only a Trainer's weights file names the folder as a checkpoint of its own (a folder of
    // step_N.pt files with one optimizer.pt would show it for every step).
    static QString optimizerFileBeside(const QString& weightsFile);

signals:
    // Emitted just before `loaded`, for every checkpoint: an optimizer with an empty summary.path
    // means the checkpoint holds no optimizer state; `error` says why one could not be read.
    void optimizerLoaded(qint64 step, const nanscope::CheckpointOptimizer& optimizer, const QString& error);
    void loaded(qint64 step, const std::vector<nanscope::CheckpointTensor>& tensors, const QString& error);

private:
    void runStats();
    void runDiff();
    void runOptimizer();
    void finish();
    // Starts the child: `decode` gets its stdout as JSON on a worker thread (where the rows are
    // built), then `done` runs on the GUI thread with the reason it failed, or nothing. A reply
    // from a replaced request is dropped.
    void runChild(const QStringList& args, std::function<void(const QJsonObject& json)> decode,
                  std::function<void(const QString& error)> done);

    ChildProgram* m_child = nullptr;
    qint64 m_step = -1;
    QString m_file, m_previous, m_optimizerFile;
    std::vector<CheckpointTensor> m_rows;
    CheckpointOptimizer m_optimizer;
    QString m_optimizerError;
};

} // namespace nanscope

Q_DECLARE_METATYPE(std::vector<nanscope::CheckpointTensor>)
Q_DECLARE_METATYPE(nanscope::CheckpointOptimizer)

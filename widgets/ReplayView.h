#pragma once

#include "ViewData.h"

#include <QWidget>

#include <optional>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QTableView;

namespace nanscope {

class RunContext;
class ReplayOpModel;

// Replays a saved step: choose the step (steps with both a checkpoint and a batch), the
// precision and the mode, run, and read the ops down to the first non-finite one.
class ReplayView : public QWidget
{
    Q_OBJECT
public:
    explicit ReplayView(QWidget* parent = nullptr);

    // `whyNone`: what the pane says when no step replays (RunInfo::whyNothingReplays).
    // Lists the replayable steps of the run `context` holds and follows it (runClosed, runLoaded,
    // runGrew, stepSelected). A run that grew keeps the step the pane was on.
    void follow(const RunContext* context);
    void setReplayableSteps(const std::vector<qint64>& steps, const QString& whyNone = QString());
    // The run's checkpoints are state_dicts that replay eagerly, rebuilt in Python by `factory`
    // (empty: TorchScript replay); the pane's warning says which code runs.
    // How replay runs the model, said above the table: eagerly through `factory` when it is set, as
    // an exported program's graph (no code of the file) when `exportedPrograms`, else as TorchScript.
    void setEagerFactory(const QString& factory, bool exportedPrograms = false);
    // Picks the replayable step at or before `step` (the nearest one after, if none is before).
    void chooseStepNear(qint64 step);
    // Drops everything of the run shown (RunContext::runClosed): result, step list, layer filter.
    void clear();
    void setLayerPrefix(const QString& prefix);
    // Replays the chosen step filtered to `module` (a row double-clicked, a layer chosen in the
    // tree), as the Replay button does.
    void replayModule(const QString& module);
    void setRunning(bool running);
    void setReport(const ReplayReport& report);
    // The triage's replay of its step (unfiltered): shown as the report, keeping the bad samples
    // a replay of the same step found before (triage does not bisect).
    void showTriagedReplay(ReplayReport report);
    // The triage of a step (`nanscope triage`): its evidence table and label, above the ops.
    void setTriage(const TriageReport& triage);
    const TriageReport& triage() const { return m_triage; }

    ReplayRequest request() const;
    const ReplayReport& report() const { return m_report; }
    QTableView* table() const { return m_table; }
    // The replay shown, when it ran as the report replays (training mode, as trained, no layer
    // filter): the report reuses it rather than replaying that step again.
    std::optional<ReplayReport> replayAsTrained() const;
    ReplayOpModel* model() const { return m_model; }
    QString summaryText() const;
    QString triageText() const;

signals:
    void replayRequested(const nanscope::ReplayRequest& request);
    // Triage the chosen step: is its incident the batch, the state, or both?
    void triageRequested(qint64 step);
    void cancelRequested();
    void moduleClicked(const QString& module);

private:
    // Emits replayRequested for the pane's request; a triage of another step is dropped first.
    void requestReplay();
    void dropTriage();
    // Every column as wide as its header and values, the code column at most a third of the pane.
    void fitColumns();

    QComboBox* m_step = nullptr;
    QComboBox* m_dtype = nullptr;
    QCheckBox* m_eval = nullptr;
    QCheckBox* m_bisect = nullptr;
    QLineEdit* m_layer = nullptr;
    QPushButton* m_run = nullptr;
    QPushButton* m_triageButton = nullptr;
    QPushButton* m_cancel = nullptr;
    QProgressBar* m_busy = nullptr;
    QLabel* m_warning = nullptr;
    QLabel* m_summary = nullptr;
    QLabel* m_triageText = nullptr;
    QTableView* m_table = nullptr;
    ReplayOpModel* m_model = nullptr;
    ReplayReport m_report;
    ReplayRequest m_requested; // what the replay shown (or running) was asked with
    bool m_scrollToCulprit = false; // a report arrived: bring its first bad op into view once shown

    void scrollToCulprit();

protected:
    void showEvent(QShowEvent* event) override;

private:
    TriageReport m_triage;
    bool m_triageRunning = false; // "Triaging step N..." is on screen
};

} // namespace nanscope

#pragma once

#include <QFutureWatcher>
#include <QMainWindow>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

class QLabel;
class QStackedWidget;

namespace nanscope {

class SeriesPlot;

// What the window shows of a run, loaded off the GUI thread and handed over as a value.
struct RunOverview
{
    QString directory;
    QString runName;
    QString error; // non-empty: loading failed, and this says why
    std::vector<int64_t> steps;
    std::map<std::string, std::vector<double>> scalars;
    int tableCount = 0;
    int checkpointCount = 0;
    int batchCount = 0;
};

RunOverview loadRunOverview(const QString& directory);

class MainWindow : public QMainWindow
{
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);

    void openRun(const QString& directory);
    // Renders the window offscreen to `path` once the run has loaded, then emits screenshotDone.
    void screenshotWhenLoaded(const QString& path);

    const RunOverview& overview() const { return m_overview; }
    SeriesPlot* lossPlot() const { return m_lossPlot; }
    SeriesPlot* gradNormPlot() const { return m_gradNormPlot; }
    QString errorText() const;

signals:
    void runLoaded(bool ok);
    void screenshotDone(bool saved);

private:
    void showOverview(const RunOverview& overview);
    void chooseRun();

    QFutureWatcher<RunOverview> m_loader;
    RunOverview m_overview;
    QStackedWidget* m_pages = nullptr;
    QLabel* m_errorLabel = nullptr;
    QLabel* m_placeholder = nullptr;
    SeriesPlot* m_lossPlot = nullptr;
    SeriesPlot* m_gradNormPlot = nullptr;
    QString m_screenshotPath;
};

} // namespace nanscope

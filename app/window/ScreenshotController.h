#pragma once

#include <QObject>
#include <QSet>
#include <QString>

class QWidget;

namespace nanscope {

// `nanscope RUN --screenshot out.png`: renders the window once everything it is going to show has
// arrived. The window says what it waits for (expect) and what came (arrived); the shot is taken
// when nothing is outstanding. Kept out of the window so that it holds no screenshot-only state.
class ScreenshotController : public QObject
{
    Q_OBJECT
public:
    enum class Work { Run, Scan, Heatmap, Layer, Checkpoint, Replay, Compare };

    explicit ScreenshotController(QWidget* window);

    void request(const QString& path);
    bool requested() const { return !m_path.isEmpty(); }
    void expect(Work work);
    void arrived(Work work);
    // The run failed to open: nothing else will come; shoot the error page.
    void runFailed();

signals:
    void done(bool saved);

private:
    void shootWhenReady();

    QWidget* m_window = nullptr;
    QString m_path;
    QSet<int> m_outstanding;
};

} // namespace nanscope

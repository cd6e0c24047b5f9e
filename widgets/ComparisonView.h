#pragma once

#include "core/compare/RunComparison.h"

#include <QWidget>

class QLabel;
class QTreeWidget;

namespace nanscope {

// The compared runs side by side, in words: for each run against the first, where each series
// leaves the other's noise band (or never) and how their incidents differ (only in one run, or in
// both with the onset shift). Activating a row with a step selects that step.
class ComparisonView : public QWidget
{
    Q_OBJECT
public:
    explicit ComparisonView(QWidget* parent = nullptr);

    void setComparison(const RunComparison& comparison);
    // "Comparing with B... ", or why a compared run could not be opened.
    void setMessage(const QString& message);
    void clear();
    QTreeWidget* tree() const { return m_tree; }

signals:
    void stepActivated(qint64 step);

private:
    QLabel* m_message = nullptr;
    QTreeWidget* m_tree = nullptr;
};

} // namespace nanscope

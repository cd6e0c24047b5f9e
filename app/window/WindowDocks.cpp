#include "app/window/WindowDocks.h"

#include "widgets/LayerTreeModel.h"

#include <QDockWidget>
#include <QRect>
#include <QLabel>
#include <QStackedWidget>
#include <QHeaderView>
#include <QLineEdit>
#include <QMainWindow>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTreeView>
#include <QVBoxLayout>

#include <algorithm>

namespace nanscope {

LayerDock addLayerDock(QMainWindow* window, QAbstractItemModel* layers, QSortFilterProxyModel* filter)
{
    auto* panel = new QWidget(window);
    auto* layout = new QVBoxLayout(panel);
    layout->setContentsMargins(4, 4, 4, 4);
    LayerDock dock;
    dock.filterEdit = new QLineEdit(panel);
    dock.filterEdit->setPlaceholderText(QObject::tr("Filter layers (Ctrl+F)"));
    dock.filterEdit->setClearButtonEnabled(true);
    filter->setSourceModel(layers);
    filter->setRecursiveFilteringEnabled(true);
    filter->setFilterCaseSensitivity(Qt::CaseInsensitive);
    filter->setFilterRole(LayerTreeModel::ParameterNameRole);
    dock.tree = new QTreeView(panel);
    dock.tree->setModel(filter);
    dock.tree->setHeaderHidden(true);
    dock.tree->setUniformRowHeights(true);
    layout->addWidget(dock.filterEdit);
    layout->addWidget(dock.tree);
    panel->setMinimumWidth(kLayersDockMinimumWidth);
    auto* widget = new QDockWidget(QObject::tr("Layers"), window);
    widget->setObjectName("LayersDock");
    widget->setWidget(panel);
    window->addDockWidget(Qt::LeftDockWidgetArea, widget);
    window->resizeDocks({widget}, {260}, Qt::Horizontal);
    QObject::connect(dock.filterEdit, &QLineEdit::textChanged, filter, &QSortFilterProxyModel::setFilterFixedString);
    return dock;
}

QTableView* addIncidentDock(QMainWindow* window, QAbstractItemModel* incidents)
{
    auto* table = new QTableView(window);
    table->setModel(incidents);
    table->setSelectionBehavior(QAbstractItemView::SelectRows);
    table->setSelectionMode(QAbstractItemView::SingleSelection);
    table->verticalHeader()->hide();
    table->horizontalHeader()->setStretchLastSection(true);
    table->setWordWrap(false);
    // A scan that found nothing says so, as `nanscope scan` does, instead of an empty table.
    auto* pages = new QStackedWidget(window);
    pages->setObjectName("incidentPages");
    pages->addWidget(table);
    auto* none = new QLabel(QObject::tr("No incidents: the run looks healthy."), pages);
    none->setObjectName("noIncidents");
    none->setAlignment(Qt::AlignCenter);
    pages->addWidget(none);
    pages->setMinimumHeight(kIncidentsDockMinimumHeight);
    auto* dock = new QDockWidget(QObject::tr("Incidents"), window);
    dock->setObjectName("IncidentsDock");
    dock->setWidget(pages);
    window->addDockWidget(Qt::BottomDockWidgetArea, dock);
    window->resizeDocks({dock}, {170}, Qt::Vertical);
    return table;
}

bool repairWindowLayout(QMainWindow* window, const QRect& available)
{
    if (available.isEmpty())
        return false;
    bool repaired = false;
    const QSize size = window->size();
    if (size.width() > available.width() || size.height() > available.height()) {
        window->resize(std::min(size.width(), available.width()), std::min(size.height(), available.height()));
        repaired = true;
    }
    if (!available.intersects(window->frameGeometry()) || !available.contains(window->frameGeometry().topLeft())) {
        window->move(available.topLeft());
        repaired = true;
    }
    for (QDockWidget* dock : window->findChildren<QDockWidget*>())
        if (dock->isFloating() && !available.intersects(dock->frameGeometry())) {
            dock->setFloating(false);
            repaired = true;
        }
    return repaired;
}

} // namespace nanscope

#pragma once

class QAbstractItemModel;
class QLineEdit;
class QMainWindow;
class QSortFilterProxyModel;
class QTableView;
class QTreeView;

namespace nanscope {

// The docks around the views, built apart from the window's wiring (as hotspot's dock setup).

// The layer tree with its filter box, docked on the left. `filter` is set up over `layers`.
struct LayerDock
{
    QLineEdit* filterEdit = nullptr;
    QTreeView* tree = nullptr;
};
LayerDock addLayerDock(QMainWindow* window, QAbstractItemModel* layers, QSortFilterProxyModel* filter);

// What the scan found, docked under the views.
QTableView* addIncidentDock(QMainWindow* window, QAbstractItemModel* incidents);

} // namespace nanscope

#pragma once

class QAbstractItemModel;
class QRect;
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

// The least a dock is squeezed to: on a 1024x700 screen the Layers dock would shrink to 60 px, and
// the saved state would keep it so after the window grew back and after a restart.
inline constexpr int kLayersDockMinimumWidth = 170;
inline constexpr int kIncidentsDockMinimumHeight = 90;

// A restored layout that no longer fits the screen `available` is repaired, not kept: the window
// is made to fit and moved onto it, a floating dock off the screen is docked again. True when
// something was repaired.
bool repairWindowLayout(QMainWindow* window, const QRect& available);

} // namespace nanscope

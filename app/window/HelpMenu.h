#pragma once

// The window's Help menu (the user guide, keyboard shortcuts, a demo run, About) and the View
// menu's list of docks, so that a dock closed by its title bar's button can be shown again.

#include <QString>

#include <functional>

class QMainWindow;
class QMenu;

namespace nanscope {

// Adds Help to `window`'s menu bar. `openRun` opens a run folder in the window (the demo run).
void addHelpMenu(QMainWindow* window, std::function<void(const QString&)> openRun);

// Fills `menu` with every dock of `window` (a check per dock: shown or not) each time it opens,
// so docks added later (compared runs) are listed too.
void addDockEntries(QMainWindow* window, QMenu* menu);

// The versions the About box names: nanscope, Qt, LibTorch, HDF5, QCustomPlot.
QString libraryVersionsText();

// Where the window writes the demo runs it opens: the user's data folder, never a run the user
// opened (nanscope writes nothing into a run directory it inspects).
QString demoRunsFolder();

} // namespace nanscope

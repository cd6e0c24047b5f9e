// The window's Help menu and the View menu's docks (issue 27): a person finds the guide, the
// shortcuts, a demo run and the versions; a dock closed by its title bar comes back from View.

#include "AppTestSupport.h"
#include "WindowTestSupport.h"
#include "../TestHome.h"
#include "app/window/HelpMenu.h"
#include "app/window/MainWindow.h"
#include "widgets/SeriesPlot.h"

#include <QApplication>
#include <QDockWidget>
#include <QLabel>
#include <QMenu>
#include <QMap>
#include <QMenuBar>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableWidget>
#include <QTest>
#include <QTextBrowser>

#include "core/replay/ReplayOptions.h"

#include <gtest/gtest.h>

using namespace nanscope;

namespace {

QMenu* menuNamed(QMainWindow& window, const QString& title)
{
    for (QAction* action : window.menuBar()->actions())
        if (action->menu() && action->text().remove('&') == title)
            return action->menu();
    return nullptr;
}

QAction* actionNamed(QMenu* menu, const QString& text)
{
    for (QAction* action : menu->actions())
        if (action->text().remove('&').contains(text))
            return action;
    return nullptr;
}

} // namespace

TEST(HelpMenu, OffersTheGuideTheShortcutsADemoRunAndAbout)
{
    MainWindow window;
    QMenu* help = menuNamed(window, "Help");
    ASSERT_NE(help, nullptr) << "no Help menu";
    for (const QString& entry : {"User Guide", "Keyboard Shortcuts", "Open a Demo Run", "About nanscope"})
        EXPECT_NE(actionNamed(help, entry), nullptr) << entry.toStdString();
    EXPECT_EQ(actionNamed(help, "User Guide")->shortcut(), QKeySequence(QKeySequence::HelpContents));

    actionNamed(help, "User Guide")->trigger();
    auto* guide = window.findChild<QTextBrowser*>("userGuide");
    ASSERT_NE(guide, nullptr);
    // F1 opens a guide to the window (issue 51: it opened the README, which starts with build
    // instructions and showed a broken image), naming every tab the window has.
    const QString text = guide->toPlainText();
    EXPECT_TRUE(text.startsWith("Using nanscope")) << text.left(200).toStdString();
    EXPECT_FALSE(text.contains("setup.sh")) << "no build instructions";
    EXPECT_TRUE(guide->toHtml().contains("<img") == false) << "no image to break";
    const QTabWidget* tabs = nullptr;
    for (const QTabWidget* candidate : window.findChildren<QTabWidget*>())
        if (candidate->count() > 0 && candidate->tabText(0) == "Overview")
            tabs = candidate;
    ASSERT_NE(tabs, nullptr);
    for (int i = 0; i < tabs->count(); ++i)
        EXPECT_TRUE(text.contains(tabs->tabText(i) + ":")) << tabs->tabText(i).toStdString() << " is not explained";
    for (const auto& [what, how] : SeriesPlot::mouseGestures())
        EXPECT_TRUE(text.contains(how)) << how.toStdString() << " (" << what.toStdString() << ") is not in the guide";
    actionNamed(help, "Keyboard Shortcuts")->trigger();
    auto* shortcuts = window.findChild<QTableWidget*>("shortcuts");
    ASSERT_NE(shortcuts, nullptr);
    bool listsOpen = false;
    for (int row = 0; row < shortcuts->rowCount(); ++row)
        listsOpen = listsOpen || shortcuts->item(row, 0)->text().contains("Open Run");
    EXPECT_TRUE(listsOpen) << "File > Open Run and its Ctrl+O are listed";
    // What the plots do with the mouse, as they do it (issue 51: help had said double-click resets
    // the zoom and a drag draws a box; double-click selects a step and a plain drag pans).
    QMap<QString, QString> gestures;
    for (int row = 0; row < shortcuts->rowCount(); ++row)
        gestures[shortcuts->item(row, 0)->text()] = shortcuts->item(row, 1)->text();
    EXPECT_EQ(gestures.value("Plots \u25B8 select a step"), "double-click");
    EXPECT_EQ(gestures.value("Plots \u25B8 pan the steps"), "drag");
    EXPECT_EQ(gestures.value("Plots \u25B8 zoom into a box of steps and values"), "Ctrl+drag");
    EXPECT_FALSE(gestures.value("Plots \u25B8 reset the zoom").contains("double-click"));
}

TEST(HelpMenu, AboutNamesTheLibraries)
{
    const QString versions = libraryVersionsText();
    const QString libtorch = "LibTorch " + QString::fromStdString(libtorchVersion());
    for (const QString& library : {QString("nanscope"), QString("Qt"), libtorch, QString("HDF5 1."), QString("QCustomPlot 2.")})
        EXPECT_TRUE(versions.contains(library)) << versions.toStdString();
}

TEST(HelpMenu, AClosedDockComesBackFromTheViewMenu)
{
    MainWindow window;
    window.show();
    QMenu* view = menuNamed(window, "View");
    ASSERT_NE(view, nullptr);
    QAction* docksEntry = actionNamed(view, "Docks");
    ASSERT_NE(docksEntry, nullptr);
    QMenu* docks = docksEntry->menu();
    ASSERT_NE(docks, nullptr);
    const auto all = window.findChildren<QDockWidget*>();
    ASSERT_FALSE(all.isEmpty());
    for (QDockWidget* dock : all) {
        dock->close();
        ASSERT_FALSE(dock->isVisible());
        emit docks->aboutToShow();
        QAction* entry = nullptr;
        for (QAction* action : docks->actions())
            if (action == dock->toggleViewAction())
                entry = action;
        ASSERT_NE(entry, nullptr) << dock->windowTitle().toStdString() << " is not under View > Docks";
        entry->trigger();
        EXPECT_TRUE(dock->isVisible()) << dock->windowTitle().toStdString() << " did not come back";
    }
}

TEST(HelpMenu, AnEmptyWindowSaysHowToStart)
{
    MainWindow window;
    QString text;
    for (QLabel* label : window.findChildren<QLabel*>())
        if (label->isVisibleTo(&window) || label->text().contains("Open Run"))
            text += label->text();
    EXPECT_TRUE(text.contains("Open Run")) << text.toStdString();
    EXPECT_TRUE(text.contains("drop")) << text.toStdString();
    EXPECT_TRUE(text.contains("Demo Run")) << text.toStdString();
}

TEST(HelpMenu, TheDemoRunOpensFromTheMenuAndIsWrittenOutsideAnyRun)
{
    MainWindow window;
    QSignalSpy loaded(&window, &MainWindow::runLoaded);
    actionNamed(menuNamed(window, "Help"), "Open a Demo Run")->trigger();
    ASSERT_TRUE(loaded.wait(120000)) << "the demo run did not open";
    EXPECT_TRUE(loaded.first().first().toBool()) << window.errorText().toStdString();
    EXPECT_TRUE(demoRunsFolder().startsWith(test::suiteHome())) << "written in the suite's own home";
    EXPECT_FALSE(window.snapshot().steps.empty());
}

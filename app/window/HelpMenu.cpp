#include "app/window/HelpMenu.h"

#include "app/children/ChildProgram.h"

#include "core/run/Hdf5Handle.h"
#include "core/replay/ReplayOptions.h"
#include "widgets/SeriesPlot.h"

#include <QAction>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QHeaderView>
#include <QMainWindow>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QStandardPaths>
#include <QStatusBar>

#include <QTableWidget>
#include <QTextBrowser>
#include <QVBoxLayout>

#include <qcustomplot.h>

namespace nanscope {

namespace {

QDialog* textDialog(QWidget* parent, const QString& title, QWidget* content)
{
    auto* dialog = new QDialog(parent);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setWindowTitle(title);
    auto* layout = new QVBoxLayout(dialog);
    layout->addWidget(content);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, dialog);
    QObject::connect(buttons, &QDialogButtonBox::rejected, dialog, &QDialog::close);
    layout->addWidget(buttons);
    dialog->resize(900, 700);
    return dialog;
}

void showUserGuide(QMainWindow* window)
{
    QFile readme(":/nanscope/user-guide.md");
    auto* browser = new QTextBrowser;
    browser->setObjectName("userGuide");
    browser->setOpenExternalLinks(true);
    if (readme.open(QIODevice::ReadOnly))
        browser->setMarkdown(QString::fromUtf8(readme.readAll()));
    else
        browser->setPlainText(QObject::tr("The user guide is docs/user-guide.md of nanscope's sources."));
    textDialog(window, QObject::tr("nanscope User Guide"), browser)->show();
}

// Every menu action with a shortcut, as the menus name them.
void collectShortcuts(QMenu* menu, const QString& path, QList<QPair<QString, QString>>& rows)
{
    for (QAction* action : menu->actions()) {
        const QString name = path + " \u25B8 " + action->text().remove('&');
        if (action->menu())
            collectShortcuts(action->menu(), name, rows);
        else if (!action->shortcut().isEmpty())
            rows.append({name, action->shortcut().toString(QKeySequence::NativeText)});
    }
}

void showShortcuts(QMainWindow* window)
{
    QList<QPair<QString, QString>> rows;
    for (QAction* action : window->menuBar()->actions())
        if (action->menu())
            collectShortcuts(action->menu(), action->text().remove('&'), rows);
    // Shortcuts that live in the views rather than in a menu.
    for (const auto& [what, how] : SeriesPlot::mouseGestures())
        rows.append({QObject::tr("Plots \u25B8 %1").arg(what), how});
    auto* table = new QTableWidget(int(rows.size()), 2);
    table->setObjectName("shortcuts");
    table->setHorizontalHeaderLabels({QObject::tr("Command"), QObject::tr("Shortcut")});
    for (int i = 0; i < rows.size(); ++i) {
        table->setItem(i, 0, new QTableWidgetItem(rows[i].first));
        table->setItem(i, 1, new QTableWidgetItem(rows[i].second));
    }
    table->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    textDialog(window, QObject::tr("Keyboard Shortcuts"), table)->show();
}

void openDemoRun(QMainWindow* window, const std::function<void(const QString&)>& openRun)
{
    const QString folder = demoRunsFolder();
    QDir().mkpath(folder);
    window->statusBar()->showMessage(QObject::tr("Writing the demo runs into %1\u2026").arg(folder));
    auto* child = new ChildProgram(window);
    child->start({"demo", folder, "--only", "sudden-blowup", "--quiet"}, [window, child, folder, openRun](const ChildOutcome& outcome) {
        child->deleteLater();
        if (!outcome.succeeded()) {
            QMessageBox::warning(window, QObject::tr("Demo run"), QObject::tr("The demo run could not be written: %1").arg(outcome.message));
            return;
        }
        openRun(QDir(folder).filePath("sudden-blowup"));
    });
}

} // namespace

QString demoRunsFolder()
{
    return QDir(QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation)).filePath("demo-runs");
}

QString libraryVersionsText()
{
    return QObject::tr("nanscope %1<br>Qt %2 (built with %3)<br>LibTorch %4<br>HDF5 %5<br>QCustomPlot %6")
        .arg(QStringLiteral(NANSCOPE_VERSION), QString::fromLatin1(qVersion()), QStringLiteral(QT_VERSION_STR),
             QString::fromStdString(libtorchVersion()), QString::fromStdString(hdf5::libraryVersion()),
             QStringLiteral(QCUSTOMPLOT_VERSION_STR));
}

void addHelpMenu(QMainWindow* window, std::function<void(const QString&)> openRun)
{
    QMenu* help = window->menuBar()->addMenu(QObject::tr("&Help"));
    help->setObjectName("helpMenu");
    help->addAction(QObject::tr("nanscope &User Guide"), QKeySequence::HelpContents, window, [window] { showUserGuide(window); });
    help->addAction(QObject::tr("&Keyboard Shortcuts"), window, [window] { showShortcuts(window); });
    help->addAction(QObject::tr("Open a &Demo Run"), window, [window, openRun] { openDemoRun(window, openRun); });
    help->addSeparator();
    help->addAction(QObject::tr("&About nanscope"), window, [window] {
        QMessageBox::about(window, QObject::tr("About nanscope"),
                           QObject::tr("<h3>nanscope</h3><p>An inspector for the numerical health of deep-learning "
                                       "training: where a NaN or an explosion came from, and what to do.</p><p>%1</p>")
                               .arg(libraryVersionsText()));
    });
}

void addDockEntries(QMainWindow* window, QMenu* menu)
{
    const auto fill = [window, menu] {
        menu->clear();
        for (QDockWidget* dock : window->findChildren<QDockWidget*>())
            menu->addAction(dock->toggleViewAction());
    };
    fill();
    QObject::connect(menu, &QMenu::aboutToShow, menu, fill);
}

} // namespace nanscope

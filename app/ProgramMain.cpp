#include "app/ProgramMain.h"

#include "app/cli/CommandLine.h"
#include "app/codecs/ScanSettingsFile.h"
#include "app/window/GuardedApplication.h"
#include "app/window/MainWindow.h"
#include "widgets/OverviewView.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QCoreApplication>
#include <QFileInfo>
#include <QMap>
#include <QStatusBar>
#include <QTextStream>

int nanscope::runProgram(int argc, char** argv)
{
    if (argc > 1 && QString::fromLocal8Bit(argv[1]) == "report") {
        // The report renders plots with widgets: a GUI application, offscreen when there is no display.
        if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") && qEnvironmentVariableIsEmpty("DISPLAY") &&
            qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY"))
            qputenv("QT_QPA_PLATFORM", "offscreen");
        QApplication app(argc, argv);
        return nanscope::cli::run(QCoreApplication::arguments());
    }
    if (argc > 1 && nanscope::cli::isSubcommand(QString::fromLocal8Bit(argv[1]))) {
        // Headless: no display needed, so servers and CI can run every subcommand.
        QCoreApplication app(argc, argv);
        return nanscope::cli::run(QCoreApplication::arguments());
    }

    nanscope::GuardedApplication app(argc, argv);
    QApplication::setApplicationName("nanscope");
    QApplication::setOrganizationName("nanscope");
    QApplication::setApplicationVersion(NANSCOPE_VERSION);
    // Ties the window to nanscope.desktop (its icon and name) on Wayland, where the window class is not used.
    QGuiApplication::setDesktopFileName("nanscope");

    QCommandLineParser parser;
    parser.setApplicationDescription("nanscope: the numerical health of deep-learning training.\n"
                                     "Headless commands: nanscope help");
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument("RUN_DIR", "Run directory to open.", "[RUN_DIR]");
    parser.addOption({"screenshot", "Render the window offscreen (1600x1000) to FILE.png and exit.", "FILE"});
    parser.addOption({"screenshot-size", "The window's size for --screenshot, as WIDTHxHEIGHT (a small screen: 1024x700).",
                      "WxH", "1600x1000"});
    parser.addOption({"view", "View to show: overview, layers, heatmap, bn, checkpoints or replay (replays --step).", "VIEW", "overview"});
    parser.addOption({"step", "Select step N in every view.", "N"});
    parser.addOption({"layer", "Select the layer (parameter name) NAME.", "NAME"});
    parser.addOption({"compare", "Overlay another run on RUN_DIR and list how they differ (repeatable).", "OTHER_RUN"});
    parser.addOption({"config", "Scan settings from FILE (JSON object or INI key = value; see `nanscope scan --help`) "
                                "for the scan, the BatchNorm view and exported reports.", "FILE"});
    parser.addOption({"x-axis", "Label the overview's step axis in step, wall-time or epoch, where the run logs it.",
                      "AXIS", "step"});
    parser.process(app);

    nanscope::MainWindow window;
    app.setErrorHandler([&window](const QString& what) { window.statusBar()->showMessage(what, 15000); });
    const QString runDir = parser.positionalArguments().value(0);
    const QMap<QString, nanscope::MainWindow::View> views{{"overview", nanscope::MainWindow::View::Overview},
                                                          {"layers", nanscope::MainWindow::View::Layers},
                                                          {"layer", nanscope::MainWindow::View::Layers},
                                                          {"heatmap", nanscope::MainWindow::View::Heatmap},
                                                          {"bn", nanscope::MainWindow::View::BatchNorm},
                                                          {"checkpoints", nanscope::MainWindow::View::Checkpoints},
                                                          {"replay", nanscope::MainWindow::View::Replay}};
    const QString view = parser.value("view");
    if (!views.contains(view)) {
        QTextStream(stderr) << "nanscope: --view must be overview, layers, heatmap, bn, checkpoints or replay (not '" << view << "')\n";
        return 2;
    }
    window.showView(views.value(view));
    bool stepOk = true;
    const qint64 step = parser.isSet("step") ? parser.value("step").toLongLong(&stepOk) : -1;
    if (!stepOk) {
        QTextStream(stderr) << "nanscope: --step takes a number\n";
        return 2;
    }
    window.setInitialSelection(step, parser.value("layer"));
    if (parser.isSet("config")) {
        nanscope::ScanConfig config;
        QString error;
        if (!nanscope::loadScanSettingsFile(parser.value("config"), config, error)) {
            QTextStream(stderr) << "nanscope: " << error << "\n";
            return 2;
        }
        window.setScanSettings(config, QFileInfo(parser.value("config")).absoluteFilePath());
    }
    const QMap<QString, nanscope::StepAxisKind> axes{{"step", nanscope::StepAxisKind::Step},
                                                     {"wall-time", nanscope::StepAxisKind::WallTime},
                                                     {"epoch", nanscope::StepAxisKind::Epoch}};
    if (!axes.contains(parser.value("x-axis"))) {
        QTextStream(stderr) << "nanscope: --x-axis must be step, wall-time or epoch (not '" << parser.value("x-axis")
                            << "')\n";
        return 2;
    }
    window.overview()->setStepAxisKind(axes.value(parser.value("x-axis")));
    for (const QString& other : parser.values("compare"))
        window.compareWith(other);
    const QString screenshot = parser.value("screenshot");
    if (!screenshot.isEmpty()) {
        if (runDir.isEmpty()) {
            QTextStream(stderr) << "nanscope: --screenshot needs a RUN_DIR\n";
            return 2;
        }
        const QStringList size = parser.value("screenshot-size").split('x');
        bool widthOk = false, heightOk = false;
        const int width = size.size() == 2 ? size[0].toInt(&widthOk) : 0;
        const int height = size.size() == 2 ? size[1].toInt(&heightOk) : 0;
        if (!widthOk || !heightOk || width < 320 || height < 240 || width > 8192 || height > 8192) {
            QTextStream(stderr) << "nanscope: --screenshot-size takes WIDTHxHEIGHT (320x240 to 8192x8192), not '"
                                << parser.value("screenshot-size") << "'\n";
            return 2;
        }
        window.resize(width, height);
        window.setAttribute(Qt::WA_DontShowOnScreen);
        window.show();
        window.screenshotWhenLoaded(screenshot);
        QObject::connect(&window, &nanscope::MainWindow::screenshotDone, &app, [&](bool saved) {
            if (!saved)
                QTextStream(stderr) << "nanscope: cannot write " << screenshot << "\n";
            app.exit(saved ? 0 : 2);
        });
        window.openRun(runDir);
        return app.exec();
    }
    window.show();
    if (!runDir.isEmpty())
        window.openRun(runDir);
    return app.exec();
}

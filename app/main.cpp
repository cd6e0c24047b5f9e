#include "CommandLine.h"
#include "MainWindow.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QCoreApplication>
#include <QTextStream>

int main(int argc, char** argv)
{
    if (argc > 1 && nanscope::cli::isSubcommand(QString::fromLocal8Bit(argv[1]))) {
        // Headless: no display needed, so servers and CI can run every subcommand.
        QCoreApplication app(argc, argv);
        return nanscope::cli::run(QCoreApplication::arguments());
    }

    QApplication app(argc, argv);
    QApplication::setApplicationName("nanscope");
    QApplication::setOrganizationName("nanscope");
    QApplication::setApplicationVersion(NANSCOPE_VERSION);

    QCommandLineParser parser;
    parser.setApplicationDescription("nanscope: the numerical health of deep-learning training.\n"
                                     "Headless commands: nanscope help");
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument("RUN_DIR", "Run directory to open.", "[RUN_DIR]");
    parser.addOption({"screenshot", "Render the window offscreen to FILE.png and exit.", "FILE"});
    parser.process(app);

    nanscope::MainWindow window;
    const QString runDir = parser.positionalArguments().value(0);
    const QString screenshot = parser.value("screenshot");
    if (!screenshot.isEmpty()) {
        if (runDir.isEmpty()) {
            QTextStream(stderr) << "nanscope: --screenshot needs a RUN_DIR\n";
            return 2;
        }
        window.resize(1600, 1000);
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

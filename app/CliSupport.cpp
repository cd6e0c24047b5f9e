#include "CliSupport.h"

#include <QCoreApplication>

namespace nanscope::cli {

namespace {
QString& commandName()
{
    static QString name = "nanscope";
    return name;
}
} // namespace

QTextStream& out()
{
    static QTextStream stream(stdout);
    return stream;
}

QTextStream& err()
{
    static QTextStream stream(stderr);
    return stream;
}

int fail(const QString& message)
{
    err() << "nanscope: " << message << Qt::endl;
    return kExitUsage;
}

QString helpText(const QCommandLineParser& parser)
{
    QString text = parser.helpText();
    // Qt writes the executable's path, which may hold spaces, after "Usage: ".
    const QString qtUsage = "Usage: " + QCoreApplication::arguments().value(0);
    if (!QCoreApplication::arguments().isEmpty() && text.startsWith(qtUsage))
        text.replace(0, qtUsage.size(), "Usage: " + commandName());
    return text;
}

bool parse(QCommandLineParser& parser, const QStringList& arguments, int& exitCode)
{
    if (!arguments.isEmpty())
        commandName() = arguments.first();
    parser.addHelpOption();
    if (!parser.parse(arguments)) {
        exitCode = fail(parser.errorText() + "\n" + helpText(parser));
        return false;
    }
    if (parser.isSet("help")) {
        out() << helpText(parser);
        exitCode = kExitOk;
        return false;
    }
    return true;
}

} // namespace nanscope::cli

#include "CliSupport.h"

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
    const QString usage = "Usage: ";
    const int end = text.indexOf(' ', usage.size()); // Qt writes the executable's path here
    if (text.startsWith(usage) && end > 0)
        text.replace(usage.size(), end - usage.size(), commandName());
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

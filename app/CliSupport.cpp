#include "CliSupport.h"

namespace nanscope::cli {

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

bool parse(QCommandLineParser& parser, const QStringList& arguments, int& exitCode)
{
    parser.addHelpOption();
    if (!parser.parse(arguments)) {
        exitCode = fail(parser.errorText() + "\n" + parser.helpText());
        return false;
    }
    if (parser.isSet("help")) {
        out() << parser.helpText();
        exitCode = kExitOk;
        return false;
    }
    return true;
}

} // namespace nanscope::cli

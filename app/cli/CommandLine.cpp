#include "app/cli/CommandLine.h"

#include <exception>
#include <new>
#include "app/cli/CliSupport.h"
#include "app/cli/LibTorchProgram.h"
#include "app/cli/Subcommands.h"

#include <QTextStream>

#include <functional>
#include <vector>

namespace nanscope::cli {

namespace {

LibTorchCommands& providedLibTorchCommands()
{
    static LibTorchCommands commands;
    return commands;
}

bool always(const QStringList&)
{
    return true;
}

struct Subcommand
{
    const char* name;
    const char* summary;
    std::function<int(const QStringList&)> run; // empty: this program hands it to nanscope-torch
    // Whether these arguments make the command run LibTorch; null: never.
    bool (*needsLibTorch)(const QStringList& commandArguments) = nullptr;
};

std::vector<Subcommand> subcommands()
{
    const LibTorchCommands& torch = providedLibTorchCommands();
    auto orHandOver = [](CommandFunction f) { return f ? std::function<int(const QStringList&)>(f) : nullptr; };
    return {
        {"info", "what a run directory holds", runInfo},
        {"demo", "train small models and write the demo runs", orHandOver(torch.demo), always},
        {"scan", "find and classify incidents", runScan},
        {"replay", "re-run a saved batch through a saved checkpoint, op by op", orHandOver(torch.replay), always},
        {"triage", "is an incident the data, the model's state, or both? replays around a step", runTriage},
        {"report", "write the incident report (.html, .pdf, .md, .json)", runReport},
        {"stats", "tensor health of a checkpoint (torch.save, TorchScript, safetensors)", runStats, statsNeedsLibTorch},
        {"diff", "compare two checkpoints: relative updates, new NaN/Inf", runDiff},
        {"compare", "compare runs: where they diverge, how their incidents differ", runCompare},
        {"import", "write a run directory from Trainer, Lightning, TensorBoard or DeepSpeed logs", runImport},
    };
}

void printUsage(QTextStream& stream)
{
    stream << "nanscope " << NANSCOPE_VERSION << " - the numerical health of deep-learning training\n\n"
           << "Usage:\n"
           << "  nanscope [RUN] [--screenshot FILE.png]       open the desktop inspector\n"
           << "      RUN: a run directory, a Trainer or Lightning output folder, event files, a log\n"
           << "  nanscope <command> [options]                 run headless\n\n"
           << "Commands:\n";
    for (const auto& c : subcommands())
        stream << QString("  %1 %2\n").arg(c.name, -8).arg(c.summary);
    stream << "\n'nanscope <command> --help' describes a command.\n";
}

} // namespace

void provideLibTorchCommands(const LibTorchCommands& commands)
{
    providedLibTorchCommands() = commands;
}

bool isSubcommand(const QString& word)
{
    if (word == "help" || word == "--help" || word == "-h" || word == "--version" || word == "-v")
        return true;
    for (const auto& c : subcommands())
        if (word == c.name)
            return true;
    return false;
}

int run(const QStringList& arguments)
{
    const QString command = arguments.value(1);
    if (command == "help" || command == "--help" || command == "-h") {
        printUsage(out());
        return kExitOk;
    }
    // Headless, like the commands: the window's own -v/--version would need a display to say it.
    if (command == "--version" || command == "-v") {
        out() << "nanscope " << NANSCOPE_VERSION << Qt::endl;
        return kExitOk;
    }
    for (const auto& c : subcommands()) {
        if (command == c.name) {
            // Only nanscope-torch provides the commands; in it, every command runs here.
            const bool inLibTorchProgram = providedLibTorchCommands().replay != nullptr;
            if (!inLibTorchProgram && c.needsLibTorch && c.needsLibTorch(arguments.mid(2)))
                return runInLibTorchProgram(arguments);
            QStringList rest = arguments.mid(2);
            rest.prepend(QString("nanscope %1").arg(c.name));
            // The last line of defence: a command that throws reports it and exits with the
            // input-error status instead of aborting with no message.
            try {
                return c.run(rest);
            } catch (const std::bad_alloc&) {
                err() << "nanscope " << c.name << ": out of memory (an input declared more data than can be held)" << Qt::endl;
            } catch (const std::exception& e) {
                err() << "nanscope " << c.name << ": internal error: " << e.what() << Qt::endl;
            }
            return kExitUsage;
        }
    }
    printUsage(err());
    return kExitUsage;
}

} // namespace nanscope::cli

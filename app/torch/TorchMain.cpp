#include "app/ProgramMain.h"
#include "app/cli/CommandLine.h"
#include "app/cli/LibTorchProgram.h"
#include "app/cli/Subcommands.h"

#include "core/torch/TorchTensorStats.h"

// nanscope-torch: nanscope with LibTorch linked in. `nanscope` hands it the commands that run a
// model (replay, demo, stats on CUDA); run directly, it is the whole of nanscope, every command
// in-process.
int main(int argc, char** argv)
{
    nanscope::cli::restoreLibraryPathAfterHandover();
    nanscope::torchstats::installStatsBackend();
    nanscope::cli::provideLibTorchCommands({nanscope::cli::runReplay, nanscope::cli::runDemo});
    return nanscope::runProgram(argc, argv);
}

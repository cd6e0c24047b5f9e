#include "app/ProgramMain.h"

// nanscope: the window and every command, without LibTorch. The commands that run a model are
// handed to nanscope-torch (app/cli/LibTorchProgram.h).
int main(int argc, char** argv)
{
    return nanscope::runProgram(argc, argv);
}

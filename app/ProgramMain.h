#pragma once

namespace nanscope {

// The whole program, window and commands, for the two executables: nanscope (app/main.cpp), which
// never loads LibTorch, and nanscope-torch (app/torch/TorchMain.cpp), which runs the models.
int runProgram(int argc, char** argv);

} // namespace nanscope

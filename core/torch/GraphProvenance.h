#pragma once

// Internal to core/torch (includes LibTorch): one part of the TorchScript replay (Replay.cpp).
// Where an op of an inlined TorchScript graph came from: the module as PyTorch names it, the
// source line, and that line's code.

#include <torch/csrc/jit/ir/ir.h>
#include <torch/script.h>

#include <set>
#include <string>

namespace nanscope::replaytorch {

// The module paths PyTorch's named_modules() gives the model ("layer1.0.conv1", "h.0.attn").
std::set<std::string> modulePathsOf(const torch::jit::Module& model);

// The module an op ran in, as PyTorch names it (one of `paths`), or "" for the top level.
std::string modulePathOf(const torch::jit::Node* node, const std::set<std::string>& paths);

// "file.py:42" for the line an op came from ("<torchscript>:N" when only the archive's code is known).
std::string sourceOf(const torch::jit::Node* node);

// The text of that line, trimmed and cut to a readable length ("" when it cannot be read).
std::string codeOf(const torch::jit::Node* node);

} // namespace nanscope::replaytorch

#pragma once

// Internal to core/torch (includes LibTorch): what ExportInterpreter.cpp and ExportHigherOrder.cpp
// both need of a node: its failure, its scalar arguments as numbers, and the names its arguments
// read and write.

#include "core/checkpoint/ExportedProgram.h"

#include <ATen/core/ivalue.h>

#include <cstdint>
#include <string>
#include <vector>

namespace nanscope::replaytorch::exportnode {

// Throws a std::runtime_error naming the node and its target.
[[noreturn]] void fail(const ExportNode& node, const std::string& why);

// A symbolic value (an int, a bool, a double or a one-element tensor) as a number; throws for anything else.
double asDouble(const c10::IValue& v);
int64_t asInt(const c10::IValue& v);

// The names an argument reads, and those an output argument writes, appended to `out`.
void namesRead(const ExportArgument& arg, std::vector<std::string>& out);
void namesWritten(const ExportArgument& arg, std::vector<std::string>& out);

} // namespace nanscope::replaytorch::exportnode

#pragma once

// How a run names its layers, in one place: /layers columns are parameter names
// ("encoder.0.weight"), /activations and /buffers columns are module paths ("encoder.0"), and the
// scan's incidents name either.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace nanscope::layernames {

// "encoder.0.weight" -> "encoder.0"; a top-level parameter ("bias") -> "".
std::string owningModule(const std::string& parameterName);
// "encoder.0.weight" -> "weight".
std::string leafName(const std::string& parameterName);
// True when `name` is `module` itself or lies inside it ("fc1" covers "fc1.weight", not "fc10.weight").
bool isWithin(const std::string& name, const std::string& module);
// The column of `modules` that `name` refers to: the name itself when it is a module path, else the
// module owning it as a parameter; -1 when neither was logged.
int64_t moduleColumn(const std::vector<std::string>& modules, const std::string& name);
// True when `name`, case aside, contains one of `words` ("attn.Scores" mentions "score"): how the
// scan reads what a layer or a logged quantity is from its name (attention logits, a router, an
// adapter, a temperature).
bool mentionsAny(const std::string& name, std::initializer_list<const char*> words);

} // namespace nanscope::layernames

#pragma once

// Untrusted JSON decoded by RapidJSON's SAX reader (iterative: no recursion, whatever the nesting)
// into a small tree, strictly: JSON's grammar, no repeated key, no lone surrogate, integers that
// fit 64 bits, and a bounded depth. Its readers: a safetensors file's header (up to 100 MiB,
// fuzz/fuzz_safetensors.cpp) and a torch.export archive's graph (core/checkpoint/ExportedProgram,
// fuzz/fuzz_exported_program.cpp).

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace nanscope::strictjson {

struct JsonValue {
    enum class Kind { Null, Bool, Number, String, Array, Object } kind = Kind::Null;
    double number = 0;
    bool numberIsInteger = false; // written without a fraction or exponent
    int64_t integer = 0;          // also a Bool's value: 1 for true
    std::string text;
    std::vector<JsonValue> items;
    std::vector<std::pair<std::string, JsonValue>> members; // in file order
};

// The first member named `key` of an object, or nullptr (also for a value that is no object).
const JsonValue* member(const JsonValue& object, const std::string& key);

// False, with `error` saying what is wrong and at which byte, when `text` is not one such value
// nested at most `mostDepth` levels.
bool parse(const std::string& text, JsonValue& out, std::string& error, int mostDepth = 64);

} // namespace nanscope::strictjson

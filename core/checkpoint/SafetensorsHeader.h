#pragma once

// The JSON header of a safetensors file, decoded by RapidJSON's SAX reader (iterative: no
// recursion, whatever the nesting) into a small tree, strictly: JSON's grammar, no repeated key,
// no lone surrogate, integers that fit 64 bits, at most 64 levels deep. The header is up to
// 100 MiB of untrusted bytes (fuzz/fuzz_safetensors.cpp, tests/corruption).

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace nanscope::safetensors {

struct HeaderJson {
    enum class Kind { Null, Bool, Number, String, Array, Object } kind = Kind::Null;
    double number = 0;
    bool numberIsInteger = false; // written without a fraction or exponent
    int64_t integer = 0;
    std::string text;
    std::vector<HeaderJson> items;
    std::vector<std::pair<std::string, HeaderJson>> members; // in file order
};

// False, with `error` saying what is wrong and at which byte, when `text` is not one such value.
bool parseHeader(const std::string& text, HeaderJson& out, std::string& error);

} // namespace nanscope::safetensors

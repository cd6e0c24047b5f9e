#pragma once

// Whether a logged name is a metric's name or something else that precedes a number in a log line.

#include <string_view>

namespace nanscope::textrecord {

// Whether a name says it is no measured value, by its last word: a source file and line
// ("utils.py:460"), a process's or a place's number ("TaskRunner pid", "line"), prose ("remaining
// items are 11", "... and 7 more"), a unit ("Gb"), a name cut short ("R..."), one letter. Decided once a name
// (RecordAssembler), not per value.
bool isNotAValueName(std::string_view name);

} // namespace nanscope::textrecord

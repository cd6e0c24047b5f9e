#pragma once

// What a RapidJSON parse error says, as one of nanscope's messages: RapidJSON's English text
// without its closing full stop, so that "(byte N)" or "at byte N" can follow it. For the two
// decoders that use RapidJSON (core/importers/JsonFields, core/checkpoint/StrictJson).

#include <rapidjson/error/en.h>

#include <string>

namespace nanscope {

inline std::string rapidJsonErrorText(rapidjson::ParseErrorCode code)
{
    std::string text = rapidjson::GetParseError_En(code);
    if (!text.empty() && text.back() == '.')
        text.pop_back();
    return text;
}

} // namespace nanscope

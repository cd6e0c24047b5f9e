#pragma once

// Where the records of a text log start and end, read in one streaming pass: a piece ends at '\n'
// or '\r' (a progress bar redraws its line with '\r'; "\r\n" ends one piece). Blank pieces are
// not delivered. A piece longer than kMostPieceBytes (a 2 GB "line") is counted and skipped
// without being held, so memory stays bounded whatever the input.

#include "core/Result.h"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace nanscope {

inline constexpr size_t kMostPieceBytes = size_t(1) << 20;

class TextPieces
{
public:
    explicit TextPieces(std::function<void(std::string_view)> onPiece);

    // The next bytes of the text; pieces cut by the end of `block` are completed by the next.
    void feed(std::string_view block);
    // The end of the text: the last piece, if it has no line end.
    void finish();
    uint64_t tooLong() const { return m_tooLongPieces; }

private:
    void append(std::string_view part);
    void deliver(std::string_view piece);

    std::function<void(std::string_view)> m_onPiece;
    std::string m_carry;
    bool m_tooLong = false;
    uint64_t m_tooLongPieces = 0;
};

// `text` without the characters of `strip` at either end.
std::string_view trimmed(std::string_view text, std::string_view strip = " \t");

// Where the first NUL byte of `text` is, or npos.
size_t firstNulByte(std::string_view text);

// Streams the file at `path` through `pieces` in 1 MiB blocks. An Error names the file when it
// cannot be read, or when its first 256 KiB hold a NUL byte (binary data, not a text log).
Status feedFile(const std::string& path, TextPieces& pieces);

} // namespace nanscope

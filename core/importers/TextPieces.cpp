#include "core/importers/TextPieces.h"

#include <cstring>
#include <fstream>

namespace nanscope {

namespace {

constexpr size_t kBlockBytes = size_t(1) << 20;
constexpr size_t kBinaryCheckBytes = size_t(256) << 10;

// The next '\n' or '\r' from `at`, or text.size(). `newline` remembers the next '\n' found, so
// that a line of many '\r' updates (a progress bar) is searched for its end once, not once each.
size_t nextBreak(std::string_view text, size_t at, size_t& newline)
{
    if (newline == std::string_view::npos || newline < at) {
        const void* found = std::memchr(text.data() + at, '\n', text.size() - at);
        newline = found ? size_t(static_cast<const char*>(found) - text.data()) : text.size();
    }
    const void* ret = std::memchr(text.data() + at, '\r', newline - at);
    return ret ? size_t(static_cast<const char*>(ret) - text.data()) : newline;
}

} // namespace

TextPieces::TextPieces(std::function<void(std::string_view)> onPiece)
    : m_onPiece(std::move(onPiece))
{
}

void TextPieces::feed(std::string_view block)
{
    size_t at = 0;
    size_t newline = std::string_view::npos;
    while (at < block.size()) {
        const size_t end = nextBreak(block, at, newline);
        const std::string_view part = block.substr(at, end - at);
        if (end == block.size()) { // no break in the rest of the block: carried to the next
            append(part);
            return;
        }
        if (m_carry.empty() && !m_tooLong) {
            deliver(part);
        } else {
            append(part);
            if (!m_tooLong)
                deliver(m_carry);
            m_carry.clear();
        }
        m_tooLong = false;
        at = end + 1;
    }
}

void TextPieces::finish()
{
    if (!m_tooLong && !m_carry.empty())
        deliver(m_carry);
    m_carry.clear();
    m_tooLong = false;
}

void TextPieces::append(std::string_view part)
{
    if (m_tooLong)
        return;
    if (m_carry.size() + part.size() > kMostPieceBytes) {
        m_tooLong = true;
        ++m_tooLongPieces;
        std::string().swap(m_carry);
        return;
    }
    m_carry.append(part);
}

void TextPieces::deliver(std::string_view piece)
{
    if (piece.size() > kMostPieceBytes) {
        ++m_tooLongPieces;
        return;
    }
    if (piece.find_first_not_of(" \t") != std::string_view::npos)
        m_onPiece(piece);
}

std::string_view trimmed(std::string_view text, std::string_view strip)
{
    const size_t first = text.find_first_not_of(strip);
    if (first == std::string_view::npos)
        return {};
    return text.substr(first, text.find_last_not_of(strip) - first + 1);
}

size_t firstNulByte(std::string_view text)
{
    const void* at = std::memchr(text.data(), '\0', text.size());
    return at ? size_t(static_cast<const char*>(at) - text.data()) : std::string_view::npos;
}

Status feedFile(const std::string& path, TextPieces& pieces)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return Error{path + ": cannot be read"};
    std::string block(kBlockBytes, '\0');
    uint64_t offset = 0;
    for (;;) {
        in.read(block.data(), std::streamsize(block.size()));
        const size_t got = size_t(in.gcount());
        if (got == 0)
            break;
        const std::string_view view(block.data(), got);
        if (offset < kBinaryCheckBytes) {
            const size_t nul = firstNulByte(view.substr(0, size_t(kBinaryCheckBytes - offset)));
            if (nul != std::string_view::npos)
                return Error{path + ": binary data (a NUL byte at byte " + std::to_string(offset + nul) +
                             "), not a text log"};
        }
        offset += got;
        pieces.feed(view);
        if (!in)
            break;
    }
    if (in.bad())
        return Error{path + ": a read error after byte " + std::to_string(offset)};
    pieces.finish();
    return Status::success();
}

} // namespace nanscope

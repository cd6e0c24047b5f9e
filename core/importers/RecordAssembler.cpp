#include "core/importers/RecordAssembler.h"

#include "core/importers/TextPieces.h"
#include "core/importers/ValueNameWords.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <climits>
#include <cmath>
#include <functional>
#include <map>

namespace nanscope {

namespace {

constexpr size_t kMostTablePairs = 4096;
constexpr size_t kMostSpacedColumns = 64;
constexpr size_t kLeastPointsToForesee = 4096;
constexpr uint32_t kMostStepNamesARecord = 8;

// "-------------", "+-----+-----+", "=====": a table's rule.
bool isRule(std::string_view text)
{
    size_t dashes = 0;
    for (char c : text) {
        if (c == '-' || c == '=')
            ++dashes;
        else if (c != '+' && c != '|' && c != ' ' && c != '\t')
            return false;
    }
    return dashes >= 3;
}

} // namespace

void RecordAssembler::expectBytesOf(const std::string& path)
{
    std::error_code ec;
    if (const uint64_t size = std::filesystem::file_size(path, ec); !ec)
        m_expectedBytes = size;
}

void RecordAssembler::piece(std::string_view text)
{
    ++m_pieces;
    m_bytes += text.size() + 1;
    const std::string_view content = trimmed(text);
    if (isRule(content)) {
        flushTable();
        return;
    }
    if (!content.empty() && content.front() == '|') {
        textrecord::parseSegment(text, m_segment);
        if (m_segment.binary) {
            ++m_binaryPieces;
            return;
        }
        if (m_segment.pairs.empty()) {
            // "| rollout/           |          |": the group of the rows below it.
            std::string_view inner = content.substr(1);
            if (!inner.empty() && inner.back() == '|')
                inner.remove_suffix(1);
            inner = trimmed(inner);
            const size_t bar = inner.find('|');
            const std::string_view word = trimmed(inner.substr(0, bar));
            if (!word.empty() && word.back() == '/' && word.find(' ') == std::string_view::npos &&
                (bar == std::string_view::npos || trimmed(inner.substr(bar + 1)).empty()))
                m_tableGroup = std::string(word);
            return;
        }
        for (const textrecord::Pair& pair : m_segment.pairs) {
            if (m_tableNames.size() >= kMostTablePairs)
                break;
            const bool grouped = !m_tableGroup.empty() && text.find('|') < text.find(pair.name.front()) &&
                                 (text.substr(text.find('|') + 1, 1) == " " || text.substr(text.find('|') + 1, 1) == "\t");
            m_tableNames.push_back(grouped ? m_tableGroup + std::string(pair.name) : std::string(pair.name));
            m_table.pairs.push_back(textrecord::Pair{{}, pair.value, pair.absent});
        }
        return;
    }
    flushTable();
    textrecord::parseSegment(text, m_segment);
    if (m_segment.binary) {
        ++m_binaryPieces;
        return;
    }
    if (m_segment.pairs.empty() && m_segment.barCount < 0 && spacedTableRow(content))
        return;
    take(m_segment);
}

bool RecordAssembler::spacedTableRow(std::string_view content)
{
    // A table printed with spaces (fastai's "epoch  train_loss  valid_loss  accuracy  time", then
    // "0      0.810057    0.461940    0.896825  04:39"): the header's words name the row's numbers.
    std::vector<std::string_view> cells;
    size_t at = 0;
    while (at < content.size() && cells.size() <= kMostSpacedColumns) {
        const size_t end = content.find_first_of(" \t", at);
        cells.push_back(content.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at));
        if (end == std::string_view::npos)
            break;
        at = content.find_first_not_of(" \t", end);
    }
    if (cells.size() < 2 || cells.size() > kMostSpacedColumns)
        return false;
    auto isWord = [](std::string_view cell) {
        const char c = cell.front();
        return ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') &&
               cell.find_first_of(":=,;") == std::string_view::npos;
    };
    if (std::all_of(cells.begin(), cells.end(), isWord)) {
        m_spacedHeader.assign(cells.begin(), cells.end());
        return false;
    }
    if (cells.size() != m_spacedHeader.size())
        return false;
    m_table.pairs.clear();
    for (size_t i = 0; i < cells.size(); ++i) {
        double value = 0;
        const std::string_view cell = cells[i];
        const char* end = cell.data() + cell.size();
        const auto parsed = std::from_chars(cell.data() + (cell.front() == '+'), end, value);
        if (parsed.ec == std::errc() && parsed.ptr == end) {
            m_table.pairs.push_back(textrecord::Pair{m_spacedHeader[i], value, false});
            continue;
        }
        // A clock ("04:39") is a column of the row, not a value; anything else: no row of this table.
        // The pairs taken so far go with it: left behind, the next table flush would name them from
        // m_tableNames, which holds none for them (it read freed strings; ASan found it on prose).
        if (cell.find_first_not_of("0123456789:.") != std::string_view::npos || cell.find(':') == std::string_view::npos) {
            m_table.pairs.clear();
            return false;
        }
    }
    if (m_table.pairs.size() < 2) {
        m_table.pairs.clear();
        return false;
    }
    m_table.indented = false;
    m_table.barCount = m_table.barTotal = -1;
    take(m_table);
    m_table.pairs.clear();
    return true;
}

void RecordAssembler::flushTable()
{
    m_tableGroup.clear();
    if (m_table.pairs.empty() || m_table.pairs.size() != m_tableNames.size()) {
        m_table.pairs.clear(); // (a guard: each pair of a table row comes with its name)
        m_tableNames.clear();
        return;
    }
    for (size_t i = 0; i < m_table.pairs.size(); ++i)
        m_table.pairs[i].name = m_tableNames[i];
    m_table.indented = false;
    m_table.barCount = m_table.barTotal = -1;
    take(m_table);
    m_table.pairs.clear();
    m_tableNames.clear();
}

void RecordAssembler::take(const textrecord::Segment& record, double wallTime)
{
    const auto& pairs = record.pairs;
    if (pairs.empty() && record.barCount < 0) {
        if (!record.indented)
            m_continues.reset(); // other text ends a record
        return;
    }
    m_pairSlots.clear();
    size_t named = 0;
    for (size_t i = 0; i < pairs.size(); ++i) {
        size_t slot = slotOf(i, pairs[i].name);
        if (slot != SIZE_MAX && m_slots[slot].notAValue)
            slot = SIZE_MAX;
        named += slot != SIZE_MAX;
        m_pairSlots.push_back(slot);
    }
    if (named == 0 && record.barCount < 0) {
        if (!record.indented)
            m_continues.reset();
        return;
    }
    Record placed;
    placed.firstCandidate = uint32_t(m_candidates.size());
    for (size_t i = 0; i < pairs.size(); ++i) {
        const textrecord::Pair& p = pairs[i];
        if (p.absent || m_pairSlots[i] == SIZE_MAX)
            continue;
        const Slot& slot = m_slots[m_pairSlots[i]];
        if (slot.epoch && std::isnan(placed.epoch) && std::isfinite(p.value))
            placed.epoch = p.value;
        int64_t raw = 0;
        // A few step names a record at most: a line of thousands of "step=1" is not thousands of steps.
        if (slot.stepRank < 0 || placed.candidates >= kMostStepNamesARecord || !records::asStep(p.value, raw))
            continue;
        m_candidates.emplace_back(uint32_t(m_pairSlots[i]), raw);
        ++placed.candidates;
    }
    // An epoch printed on a line of its own (Keras' "Epoch 3/10") holds for the records after it.
    if (std::isnan(placed.epoch))
        placed.epoch = m_epochContext;
    else
        m_epochContext = placed.epoch;
    placed.barCount = record.barCount;
    placed.barTotal = record.barTotal;
    placed.ownValues = uint8_t(std::min<size_t>(named, 2));
    const bool placesItself = placed.candidates > 0 || placed.barCount >= 0;
    // An indented piece of one value with no step of its own continues the record above it
    // (Composer's one metric a line); an indented piece of many is a record of its own (a dict
    // printed after a progress bar's spaces).
    if (!placesItself && record.indented && named == 1 && m_continues) {
        ++m_continued;
        m_lastWasBareBar = false;
        for (size_t i = 0; i < pairs.size(); ++i)
            if (m_pairSlots[i] != SIZE_MAX)
                add(m_pairSlots[i], pairs[i], *m_continues, wallTime);
        return;
    }
    // A progress bar redrawn with nothing else: only its last drawing before a record matters.
    const bool bareBar = named == 0;
    if (bareBar && m_lastWasBareBar && m_records.back().barTotal == placed.barTotal) {
        m_records.back() = placed;
        return;
    }
    m_lastWasBareBar = bareBar;
    const int64_t index = int64_t(m_records.size());
    m_records.push_back(placed);
    m_continues = index;
    for (size_t i = 0; i < pairs.size(); ++i)
        if (m_pairSlots[i] != SIZE_MAX)
            add(m_pairSlots[i], pairs[i], index, wallTime);
}

size_t RecordAssembler::slotOf(size_t position, std::string_view name)
{
    if (position < m_slotAt.size() && m_slotAt[position] < m_slots.size() && m_slots[m_slotAt[position]].name == name)
        return m_slotAt[position];
    size_t slot = SIZE_MAX;
    auto it = m_index.find(name);
    if (it != m_index.end()) {
        slot = it->second;
    } else {
        if (m_slots.size() >= kMostNames) {
            ++m_droppedNames;
            return SIZE_MAX;
        }
        slot = m_slots.size();
        Slot created{std::string(name), {}, 0, records::stepKeyRank(name), records::isEpochKey(name),
                     textrecord::isNotAValueName(name)};
        m_slots.push_back(std::move(created));
        m_index.emplace(m_slots.back().name, slot);
    }
    if (position < textrecord::kMostPairs) {
        if (m_slotAt.size() <= position)
            m_slotAt.resize(position + 1, SIZE_MAX);
        m_slotAt[position] = slot;
    }
    return slot;
}

void RecordAssembler::add(size_t slot, const textrecord::Pair& pair, int64_t record, double wallTime)
{
    Slot& s = m_slots[slot];
    ++s.records;
    if (pair.absent)
        return;
    if (!s.points.empty() && s.points.back().step == record) {
        s.points.back() = ScalarPoint{record, pair.value, wallTime};
        return;
    }
    // A long series grows once to what the rest of the file will likely hold, at the rate it has
    // held values so far, instead of doubling: each doubling is a fresh block whose pages fault in
    // (a quarter of a large log's reading time went to page faults).
    if (s.points.size() == s.points.capacity() && s.points.size() >= kLeastPointsToForesee && m_expectedBytes > m_bytes &&
        m_bytes > 0) {
        const double share = double(m_bytes) / double(m_expectedBytes);
        const size_t foreseen = size_t(double(s.points.size()) / share * 1.05) + kLeastPointsToForesee;
        if (foreseen > s.points.capacity() * 3 / 2)
            s.points.reserve(foreseen);
    }
    s.points.push_back(ScalarPoint{record, pair.value, wallTime});
}

} // namespace nanscope

#pragma once

// The structure-finding core of the logs nanscope was not told the format of: records of named
// values, from text pieces (TextRecordLogReader), JSON objects (JsonLinesLogReader) or table rows
// (DelimitedTableReader), become series on one step axis. It decides, for every syntax alike:
//
// - the step: the best step name (RecordSteps.h) of the first record that has one, then that
//   name, counted on across epochs when it starts again at each; else the count of the main
//   progress bar (the one with the largest total: an evaluation's shorter bar is not the step);
//   else the epoch, when every record has a whole one and it never goes back; else the records'
//   order;
// - which record a piece belongs to: an indented piece of pairs with no step of its own continues
//   the record above it (Composer prints `[batch=12/100]:`, then one metric a line); a record
//   with no step of its own (an evaluation's dict, a validation row) is placed at the last step;
// - the series: a name with a number in at least three records (in every record of a log of two),
//   so that a configuration printed once, a banner or a traceback is not a series;
// - evaluation records: a record that says it is one (`"mode": "val"`) has its names prefixed
//   with that word, so its loss is not the training loss.
//
// Memory grows with the series (and at most 100,000 names), not with the input.

#include "core/importers/RecordSteps.h"
#include "core/importers/ScalarLog.h"
#include "core/importers/TextRecords.h"

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nanscope {

class RecordAssembler
{
public:
    // One record, as a piece of text parses (TextRecords.h) or as a reader builds one.
    void take(const textrecord::Segment& record, double wallTime = std::numeric_limits<double>::quiet_NaN());
    // A piece of text: parsed, then taken. Rows of a printed table (stable-baselines3's
    // "|    ep_len_mean | 203 |" between rule lines) are gathered into one record, each row's name
    // under the group row above it ("rollout/").
    void piece(std::string_view text);

    // The size of the file at `path`, when it has one: long series then grow once to what they will
    // likely hold instead of doubling (pieces' bytes are counted as they come).
    void expectBytesOf(const std::string& path);
    // Bytes of input read by a reader that takes its records itself (JSON lines, tables).
    void consumed(uint64_t bytes) { m_bytes += bytes; }
    // The input is free text, where numbers also stand in prose and in a document's tables: with
    // no step logged, finish keeps its series only when one is long or names a training quantity.
    void readsFreeText() { m_freeText = true; }

    uint64_t pieces() const { return m_pieces; }
    uint64_t records() const { return m_records.size(); }
    uint64_t binaryPieces() const { return m_binaryPieces; }
    // Whether the records gave a step (set by finish), and in words where it came from.
    bool stepLogged() const { return m_stepLogged; }
    // Why finish found no training records in what it read, when it found numbers; else empty.
    const std::string& refusal() const { return m_refusal; }
    const std::string& stepFrom() const { return m_stepFrom; }

    // Decides the step and the series on the whole log, moves the series into `log` and says in
    // its notes what was found (`kind`: "text records", "JSON lines", "table rows"). Returns the
    // number of series.
    // `lines`: the input's lines, when the records were taken rather than read as pieces.
    size_t finish(ScalarLog& log, const std::string& kind, uint64_t tooLong = 0, uint64_t lines = 0);

    static constexpr uint64_t kLeastRecords = 3;
    // Values the longest series of free text with no step holds at least, unless a series names a
    // training quantity (readsFreeText).
    static constexpr size_t kLeastFreeTextSeriesValues = 8;
    // Distinct names kept; a file with more is not a log.
    static constexpr size_t kMostNames = 100000;

private:
    struct Slot
    {
        std::string name;
        std::vector<ScalarPoint> points; // .step holds the record's index until finish
        uint64_t records = 0;
        int stepRank = -1;   // records::stepKeyRank of the name, decided once
        bool epoch = false;  // records::isEpochKey
        bool notAValue = false; // textrecord::isNotAValueName: its values are dropped
    };
    // What a record says of its place: the step names it holds (their slot and value, in
    // m_candidates from `firstCandidate` on), its epoch, a progress bar's count.
    struct Record
    {
        uint32_t firstCandidate = 0;
        uint32_t candidates = 0;
        double epoch = std::numeric_limits<double>::quiet_NaN();
        int64_t barCount = -1, barTotal = -1;
        uint8_t ownValues = 0; // values of its own piece (not of lines continuing it), up to 2
    };
    static constexpr int64_t kNoStep = std::numeric_limits<int64_t>::min();

    // The slot of the name at `position` of a record (the last record's slot there is tried first:
    // records of one log repeat their names in order); SIZE_MAX past kMostNames names.
    size_t slotOf(size_t position, std::string_view name);
    void add(size_t slot, const textrecord::Pair& pair, int64_t record, double wallTime);
    void flushTable();
    // A row of a table printed with spaces under a header of words: taken, and true.
    bool spacedTableRow(std::string_view content);
    // The slots that are series: in enough records, and not a constant logged apart from any
    // changing value (counted in `constantsLeftOut`); `valuesIn` gets how many of them have a value
    // in each record (up to 2).
    std::vector<Slot*> keptSlots(std::vector<uint8_t>& valuesIn, uint64_t& constantsLeftOut);
    // Moves the kept slots' points, placed on `steps`, into `log` as series (one value a step);
    // `listed` names the first few, `beforeFirstStep` says whether records before the first step
    // were left out. Returns the number of series.
    size_t moveSeries(const std::vector<int64_t>& steps, const std::vector<Slot*>& kept, ScalarLog& log,
                      std::string& listed, bool& beforeFirstStep);
    // The step each record logs itself, by the chosen step name, else the main progress bar's
    // count, else a whole epoch; kNoStep where it logs none.
    std::vector<int64_t> ownSteps(const std::vector<bool>& holdsSeries);
    // Which step each record is at, decided on the whole log.
    std::vector<int64_t> placeRecords(const std::vector<bool>& holdsSeries, const std::vector<Slot*>& kept);

    textrecord::Segment m_segment;
    std::vector<Slot> m_slots;
    std::map<std::string, size_t, std::less<>> m_index;
    std::vector<size_t> m_slotAt; // the slot of each pair position in the last record
    std::vector<Record> m_records;
    std::vector<std::pair<uint32_t, int64_t>> m_candidates;
    std::vector<size_t> m_pairSlots; // the slot of each pair of the record being taken
    std::string m_stepKey, m_stepFrom, m_refusal;
    bool m_epochIsStep = false, m_stepLogged = false, m_lastWasBareBar = false;
    bool m_freeText = false;
    uint64_t m_epochRestarts = 0, m_goesBack = 0;
    std::optional<int64_t> m_continues; // the record an indented piece continues
    double m_epochContext = std::numeric_limits<double>::quiet_NaN(); // the last epoch logged
    // A printed table's rows, gathered until its closing rule.
    textrecord::Segment m_table;
    std::vector<std::string> m_tableNames;
    std::string m_tableGroup;
    std::vector<std::string> m_spacedHeader; // the last line of words only: a spaced table's header
    uint64_t m_bytes = 0, m_expectedBytes = 0;
    uint64_t m_pieces = 0, m_continued = 0, m_binaryPieces = 0, m_droppedNames = 0, m_singleValues = 0;
};

} // namespace nanscope

#pragma once

// Which reader reads a log file. Every reader of a log format is one entry of one list
// (LogReaderRegistry.cpp): a sniffer that looks at the file's first bytes and says how sure it is
// that the file is its format, and a reader. Opening a file asks every sniffer and reads with the
// surest; a file no sniffer takes is refused with each one's reason. Adding a format is a new
// reader file and one line in that list (PlotJuggler's DataLoader plugins are the model).

#include "core/Result.h"
#include "core/importers/ScalarLog.h"

#include <cstdint>
#include <string>
#include <vector>

namespace nanscope {

// What the sniffers see of a file.
struct FilePrefix
{
    std::string path;
    std::string name;      // the file name
    std::string extension; // lower case, with its dot: ".log"
    uint64_t size = 0;     // of the whole file
    std::string head;      // its first kSniffBytes (fewer for a smaller file)
};

inline constexpr size_t kSniffBytes = size_t(256) << 10;

struct SniffVerdict
{
    // 0: not this reader's format (`why` says why not). Above 0, how sure: a file name the format
    // fixes (trainer_state.json) is 95, a syntax the format alone writes 80-90, a general syntax
    // found in the text 40-60.
    int confidence = 0;
    // What was found, for `nanscope info`: "text records: 214 in the first 256 KiB, step from
    // \"step\", 31 names" or, when refused, why: "no name repeats with a number on 3 lines".
    std::string what;
};

struct LogReader
{
    const char* id;     // "text-records"
    const char* format; // for people: "text log (name value records)"
    SniffVerdict (*sniff)(const FilePrefix& file);
    Result<ScalarLog> (*read)(const std::string& path);
};

// Every registered reader, in the order ties are broken (the more specific first).
const std::vector<LogReader>& logReaders();

// What sniffing one file found.
struct SniffedFile
{
    std::string path;
    const LogReader* reader = nullptr; // the surest; null when every sniffer refused
    SniffVerdict verdict;              // that reader's
    // When refused: why, in one line ("FILE: binary data (a NUL byte at byte 12)").
    std::string refusal;
};

// Reads the file's first kSniffBytes and asks every sniffer.
SniffedFile sniffLogFile(const std::string& path);
// The same on bytes already read (tests, the fuzz harness).
SniffedFile sniffLogPrefix(const FilePrefix& file);

// Files a folder walk passes over without reading them, by name (source code, images, weights,
// the W&B SDK's own debug logs), with why; empty when the name says nothing.
std::string notALogByName(const std::string& path);

} // namespace nanscope

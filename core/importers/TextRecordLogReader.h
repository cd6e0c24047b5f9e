#pragma once

// Any text log whose records hold named numbers: a training script's prints, a framework's console
// log, a progress bar's updates. Instead of knowing the format, the reader finds its structure:
//
// - records: a line, or one `\r` update of a progress bar; an indented line of pairs with no step
//   of its own continues the record above it (Composer prints `[batch=12/100]:` and then one
//   metric a line);
// - the pairs of each record, in any of the syntaxes TextRecords.h reads;
// - the step: the best step name the records hold (RecordSteps.h), counted on across epochs when
//   it starts again at each; else the count of the main progress bar (the one with the largest
//   total: an evaluation's shorter bar is not the step); else the records' order;
// - the series: a name that holds a number in at least three records (or in every record of a
//   shorter log). Everything else (banners, a configuration printed once, a traceback) is not.
//
// The read streams the file once in blocks with a bounded record length; memory grows with the
// series, not the file. The same reading of the first 256 KiB is the sniffer's evidence.

#include "core/Result.h"
#include "core/importers/LogReaderRegistry.h"
#include "core/importers/ScalarLog.h"

#include <string>

namespace nanscope {

SniffVerdict sniffTextRecordLog(const FilePrefix& file);
Result<ScalarLog> readTextRecordLog(const std::string& path);

} // namespace nanscope

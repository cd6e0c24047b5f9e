#pragma once

// Internal to core/run: a check of a variable-length string dataset against the file that holds it,
// made before libhdf5 reads the strings.
//
// Why: each variable-length string is stored as a length and a reference into a "global heap
// collection" elsewhere in the file. libhdf5 1.10 allocates a collection's declared size, and a
// string's declared length, before it checks either against the file: a run.h5 of 11 kB whose
// heap header claims 4 GiB made nanscope allocate (and touch) 4 GiB to read three event kinds
// (fuzz/findings/run_reader-oom-reading-tables.h5). This check reads the references and the
// collection headers themselves, so the largest allocation a string read can cause is bounded by
// the file's size.

#include "core/Result.h"

#include <hdf5.h>

#include <cstdint>
#include <string>

namespace nanscope::hdf5 {

// Every non-empty string of the 1-D variable-length string dataset `dataset` (`elements` of them)
// must point at a collection that starts with HDF5's heap signature and lies inside the file, and
// be no longer than that collection; together they may not be longer than the file. `filePath` is
// the file the dataset was opened from, `where` names the dataset in the error.
//
// Contiguous and chunked datasets (uncompressed, or deflated alone) are checked element by element;
// other layouts (compact, other filters), which no writer of run files uses, are not checked here
// (RunFileProbe's child, whose memory is capped, reads them first).
Status checkStringHeapReferences(hid_t dataset, uint64_t elements, const std::string& filePath,
                                 const std::string& where);

} // namespace nanscope::hdf5

#pragma once

// What a run folder holds beside its log, read from the file system alone (no HDF5 library).

#include <cstdint>
#include <map>
#include <string>

namespace nanscope {

// Whether the HDF5 file at `logPath` is still marked open for writing by its writer: the
// superblock's status flags (versions 2 and 3, the only ones SWMR writes), read from the file as it
// is on disk now. False once the writer has closed it; true for a writer still running and for one
// that was killed. False for a file that cannot be read.
bool isMarkedOpenForWriting(const std::string& logPath);

// Lists `step_<N>.<ext>` files of a folder by step. Missing folder -> empty map.
std::map<int64_t, std::string> listSteppedFiles(const std::string& directory);

} // namespace nanscope

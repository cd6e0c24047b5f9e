#include "core/run/Hdf5Handle.h"


namespace nanscope::hdf5 {

void silenceErrorPrinting()
{
    // In a thread-safe libhdf5 the error stack, and whether it prints, is per thread.
    thread_local bool silenced = false;
    if (!silenced) {
        H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
        silenced = true;
    }
}

bool isThreadSafe()
{
    hbool_t threadSafe = false;
    return H5is_library_threadsafe(&threadSafe) >= 0 && threadSafe;
}

namespace {
herr_t collectDeepest(unsigned, const H5E_error2_t* entry, void* clientData)
{
    auto* text = static_cast<std::string*>(clientData);
    if (entry && entry->desc && *entry->desc)
        *text = entry->desc; // walked from the innermost outward: the first one is the most specific
    return text->empty() ? 0 : 1;
}
} // namespace

std::string lastErrorMessage()
{
    std::string text;
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, collectDeepest, &text);
    H5Eclear2(H5E_DEFAULT);
    return text;
}

Handle variableStringType()
{
    Handle t = type(H5Tcopy(H5T_C_S1));
    H5Tset_size(t.get(), H5T_VARIABLE);
    H5Tset_cset(t.get(), H5T_CSET_UTF8);
    return t;
}

std::string libraryVersion()
{
    unsigned major = 0, minor = 0, release = 0;
    H5get_libversion(&major, &minor, &release);
    return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
}

std::string newerFormatAdvice(const std::string& hdf5Message)
{
    // libhdf5's wordings for a message, header or superblock version it does not know.
    const bool newer = hdf5Message.find("bad version number") != std::string::npos ||
                       hdf5Message.find("bad version #") != std::string::npos ||
                       hdf5Message.find("superblock version") != std::string::npos ||
                       hdf5Message.find("version not supported") != std::string::npos;
    if (!newer)
        return {};
    return "it was written in a newer HDF5 file format than this nanscope's HDF5 " + libraryVersion() +
           " reads (HDF5 says: " + hdf5Message +
           "). A newer HDF5 (2.0, as bundled by h5py 3.16 and later) wrote it with its latest format "
           "(libver=\"latest\"). Copy it into the format nanscope reads with "
           "'python -m nanscope_recorder.downgrade RUN/run.h5 NEW/run.h5' (the recorder writes libver=(\"v110\", "
           "\"v110\") itself), or build nanscope against HDF5 2.0 or later";
}

} // namespace nanscope::hdf5

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

} // namespace nanscope::hdf5

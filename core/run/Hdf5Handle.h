#pragma once

// Internal to core: RAII around HDF5 C identifiers, and the error text HDF5 leaves behind.

#include <hdf5.h>

#include <string>
#include <utility>

namespace nanscope::hdf5 {

class Handle
{
public:
    using Closer = herr_t (*)(hid_t);
    Handle() = default;
    Handle(hid_t id, Closer closer)
        : m_id(id)
        , m_closer(closer)
    {
    }
    ~Handle() { reset(); }
    Handle(Handle&& other) noexcept
        : m_id(std::exchange(other.m_id, H5I_INVALID_HID))
        , m_closer(other.m_closer)
    {
    }
    Handle& operator=(Handle&& other) noexcept
    {
        if (this != &other) {
            reset();
            m_id = std::exchange(other.m_id, H5I_INVALID_HID);
            m_closer = other.m_closer;
        }
        return *this;
    }
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;

    hid_t get() const { return m_id; }
    bool valid() const { return m_id >= 0; }
    void reset()
    {
        if (m_id >= 0 && m_closer)
            m_closer(m_id);
        m_id = H5I_INVALID_HID;
    }

private:
    hid_t m_id = H5I_INVALID_HID;
    Closer m_closer = nullptr;
};

inline Handle file(hid_t id) { return Handle(id, H5Fclose); }
inline Handle group(hid_t id) { return Handle(id, H5Gclose); }
inline Handle dataset(hid_t id) { return Handle(id, H5Dclose); }
inline Handle space(hid_t id) { return Handle(id, H5Sclose); }
inline Handle type(hid_t id) { return Handle(id, H5Tclose); }
inline Handle plist(hid_t id) { return Handle(id, H5Pclose); }
inline Handle attribute(hid_t id) { return Handle(id, H5Aclose); }

// Silences HDF5's own printing to stderr, on the calling thread: its errors become our messages instead.
void silenceErrorPrinting();
// libhdf5 was built thread-safe (Debian's is): calls from several threads are serialised inside it.
bool isThreadSafe();

// The innermost message of HDF5's current error stack ("" when none), cleared afterwards.
std::string lastErrorMessage();

// "1.10.8": the libhdf5 this process runs (for About boxes and bug reports).
std::string libraryVersion();

// What to tell a user when libhdf5's message `hdf5Message` says an object was written in a newer
// file-format version than this libhdf5 reads ("bad version number for layout message": h5py 3.16
// bundles HDF5 2.0, and libver="latest" there writes object headers that 1.10 refuses), naming
// both versions and the fix; "" when the message is about something else.
std::string newerFormatAdvice(const std::string& hdf5Message);

// A variable-length UTF-8 string type, owned by the caller.
Handle variableStringType();

} // namespace nanscope::hdf5

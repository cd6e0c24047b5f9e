#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace nanscope {

// Errors cross the core boundary as values: a message that names the file and what is wrong.
// LibTorch and HDF5 failures are caught inside core and turned into one of these.
struct Error
{
    std::string message;
};

template<typename T>
class Result
{
public:
    Result(T value)
        : m_value(std::move(value))
    {
    }
    Result(Error error)
        : m_error(std::move(error.message))
    {
    }

    bool ok() const { return m_value.has_value(); }
    explicit operator bool() const { return ok(); }

    const T& value() const&
    {
        check();
        return *m_value;
    }
    T& value() &
    {
        check();
        return *m_value;
    }
    T&& value() &&
    {
        check();
        return std::move(*m_value);
    }
    const T* operator->() const { return &value(); }
    T* operator->() { return &value(); }
    const T& operator*() const& { return value(); }
    T& operator*() & { return value(); }

    const std::string& error() const { return m_error; }

private:
    void check() const
    {
        if (!m_value)
            throw std::logic_error("Result has no value: " + m_error);
    }

    std::optional<T> m_value;
    std::string m_error;
};

class Status
{
public:
    Status() = default;
    Status(Error error)
        : m_ok(false)
        , m_error(std::move(error.message))
    {
    }
    static Status success() { return Status(); }

    bool ok() const { return m_ok; }
    explicit operator bool() const { return m_ok; }
    const std::string& error() const { return m_error; }

private:
    bool m_ok = true;
    std::string m_error;
};

} // namespace nanscope

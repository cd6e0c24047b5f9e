#pragma once

// Runs work that parses untrusted files (a user's checkpoints, optimizer states) in a forked child
// process, and hands back what it computed as bytes, so that a file that crashes the parser (a
// damaged pickle, a hostile archive) is an error naming the file instead of the end of the window
// or the command that read it. The child streams its progress back, and the caller's progress
// callback can cancel it (the child is then killed).
//
// Used by the readers whose results the window shows (OpenRun's checkpoint series,
// OptimizerScanFacts), next to RunFileProbe (run.h5's strings). The sanitizer build computes in
// this process, as RunFileProbe does: ASan's allocator can deadlock a child forked from a
// multi-threaded process.

#include "core/Progress.h"
#include "core/Result.h"

#include <cstdint>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace nanscope {

using ChildComputation = std::function<Result<std::string>(const ProgressCallback& progress)>;

// `what` names the files the work reads, for the error of a crash ("<what>: reading it crashed
// (Segmentation fault)").
Result<std::string> computeInChildProcess(const std::string& what, const ChildComputation& compute,
                                          const ProgressCallback& progress = {});

// How a forked child that reads a file is said to have crashed, from its wait status: "crashed
// (Segmentation fault)". The one wording of core's children (computeInChildProcess, RunFileProbe);
// the window's children are worded by ChildOutcome::failureText (app/children/ChildProgram.h).
std::string crashedWording(int signalNumber);

// A plain byte codec for what crosses the pipe: fixed-width little-endian numbers, sized strings
// and vectors. Reading past the end throws std::out_of_range, which the caller turns into an error.
class ByteWriter
{
public:
    template <class T>
    void number(T value)
    {
        static_assert(std::is_arithmetic_v<T>);
        const size_t at = m_bytes.size();
        m_bytes.resize(at + sizeof(T));
        std::memcpy(m_bytes.data() + at, &value, sizeof(T));
    }
    void text(const std::string& value)
    {
        number<uint64_t>(value.size());
        m_bytes += value;
    }
    void texts(const std::vector<std::string>& values)
    {
        number<uint64_t>(values.size());
        for (const auto& v : values)
            text(v);
    }
    template <class T>
    void numbers(const std::vector<T>& values)
    {
        number<uint64_t>(values.size());
        for (const T& v : values)
            number<T>(v);
    }
    std::string take() { return std::move(m_bytes); }

private:
    std::string m_bytes;
};

// Reads `bytes`, which must outlive it.
class ByteReader
{
public:
    explicit ByteReader(const std::string& bytes)
        : m_bytes(bytes)
    {
    }
    template <class T>
    T number()
    {
        T value{};
        std::memcpy(&value, take(sizeof(T)), sizeof(T));
        return value;
    }
    std::string text()
    {
        const uint64_t size = count(1);
        return std::string(take(size_t(size)), size_t(size));
    }
    std::vector<std::string> texts()
    {
        std::vector<std::string> out(size_t(count(sizeof(uint64_t))));
        for (auto& v : out)
            v = text();
        return out;
    }
    template <class T>
    std::vector<T> numbers()
    {
        std::vector<T> out(size_t(count(sizeof(T))));
        for (auto& v : out)
            v = number<T>();
        return out;
    }

private:
    // An element count that the remaining bytes can hold, elements of `least` bytes at least.
    uint64_t count(size_t least)
    {
        const uint64_t n = number<uint64_t>();
        if (n > (m_bytes.size() - m_at) / least)
            throw std::out_of_range("a count past the end of the child's answer");
        return n;
    }
    const char* take(size_t size)
    {
        if (size > m_bytes.size() - m_at)
            throw std::out_of_range("the child's answer ended early");
        const char* at = m_bytes.data() + m_at;
        m_at += size;
        return at;
    }
    const std::string& m_bytes;
    size_t m_at = 0;
};

} // namespace nanscope

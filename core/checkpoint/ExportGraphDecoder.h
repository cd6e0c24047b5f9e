#pragma once

// The graph of an ExportedProgram's JSON (models/model.json, torch/_export/serde/schema.py) decoded
// into ExportGraph: nodes, their arguments (the schema's Argument union), outputs and metadata, and
// tensor metadata. Every member is checked for its kind, and the first thing that is wrong is kept
// with where it was. Used by readExportedProgram alone.

#include "core/checkpoint/ExportedProgram.h"
#include "core/checkpoint/StrictJson.h"

#include <cstdint>
#include <string>
#include <vector>

namespace nanscope::exportjson {

using strictjson::JsonValue;

// The most dimensions a tensor of the archive may have: a hostile rank is refused before anything
// is sized by it.
constexpr int kMostTensorRank = 64;

class GraphDecoder
{
public:
    explicit GraphDecoder(std::string where)
        : m_where(std::move(where))
    {
    }

    // The first thing that was wrong, with where it was (the archive and entry), or empty.
    const std::string& error() const { return m_error; }

    // Each reads one part of the schema into `out`; false on the first thing that is wrong.
    bool graph(const JsonValue& json, ExportGraph& out);
    bool argument(const JsonValue& json, ExportArgument& out);
    bool tensorMeta(const JsonValue& json, ExportTensorMeta& out, const std::string& name);

private:
    // Keeps the first failure; always false.
    bool fail(const std::string& why);
    template<typename Each>
    bool eachItem(const JsonValue& json, Each each)
    {
        if (json.kind != JsonValue::Kind::Array)
            return fail("a list argument is not a JSON array");
        for (const JsonValue& item : json.items)
            if (!each(item))
                return false;
        return true;
    }
    bool appendName(const JsonValue& json, std::vector<std::string>& names);
    bool tensorName(const JsonValue& json, ExportArgument& out, ExportArgument::Kind kind);
    bool optionalTensor(const JsonValue& json, std::vector<std::string>& names);
    bool integer(const JsonValue& json, std::vector<int64_t>& out);
    bool number(const JsonValue& json, std::vector<double>& out);
    bool boolean(const JsonValue& json, std::vector<int64_t>& out);
    bool text(const JsonValue& json, std::vector<std::string>& out);
    bool symInt(const JsonValue& json, std::vector<ExportSymInt>& out);
    bool arguments(const JsonValue* json, std::vector<ExportArgument>& out, const char* what);
    bool node(const JsonValue& json, ExportNode& out);

    std::string m_where;
    std::string m_error;
};

} // namespace nanscope::exportjson

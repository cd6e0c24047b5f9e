#include "core/checkpoint/ExportGraphDecoder.h"

#include <limits>

namespace nanscope::exportjson {

using strictjson::member;

bool GraphDecoder::graph(const JsonValue& json, ExportGraph& out)
{
    if (json.kind != JsonValue::Kind::Object)
        return fail("a graph is not a JSON object");
    if (!arguments(member(json, "inputs"), out.inputs, "graph inputs") ||
        !arguments(member(json, "outputs"), out.outputs, "graph outputs"))
        return false;
    const JsonValue* nodes = member(json, "nodes");
    if (!nodes || nodes->kind != JsonValue::Kind::Array)
        return fail("the graph has no node list");
    out.nodes.reserve(nodes->items.size());
    for (const JsonValue& item : nodes->items)
        if (!node(item, out.nodes.emplace_back()))
            return false;
    if (const JsonValue* values = member(json, "tensor_values"); values && values->kind == JsonValue::Kind::Object)
        for (const auto& [name, meta] : values->members)
            if (!tensorMeta(meta, out.tensorValues[name], name))
                return false;
    return true;
}

bool GraphDecoder::argument(const JsonValue& json, ExportArgument& out)
{
    if (json.kind != JsonValue::Kind::Object || json.members.size() != 1)
        return fail("an argument is not a one-member object (the schema's Argument union)");
    const auto& [kind, value] = json.members.front();
    using K = ExportArgument::Kind;
    if (kind == "as_none")
        out.kind = K::None;
    else if (kind == "as_tensor")
        return tensorName(value, out, K::Tensor);
    else if (kind == "as_tensors") {
        out.kind = K::Tensors;
        return eachItem(value, [&](const JsonValue& item) { return appendName(item, out.names); });
    } else if (kind == "as_optional_tensor") {
        out.kind = K::OptionalTensor;
        return optionalTensor(value, out.names);
    } else if (kind == "as_optional_tensors") {
        out.kind = K::OptionalTensors;
        return eachItem(value, [&](const JsonValue& item) { return optionalTensor(item, out.names); });
    } else if (kind == "as_int" || kind == "as_scalar_type" || kind == "as_memory_format" || kind == "as_layout") {
        out.kind = kind == "as_int" ? K::Int : kind == "as_scalar_type" ? K::ScalarType
                                           : kind == "as_memory_format" ? K::MemoryFormat : K::Layout;
        return integer(value, out.ints);
    } else if (kind == "as_ints") {
        out.kind = K::Ints;
        return eachItem(value, [&](const JsonValue& item) { return integer(item, out.ints); });
    } else if (kind == "as_float") {
        out.kind = K::Float;
        return number(value, out.floats);
    } else if (kind == "as_floats") {
        out.kind = K::Floats;
        return eachItem(value, [&](const JsonValue& item) { return number(item, out.floats); });
    } else if (kind == "as_bool") {
        out.kind = K::Bool;
        return boolean(value, out.ints);
    } else if (kind == "as_bools") {
        out.kind = K::Bools;
        return eachItem(value, [&](const JsonValue& item) { return boolean(item, out.ints); });
    } else if (kind == "as_string") {
        out.kind = K::String;
        return text(value, out.strings);
    } else if (kind == "as_strings") {
        out.kind = K::Strings;
        return eachItem(value, [&](const JsonValue& item) { return text(item, out.strings); });
    } else if (kind == "as_sym_int") {
        out.kind = K::SymInt;
        return symInt(value, out.symInts);
    } else if (kind == "as_sym_ints") {
        out.kind = K::SymInts;
        return eachItem(value, [&](const JsonValue& item) { return symInt(item, out.symInts); });
    } else if (kind == "as_device") {
        out.kind = K::Device;
        const JsonValue* type = member(value, "type");
        if (!type || type->kind != JsonValue::Kind::String)
            return fail("a device argument has no type");
        out.deviceType = type->text;
        if (const JsonValue* index = member(value, "index"); index && index->kind == JsonValue::Kind::Number)
            out.deviceIndex = index->integer;
    } else if (kind == "as_graph") {
        out.kind = K::Graph;
        const JsonValue* name = member(value, "name");
        const JsonValue* body = member(value, "graph");
        if (!body)
            return fail("a graph argument has no graph");
        out.graphName = name && name->kind == JsonValue::Kind::String ? name->text : "";
        auto graph = std::make_shared<ExportGraph>();
        if (!this->graph(*body, *graph))
            return false;
        out.graph = std::move(graph);
    } else if (kind == "as_sym_bool" || kind == "as_sym_float") {
        // A symbolic bool or float the graph computes: only by name here.
        out.kind = kind == "as_sym_bool" ? K::SymBool : K::SymFloat;
        const JsonValue* name = member(value, "as_name");
        if (name && name->kind == JsonValue::Kind::String)
            out.names.push_back(name->text);
        else if (const JsonValue* constant = member(value, kind == "as_sym_bool" ? "as_bool" : "as_float"))
            return kind == "as_sym_bool" ? boolean(*constant, out.ints) : number(*constant, out.floats);
        else
            return fail("a symbolic value is neither named nor constant");
    } else {
        out.kind = K::Unsupported;
        out.unsupported = kind;
    }
    return true;
}

bool GraphDecoder::tensorMeta(const JsonValue& json, ExportTensorMeta& out, const std::string& name)
{
    const JsonValue* dtype = member(json, "dtype");
    const JsonValue* sizes = member(json, "sizes");
    if (!dtype || dtype->kind != JsonValue::Kind::Number || !sizes || sizes->kind != JsonValue::Kind::Array)
        return fail("tensor " + name + " has no dtype or sizes");
    if (sizes->items.size() > size_t(kMostTensorRank))
        return fail("tensor " + name + " has " + std::to_string(sizes->items.size()) + " dimensions");
    out.scalarType = int(dtype->integer);
    for (const JsonValue& size : sizes->items)
        if (!symInt(size, out.sizes))
            return false;
    if (const JsonValue* grad = member(json, "requires_grad"); grad && grad->kind == JsonValue::Kind::Bool)
        out.requiresGrad = grad->integer != 0;
    return true;
}

bool GraphDecoder::fail(const std::string& why)
{
    if (m_error.empty())
        m_error = m_where + ": " + why;
    return false;
}

bool GraphDecoder::appendName(const JsonValue& json, std::vector<std::string>& names)
{
    const JsonValue* name = member(json, "name");
    if (!name || name->kind != JsonValue::Kind::String)
        return fail("a tensor argument has no name");
    names.push_back(name->text);
    return true;
}

bool GraphDecoder::tensorName(const JsonValue& json, ExportArgument& out, ExportArgument::Kind kind)
{
    out.kind = kind;
    return appendName(json, out.names);
}

bool GraphDecoder::optionalTensor(const JsonValue& json, std::vector<std::string>& names)
{
    if (const JsonValue* tensor = member(json, "as_tensor"))
        return appendName(*tensor, names);
    if (member(json, "as_none")) {
        names.emplace_back();
        return true;
    }
    return fail("an optional tensor is neither a tensor nor None");
}

bool GraphDecoder::integer(const JsonValue& json, std::vector<int64_t>& out)
{
    if (json.kind != JsonValue::Kind::Number || !json.numberIsInteger)
        return fail("an integer argument is not an integer");
    out.push_back(json.integer);
    return true;
}

bool GraphDecoder::number(const JsonValue& json, std::vector<double>& out)
{
    // torch writes inf and nan as the strings "Infinity", "-Infinity" and "NaN".
    if (json.kind == JsonValue::Kind::String) {
        if (json.text == "Infinity" || json.text == "-Infinity" || json.text == "NaN") {
            out.push_back(json.text == "NaN" ? std::numeric_limits<double>::quiet_NaN()
                                             : json.text[0] == '-' ? -std::numeric_limits<double>::infinity()
                                                                   : std::numeric_limits<double>::infinity());
            return true;
        }
        return fail("a float argument is the string \"" + json.text.substr(0, 40) + "\"");
    }
    if (json.kind != JsonValue::Kind::Number)
        return fail("a float argument is not a number");
    out.push_back(json.number);
    return true;
}

bool GraphDecoder::boolean(const JsonValue& json, std::vector<int64_t>& out)
{
    if (json.kind != JsonValue::Kind::Bool)
        return fail("a bool argument is not true or false");
    out.push_back(json.integer != 0 ? 1 : 0);
    return true;
}

bool GraphDecoder::text(const JsonValue& json, std::vector<std::string>& out)
{
    if (json.kind != JsonValue::Kind::String)
        return fail("a string argument is not a string");
    out.push_back(json.text);
    return true;
}

bool GraphDecoder::symInt(const JsonValue& json, std::vector<ExportSymInt>& out)
{
    if (const JsonValue* name = member(json, "as_name"); name && name->kind == JsonValue::Kind::String) {
        out.push_back({name->text, 0});
        return true;
    }
    if (const JsonValue* constant = member(json, "as_int"); constant && constant->kind == JsonValue::Kind::Number &&
                                                             constant->numberIsInteger) {
        out.push_back({"", constant->integer});
        return true;
    }
    // A tensor meta's size that is an expression of symbols ({"as_expr": ...}): known at run time only.
    if (member(json, "as_expr")) {
        out.push_back({"<expr>", 0});
        return true;
    }
    return fail("a symbolic integer is neither named nor constant");
}

bool GraphDecoder::arguments(const JsonValue* json, std::vector<ExportArgument>& out, const char* what)
{
    if (!json || json->kind != JsonValue::Kind::Array)
        return fail(std::string(what) + " are not a list");
    for (const JsonValue& item : json->items)
        if (!argument(item, out.emplace_back()))
            return false;
    return true;
}

bool GraphDecoder::node(const JsonValue& json, ExportNode& out)
{
    const JsonValue* target = member(json, "target");
    const JsonValue* inputs = member(json, "inputs");
    const JsonValue* outputs = member(json, "outputs");
    if (!target || target->kind != JsonValue::Kind::String || !inputs || inputs->kind != JsonValue::Kind::Array ||
        !outputs || outputs->kind != JsonValue::Kind::Array)
        return fail("a node lacks its target, inputs or outputs");
    out.target = target->text;
    if (const JsonValue* name = member(json, "name"); name && name->kind == JsonValue::Kind::String)
        out.name = name->text;
    for (const JsonValue& input : inputs->items) {
        ExportNamedArgument& named = out.inputs.emplace_back();
        const JsonValue* name = member(input, "name");
        const JsonValue* arg = member(input, "arg");
        if (!arg)
            return fail("an input of " + out.target + " has no value");
        if (name && name->kind == JsonValue::Kind::String)
            named.name = name->text;
        if (const JsonValue* kind = member(input, "kind"); kind && kind->kind == JsonValue::Kind::Number)
            named.keyword = kind->integer == 2;
        if (!argument(*arg, named.arg))
            return false;
    }
    for (const JsonValue& output : outputs->items)
        if (!argument(output, out.outputs.emplace_back()))
            return false;
    if (const JsonValue* metadata = member(json, "metadata")) {
        if (const JsonValue* trace = member(*metadata, "stack_trace"); trace && trace->kind == JsonValue::Kind::String)
            out.stackTrace = trace->text;
        if (const JsonValue* stack = member(*metadata, "nn_module_stack"); stack && stack->kind == JsonValue::Kind::String)
            out.moduleStack = stack->text;
    }
    return true;
}

} // namespace nanscope::exportjson

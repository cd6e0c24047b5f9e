#pragma once

// A torch.export archive (torch.export.save: a `.pt2` zip under one root folder) read as data:
// the ExportedProgram's graph of ATen ops (models/model.json), its signature (which graph inputs
// are parameters, buffers, constants and the user's inputs), and where each weight's bytes lie.
// Nothing of the file runs as code; core/torch/ExportReplay runs the graph op by op through
// LibTorch's dispatcher. No LibTorch here, so the reader is fuzzed on its own
// (fuzz/fuzz_exported_program.cpp).
//
// The layout and the JSON schema are torch's (torch/_export/serde/schema.py, SCHEMA_VERSION;
// torch/export/pt2_archive/constants.py), as torch 2.15 writes them: schema 8.20. Another major
// version is refused naming both versions; a newer minor version is read.

#include "core/Result.h"
#include "core/checkpoint/ZipArchive.h"
#include "core/tensor/Tensor.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nanscope {

// The schema version this reader knows (torch/_export/serde/schema.py: SCHEMA_VERSION).
inline constexpr int kExportSchemaMajor = 8;
inline constexpr int kExportSchemaMinor = 20;

struct ExportGraph;

// An integer the graph computes at run time (a batch size: `as_name`), or a constant.
struct ExportSymInt
{
    std::string name; // empty for a constant
    int64_t value = 0;
};

// One argument or output of a node, as the schema's Argument union: which member it is, and its
// value. Lists hold one element per entry; an optional tensor list holds "" for None.
struct ExportArgument
{
    enum class Kind {
        None, Tensor, Tensors, OptionalTensor, OptionalTensors, Int, Ints, Float, Floats, Bool, Bools,
        String, Strings, SymInt, SymInts, SymBool, SymFloat, ScalarType, MemoryFormat, Layout, Device, Graph,
        Unsupported, // a member this reader does not replay (a custom object, an operator): `unsupported` names it
    };
    Kind kind = Kind::None;
    std::vector<std::string> names;     // Tensor, Tensors, OptionalTensor(s), SymBool/SymFloat by name
    std::vector<int64_t> ints;          // Int, Ints, Bool(s) (0 / 1), ScalarType, MemoryFormat, Layout
    std::vector<double> floats;         // Float, Floats, SymFloat constants
    std::vector<std::string> strings;   // String, Strings
    std::vector<ExportSymInt> symInts;  // SymInt, SymInts
    std::string deviceType;             // Device: "cpu", "cuda"
    std::optional<int64_t> deviceIndex; // Device
    std::shared_ptr<const ExportGraph> graph; // Graph: a higher-order op's subgraph (torch.cond's branches)
    std::string graphName;
    std::string unsupported; // the member's name, for Kind::Unsupported
};

struct ExportNamedArgument
{
    std::string name; // the op schema's argument name; "" for a higher-order op's arguments
    ExportArgument arg;
    bool keyword = false;
};

struct ExportNode
{
    std::string target; // "torch.ops.aten.linear.default", "_operator.mul", "torch.ops.higher_order.cond"
    std::vector<ExportNamedArgument> inputs;
    std::vector<ExportArgument> outputs;
    std::string name;
    std::string stackTrace;    // metadata "stack_trace": Python's frames, innermost last
    std::string moduleStack;   // metadata "nn_module_stack": "key,path,type" entries joined by ";"
};

// What the serialized graph says of one tensor value: its dtype (the schema's ScalarType numbers,
// see dtypeOfExportScalarType) and sizes (constants, or a symbol such as the batch size).
struct ExportTensorMeta
{
    int scalarType = 0;
    std::vector<ExportSymInt> sizes;
    bool requiresGrad = false;
};

struct ExportGraph
{
    std::vector<ExportArgument> inputs;  // placeholders, in order
    std::vector<ExportArgument> outputs;
    std::vector<ExportNode> nodes;
    std::map<std::string, ExportTensorMeta> tensorValues;
};

// One graph input, as the signature says what it is.
struct ExportInputSpec
{
    enum class Kind { Parameter, Buffer, TensorConstant, UserInput, ConstantInput, Other };
    Kind kind = Kind::Other;
    std::string argName;  // the placeholder's name in the graph ("p_l1_weight", "x")
    std::string target;   // the module's name for it ("l1.weight"); a constant input's own name
    bool persistent = true;
    ExportArgument constantValue; // ConstantInput: the value export fixed (use_cache=False)
    std::string otherKind;        // Other: the schema's member name ("token", "custom_obj")
};

struct ExportOutputSpec
{
    enum class Kind { UserOutput, BufferMutation, LossOutput, Other };
    Kind kind = Kind::Other;
    std::string argName;
    std::string target; // BufferMutation: the buffer it writes
};

// Where one weight, buffer or constant's bytes lie in the archive, and what they are.
struct ExportStoredTensor
{
    std::string name;       // its module name ("l1.weight", "model.rotary_emb.inv_freq")
    std::string entry;      // the zip entry that holds its storage
    DType dtype = DType::Float32;
    std::vector<int64_t> sizes, strides;
    int64_t storageOffset = 0; // in elements
    bool isParameter = false;
    bool requiresGrad = false;
};

struct ExportedProgram
{
    std::string path;   // the archive
    std::string root;   // its root folder ("model")
    int schemaMajor = 0, schemaMinor = 0;
    std::string torchVersion; // the torch that wrote it
    ExportGraph graph;
    std::vector<ExportInputSpec> inputSpecs;
    std::vector<ExportOutputSpec> outputSpecs;
    std::map<std::string, ExportStoredTensor> weights;   // by module name
    std::map<std::string, ExportStoredTensor> constants; // by name: non-persistent buffers, lifted constants
};

// True when the file is a zip whose root folder holds `archive_format` saying "pt2": what
// torch.export.save writes. False for anything else (a TorchScript archive, a pickle).
bool isExportArchive(const std::string& path);

// Reads the archive's program and the places of its tensors, checking every size against the
// file: errors name the archive and what is wrong ("models/model.json: schema version 9.0, this
// nanscope reads 8.x").
Result<ExportedProgram> readExportedProgram(const std::string& path);

// The bytes of a stored tensor, checked against its metadata: the entry must hold the storage the
// sizes, strides and offset reach, and no more than the file does (`zip`: the program's archive,
// opened once for all its tensors).
Result<std::vector<uint8_t>> readStoredTensorBytes(const ZipArchive& zip, const ExportedProgram& program,
                                                   const ExportStoredTensor& tensor);

// The nanscope dtype of the schema's ScalarType number (7 is float32); empty for one nanscope's
// tensors do not hold (complex, float8, quantized).
std::optional<DType> dtypeOfExportScalarType(int scalarType);

} // namespace nanscope

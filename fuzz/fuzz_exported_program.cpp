// libFuzzer harness: a torch.export archive (.pt2) read as data (readExportedProgram: the zip, the
// graph JSON, the signature, the weights and constants configs), then every stored tensor's bytes
// checked against its metadata.

#include "FuzzSupport.h"
#include "core/checkpoint/ExportedProgram.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::string path = nanscope::fuzz::writeInput("model.pt2", data, size);
    nanscope::isExportArchive(path);
    auto program = nanscope::readExportedProgram(path);
    if (!program)
        return 0;
    auto zip = nanscope::ZipArchive::open(path);
    if (!zip)
        __builtin_trap(); // the program was read from this very archive
    size_t read = 0;
    for (const auto* tensors : {&program->weights, &program->constants})
        for (const auto& [name, tensor] : *tensors) {
            if (++read > 64)
                return 0;
            auto bytes = nanscope::readStoredTensorBytes(*zip, *program, tensor);
            if (bytes && bytes->size() < nanscope::dtypeSize(tensor.dtype) * (tensor.sizes.empty() ? 1 : 0))
                __builtin_trap(); // a scalar's storage holds at least its one element
        }
    return 0;
}

// libFuzzer harness: readCheckpoint on any file. The seeds are safetensors files (an 8-byte header
// length, a JSON header, data), so this mostly explores the header parser; inputs that turn into a
// zip archive explore the torch.save path too. Every tensor read is walked through its view.

#include "FuzzSupport.h"
#include "core/checkpoint/CheckpointReader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    using namespace nanscope;
    const std::string path = fuzz::writeInput("model.safetensors", data, size);
    auto checkpoint = readCheckpoint(path);
    if (!checkpoint)
        return 0;
    for (const auto& named : checkpoint->tensors) {
        if (named.tensor.numel() <= (1 << 16))
            named.tensor.contiguousBytes(); // every element the view names, read through the view
    }
    return 0;
}

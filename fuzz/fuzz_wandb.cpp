// libFuzzer harness: W&B's binary run file (run-<id>.wandb), its framing (LevelDB blocks and
// fragments, CRC-32) and its protocol-buffer records, on the input's bytes. The seeds are the real
// and W&B-written files of tests/data/logs (make_seeds.py), the larger ones cut short.

#include "FuzzSupport.h"
#include "core/importers/WandbRecordReader.h"

#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    using namespace nanscope;
    readWandbRecordBytes("run-fuzz.wandb", std::string_view(reinterpret_cast<const char*>(data), size));
    return 0;
}

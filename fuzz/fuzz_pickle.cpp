// libFuzzer harness: the restricted unpickler (readPickle) on any opcode stream. Storages are served
// as zero bytes of the size asked for (up to 1 MiB), so tensor views are checked against real
// storages; every tensor found is then read through its view (TensorView::contiguousBytes), which
// trusts the reader's validation: an out-of-range view is an ASan report there.

#include "FuzzSupport.h"
#include "core/checkpoint/CheckpointReader.h"
#include "core/checkpoint/PickleReader.h"

#include <memory>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    using namespace nanscope;
    StorageLoader loader = [](const StorageRequest& request) -> Result<StorageBytes> {
        const int64_t bytes = request.numel * int64_t(dtypeSize(request.dtype));
        if (request.numel < 0 || bytes > (1 << 20))
            return Error{"fuzz: storage '" + request.key + "' too large"};
        return std::make_shared<const std::vector<uint8_t>>(size_t(bytes));
    };
    auto value = readPickle(data, size, loader, "fuzz.pkl");
    if (!value)
        return 0;
    for (const auto& named : collectTensors(*value)) {
        if (named.tensor.numel() <= (1 << 16))
            named.tensor.contiguousBytes(); // every element the view names, read through the view
    }
    return 0;
}

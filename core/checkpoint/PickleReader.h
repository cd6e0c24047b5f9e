#pragma once

// A restricted pickle virtual machine for the data.pkl of torch.save and torch.jit.save archives.
// It accepts only the opcodes those writers emit (protocol 2, plus the few protocol 3-4 opcodes a
// newer pickler may use) and only a fixed list of globals: collections.OrderedDict,
// torch._utils._rebuild_tensor_v2 / _rebuild_parameter, torch.*Storage, torch.Size and the
// TorchScript type-tag helpers; `__torch__.*` classes become plain attribute containers. Anything
// else (os.system, builtins.eval, ...) is refused by name. Nothing named in the file is imported,
// called or run: "calling" an accepted global is a fixed C++ construction.

#include "core/Result.h"
#include "core/checkpoint/PickledValue.h"

#include <functional>

namespace nanscope {

// What persistent_load receives for ('storage', torch.FloatStorage, key, location, numel).
struct StorageRequest
{
    std::string key;
    DType dtype = DType::Float32;
    std::string location;
    int64_t numel = 0;
};

// Returns the storage's bytes; the reader checks that they hold `numel` elements.
using StorageLoader = std::function<Result<StorageBytes>(const StorageRequest&)>;

// `context` names the file (and entry) in error messages.
Result<PickledValue> readPickle(const uint8_t* data, size_t size, const StorageLoader& loadStorage,
                                const std::string& context);

} // namespace nanscope

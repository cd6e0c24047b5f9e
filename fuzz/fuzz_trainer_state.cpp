// libFuzzer harness: readTrainerState on a trainer_state.json that is the input (RapidJSON's SAX
// reader underneath, core/importers/JsonFields, fed one log_history entry at a time by JsonScan).

#include "FuzzSupport.h"
#include "core/importers/TrainerStateReader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    using namespace nanscope;
    const std::string path = fuzz::writeInput("trainer_state.json", data, size);
    readTrainerState(path);
    return 0;
}

// libFuzzer harness: looksLikeTrainingTextLog (format detection) and readTrainingTextLog on a
// DeepSpeed / Megatron-LM text log that is the input, and the step-line reader of training
// scripts' stdout (looksLikeStepTextLog, readStepTextLog) on the same input. The seeds are excerpts of the real DeepSpeed
// logs (make_seeds.py) and generated Megatron and DeepSpeed-Chat lines.

#include "FuzzSupport.h"
#include "core/importers/StepTextLogReader.h"
#include "core/importers/TrainingTextLogReader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    using namespace nanscope;
    const std::string path = fuzz::writeInput("training.log", data, size);
    looksLikeTrainingTextLog(path);
    readTrainingTextLog(path);
    looksLikeStepTextLog(path);
    readStepTextLog(path);
    return 0;
}

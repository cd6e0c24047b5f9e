// libFuzzer harness: readMetricsCsv on a Lightning metrics.csv. The input up to kHparamsSeparator is
// metrics.csv; what follows it, if anything, is the hparams.yaml the reader looks for beside it.

#include "FuzzSupport.h"
#include "core/importers/MetricsCsvReader.h"

#include <cstdio>
#include <string_view>

namespace {

constexpr std::string_view kHparamsSeparator = "\n#HPARAMS.YAML#\n"; // make_seeds.py writes the same

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    using namespace nanscope;
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const size_t split = input.find(kHparamsSeparator);
    const std::string_view csv = input.substr(0, split);
    const std::string path = fuzz::writeInput("metrics.csv", reinterpret_cast<const uint8_t*>(csv.data()), csv.size());
    const std::string hparams = fuzz::scratchDirectory() + "/hparams.yaml";
    if (split == std::string_view::npos) {
        std::remove(hparams.c_str());
    } else {
        const std::string_view yaml = input.substr(split + kHparamsSeparator.size());
        fuzz::writeInput("hparams.yaml", reinterpret_cast<const uint8_t*>(yaml.data()), yaml.size());
    }
    readMetricsCsv(path);
    return 0;
}

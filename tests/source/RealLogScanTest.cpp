// The scan on real logs of other tools, against what a person reads in their numbers (each
// folder's SOURCE.md, "Truth"): skipped mixed-precision steps are not blow-ups, a one-step spike is
// a spike, the LoRA divergence is found with its onset and pattern, healthy runs raise nothing
// critical, and harmless loss-scale overflows are not a collapse.

#include "SourceTestSupport.h"

#include "core/open/RunScan.h"
#include "core/open/OpenRun.h"

#include <gtest/gtest.h>

#include <optional>

namespace nanscope {
namespace {

using testing::realLog;

struct Truth
{
    const char* folder;
    bool healthy;                             // nothing critical, no blow-up
    std::optional<IncidentKind> expectedKind; // an incident of this kind must be reported...
    int64_t onsetFrom = 0, onsetTo = 0;       // ...with its onset in [onsetFrom, onsetTo]
    std::optional<BlowupPattern> pattern;     // ...and this pattern, when given
    bool quiet = false;                       // nothing at warning or above
};

std::ostream& operator<<(std::ostream& os, const Truth& truth)
{
    return os << truth.folder;
}

const Truth kTruths[] = {
    {"TANGHULU6__Llama3-8B-Mob__lr2e-3-divergence", false, IncidentKind::Blowup, 1620, 1640, BlowupPattern::Gradual},
    {"0729max0729__PINNforEM__csvlogger-nan-step218", false, IncidentKind::Blowup, 218, 218, BlowupPattern::Sudden},
    {"BesT1CooKie1__nn_oedometer__all-nan-csv-and-tfevents", false, IncidentKind::Blowup, 49, 198},
    {"jr7072__adl_hw3__eval-loss-nan", false, IncidentKind::EvalNonfinite, 16, 16},
    // The loss of step 18 is finite (x75 its median); its gradient norm is not.
    {"5hiri__Fine-Tuning-LLM-Test__ckpt60-nan-step18", true, IncidentKind::NonfiniteGradient, 18, 18},
    {"5hiri__Fine-Tuning-LLM-Test__ckpt60-inf-step18", true, IncidentKind::NonfiniteGradient, 18, 18},
    {"ChenguangYang96UCR__KG-LLM__amp-nan-gradnorm", true, std::nullopt, 0, 0, std::nullopt, true},
    {"MemaSp__FT-Llama2-HRChatbot__amp-inf-gradnorm", true, std::nullopt, 0, 0, std::nullopt, true},
    {"10844110__t5-summarization-demo__trainer-state-and-tfevents", true, IncidentKind::Spike, 190000, 190000},
    {"HangerYang__Star__custom-keys-gradspikes", true},
    // x115 over the steps before, inside the warm-up: at least a warning (issue 26).
    {"LusterSourav__adaption-autoscientist-bisenx__gradnorm-spike", true, IncidentKind::Spike, 22, 22},
    {"DigitalIntelligenceCenter-of-ICMM__Baize-TCM__healthy-6687steps", true, std::nullopt, 0, 0, std::nullopt, true},
    {"TANGHULU6__Llama3-8B-Mob__lr2e-4-healthy", true},
    {"akhmetvaleev-ruslan__bashkir-language-audio2text__whisper-healthy", true, std::nullopt, 0, 0, std::nullopt, true},
    {"syGOAT__Mistral-v0.2-Translator-bf16__healthy", true, std::nullopt, 0, 0, std::nullopt, true},
    {"0Xero7__slm_training__csvlogger-healthy", true, std::nullopt, 0, 0, std::nullopt, true},
    {"192cm__Retail-Store-TFT__lightning-tfevents-healthy", true, std::nullopt, 0, 0, std::nullopt, true},
    {"microsoft__DeepSpeedExamples__dschat-rm-loss-scale-cascade", true},
    {"microsoft__DeepSpeedExamples__dschat-sft-overflow-hysteresis", true, std::nullopt, 0, 0, std::nullopt, true},
};

class RealLogScan : public ::testing::TestWithParam<Truth>
{
};

TEST_P(RealLogScan, AgreesWithWhatAPersonReads)
{
    const Truth& truth = GetParam();
    const std::string folder = realLog(truth.folder);
    NANSCOPE_REQUIRE_REAL_LOG(folder);
    auto run = openRun(folder);
    ASSERT_TRUE(run.ok()) << run.error();
    auto report = scanRun(**run);
    ASSERT_TRUE(report.ok()) << report.error();
    std::string listing;
    for (const Incident& i : report->report.incidents)
        listing += std::string(toString(i.kind)) + " " + toString(i.severity) + " @" + std::to_string(i.onsetStep) +
                   ": " + i.cause + "\n";

    if (truth.healthy) {
        for (const Incident& i : report->report.incidents) {
            EXPECT_NE(i.severity, Severity::Critical) << listing;
            EXPECT_NE(i.kind, IncidentKind::Blowup) << listing;
            EXPECT_NE(i.kind, IncidentKind::LossScaleCollapse) << listing;
        }
    }
    if (truth.quiet)
        for (const Incident& i : report->report.incidents)
            EXPECT_EQ(i.severity, Severity::Info) << listing;
    if (truth.expectedKind) {
        const Incident* found = nullptr;
        for (const Incident& i : report->report.incidents)
            if (i.kind == *truth.expectedKind && i.onsetStep >= truth.onsetFrom && i.onsetStep <= truth.onsetTo)
                found = found ? found : &i;
        ASSERT_NE(found, nullptr) << "expected " << toString(*truth.expectedKind) << " with onset in ["
                                  << truth.onsetFrom << ", " << truth.onsetTo << "]\n"
                                  << listing;
        if (truth.pattern) {
            ASSERT_TRUE(found->pattern.has_value()) << listing;
            EXPECT_EQ(*found->pattern, *truth.pattern) << listing;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(SourceTruths, RealLogScan, ::testing::ValuesIn(kTruths),
                         [](const ::testing::TestParamInfo<Truth>& info) {
                             std::string name = info.param.folder;
                             for (char& c : name)
                                 if (!std::isalnum(static_cast<unsigned char>(c)))
                                     c = '_';
                             return name;
                         });

} // namespace
} // namespace nanscope

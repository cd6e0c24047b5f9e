// One spelling of a number in every sentence, cell and readout (core/NumberText.h): the scan's
// diagnoses, triage, comparisons, checkpoint flags, the optimizer state and the views used seven
// formatters with three spellings of NaN ("nan", "NaN", a dash) before.
#include "core/NumberText.h"
#include "core/scan/Incident.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <limits>

using nanscope::numberText;

TEST(NumberText, SignificantDigitsAsPrintfsG)
{
    EXPECT_EQ(numberText(1234.5678), "1.23e+03");
    EXPECT_EQ(numberText(1234.5678, 6), "1234.57");
    EXPECT_EQ(numberText(0.000123456, 4), "0.0001235");
    EXPECT_EQ(numberText(65504.0, 4), "6.55e+04");
    EXPECT_EQ(numberText(-2.5e-30, 2), "-2.5e-30");
    EXPECT_EQ(numberText(0.0), "0");
    EXPECT_EQ(numberText(3.0, 0), "3") << "fewer than one digit is one";
    // Every figure the old formatters wrote for a finite value is kept (they used %.Ng or an
    // ostream with precision N, which is the same conversion).
    for (double v : { 1.0, 0.1, 1e-7, 123456789.0, 6.02214076e23, -0.5, 1.0 / 3.0 })
        for (int digits = 1; digits <= 8; ++digits) {
            char expected[64];
            std::snprintf(expected, sizeof expected, "%.*g", digits, v);
            EXPECT_EQ(numberText(v, digits), expected) << v << " at " << digits;
        }
}

TEST(NumberText, NonFiniteValuesAreSpeltAsTheScanAndTheViewsSpellThem)
{
    EXPECT_EQ(numberText(std::numeric_limits<double>::quiet_NaN()), "NaN");
    EXPECT_EQ(numberText(-std::numeric_limits<double>::quiet_NaN()), "NaN");
    EXPECT_EQ(numberText(std::numeric_limits<double>::infinity(), 6), "+Inf");
    EXPECT_EQ(numberText(-std::numeric_limits<double>::infinity(), 6), "-Inf");
}

// The incident facts the scan prints and writes into its JSON (`signatureFacts`) were formatted
// with printf, which follows the process's LC_NUMERIC (a decimal comma under a German locale in
// the window) and spelt NaN "nan". The finite figures are kept to the byte.
TEST(NumberText, IncidentFactsKeepTheirFiguresAndSpellNaNAsEverywhereElse)
{
    nanscope::IncidentEvidence evidence;
    evidence.float16HeadroomDecades = 1.234;
    evidence.headroomOf = "fc1";
    evidence.bfloat16HeadroomDecades = 37.49;
    evidence.spikeScore = 0.1234;
    evidence.lossPlateauRatio = 2.5;
    evidence.gradientLevelRatio = 12345.0;
    evidence.epsilonDominatedShare = 0.5;
    const std::vector<std::string> facts = nanscope::signatureFacts(evidence);
    auto has = [&](const std::string& fact) { return std::find(facts.begin(), facts.end(), fact) != facts.end(); };
    EXPECT_TRUE(has("float16 headroom 1.2 decades in fc1 (bfloat16 37.5 decades)"));
    EXPECT_TRUE(has("spike score 12.3%"));
    EXPECT_TRUE(has("loss plateau after/before x2.5"));
    EXPECT_TRUE(has("grad norm stays x1.23e+04 above its level before"));
    EXPECT_TRUE(has("50% of elements eps-dominated"));

    nanscope::IncidentEvidence undefined;
    undefined.spikeScore = std::numeric_limits<double>::quiet_NaN();
    const std::vector<std::string> nanFacts = nanscope::signatureFacts(undefined);
    ASSERT_EQ(nanFacts.size(), 1u);
    EXPECT_EQ(nanFacts.front(), "spike score NaN%");
}

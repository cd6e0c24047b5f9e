#include "TestRuns.h"

#include "core/run/LayerHeatmap.h"
#include "core/run/RunReader.h"
#include "core/run/RunWriter.h"

#include <algorithm>
#include <cmath>
#include <map>

using namespace nanscope;

TEST(LayerHeatmap, DownsamplingKeepsASingleNanStepAndTheExtremes)
{
    test::ScratchDir dir;
    RunSchema schema;
    schema.layers = {"a", "b", "c"};
    {
        auto writer = RunWriter::create(dir.path(), schema);
        ASSERT_TRUE(writer);
        std::vector<int64_t> steps;
        std::vector<float> grad;
        for (int64_t s = 0; s < 20000; ++s) {
            steps.push_back(s);
            grad.push_back(1.f);
            grad.push_back(s == 12345 ? NAN : 1.f);
            grad.push_back(s == 777 ? 1e6f : 0.01f);
        }
        ASSERT_TRUE((*writer)->appendRows("layers", steps, {{"grad_norm", grad}}));
    }
    auto reader = RunReader::open(dir.path());
    ASSERT_TRUE(reader);
    auto map = buildLayerHeatmap(**reader, HeatmapQuantity::GradNormLog10, 100);
    ASSERT_TRUE(map) << map.error();
    ASSERT_EQ(map->bins(), 100u);
    ASSERT_EQ(map->rows, (std::vector<std::string>{"a", "b", "c"}));
    int nanBins = 0;
    for (size_t b = 0; b < map->bins(); ++b) {
        nanBins += map->nonfinite[1 * map->bins() + b];
        if (map->nonfinite[1 * map->bins() + b]) {
            EXPECT_LE(map->binFirstStep[b], 12345);
            EXPECT_GE(map->binLastStep[b], 12345);
            EXPECT_TRUE(std::isnan(map->at(1, b)));
        }
    }
    EXPECT_EQ(nanBins, 1) << "one NaN step among 20,000 must still show at 100 bins";
    const size_t peakBin = 777 / 200;
    EXPECT_FLOAT_EQ(map->at(2, peakBin), 6.f) << "a bin keeps its largest value, not the mean";
    EXPECT_FLOAT_EQ(map->at(2, peakBin + 1), -2.f);
    EXPECT_FLOAT_EQ(map->at(0, 50), 0.f);
}

TEST(LayerHeatmap, EveryCellEqualsTheLargestLogOfItsStepsAcrossReadBlocks)
{
    // 10,007 steps in 7 bins of about 1,430: bins straddle the reader's blocks of 4,096 rows, so a
    // bin's maximum is gathered from two blocks. Zeros, negative values (no logarithm: the floor),
    // NaN and Inf among them. Each cell is checked against the obvious per-value computation.
    test::ScratchDir dir;
    RunSchema schema;
    schema.layers = {"a", "b", "c", "d"};
    const int64_t rows = 10007;
    std::vector<int64_t> steps;
    std::vector<float> grad;
    uint32_t state = 12345;
    const auto next = [&] { return state = state * 1664525u + 1013904223u; };
    for (int64_t s = 0; s < rows; ++s) {
        steps.push_back(s * 2);
        for (int layer = 0; layer < 4; ++layer) {
            const uint32_t r = next();
            float value = std::ldexp(float(r % 1000 + 1), int(r >> 24) % 40 - 20);
            if (r % 997 == 0)
                value = 0.f;
            else if (r % 991 == 0)
                value = -value;
            else if (layer == 3 && r % 4001 == 0)
                value = r % 2 ? NAN : INFINITY;
            grad.push_back(value);
        }
    }
    grad[size_t(4096 * 4 + 1)] = 1e30f; // just after the first block's end, in layer b
    grad[size_t(4095 * 4 + 2)] = 1e29f; // just before it, in layer c
    {
        auto writer = RunWriter::create(dir.path(), schema);
        ASSERT_TRUE(writer);
        ASSERT_TRUE((*writer)->appendRows("layers", steps, {{"grad_norm", grad}}));
    }
    auto reader = RunReader::open(dir.path());
    ASSERT_TRUE(reader);
    const size_t bins = 7;
    auto map = buildLayerHeatmap(**reader, HeatmapQuantity::GradNormLog10, bins);
    ASSERT_TRUE(map) << map.error();
    ASSERT_EQ(map->bins(), bins);

    const double rowsPerBin = double(rows) / double(bins);
    std::vector<float> expected(4 * bins, -INFINITY);
    std::vector<bool> nonfinite(4 * bins, false);
    for (int64_t s = 0; s < rows; ++s) {
        const size_t bin = std::min(bins - 1, size_t(double(s) / rowsPerBin));
        for (size_t layer = 0; layer < 4; ++layer) {
            const float v = grad[size_t(s) * 4 + layer];
            if (!std::isfinite(v))
                nonfinite[layer * bins + bin] = true;
            else if (v > 0)
                expected[layer * bins + bin] = std::max(expected[layer * bins + bin], std::log10(v));
        }
    }
    float floor = INFINITY;
    for (float v : expected)
        if (std::isfinite(v))
            floor = std::min(floor, v);
    int nonfiniteCells = 0;
    for (size_t layer = 0; layer < 4; ++layer)
        for (size_t b = 0; b < bins; ++b) {
            const size_t cell = layer * bins + b;
            EXPECT_EQ(bool(map->nonfinite[cell]), nonfinite[cell]) << "layer " << layer << " bin " << b;
            if (nonfinite[cell]) {
                ++nonfiniteCells;
                EXPECT_TRUE(std::isnan(map->at(layer, b)));
            } else {
                EXPECT_EQ(map->at(layer, b), std::isfinite(expected[cell]) ? expected[cell] : floor)
                    << "layer " << layer << " bin " << b;
            }
        }
    EXPECT_GT(nonfiniteCells, 0);
    EXPECT_EQ(map->at(1, size_t(4096 / rowsPerBin)), 30.f);
    EXPECT_EQ(map->at(2, size_t(4095 / rowsPerBin)), std::log10(1e29f));
}

TEST(LayerHeatmap, NonfiniteCountsComeFromTheGradientCounts)
{
    auto reader = RunReader::open(test::demoRun("division-by-zero"));
    ASSERT_TRUE(reader) << reader.error();
    auto map = buildLayerHeatmap(**reader, HeatmapQuantity::NonfiniteCount, 10000);
    ASSERT_TRUE(map) << map.error();
    ASSERT_EQ(map->bins(), 400u);
    for (size_t r = 0; r < map->rows.size(); ++r)
        for (size_t b = 0; b < map->bins(); ++b)
            ASSERT_EQ(map->at(r, b) > 0, map->binFirstStep[b] == 180) << map->rows[r] << " step " << map->binFirstStep[b];
}

TEST(LayerHeatmap, ActivationRangesOfTheDemoRun)
{
    auto reader = RunReader::open(test::demoRun("sudden-blowup"));
    ASSERT_TRUE(reader);
    auto map = buildLayerHeatmap(**reader, HeatmapQuantity::ActivationAbsMax, 100);
    ASSERT_TRUE(map) << map.error();
    EXPECT_EQ(map->rows, (std::vector<std::string>{"fc1", "fc2", "fc3"}));
    EXPECT_GT(map->bins(), 10u);
    // The fill value 999999999 of step 230 reaches fc1's output: log10 |x| well above 8.
    const size_t bin = std::lower_bound(map->binLastStep.begin(), map->binLastStep.end(), 230) - map->binLastStep.begin();
    EXPECT_GT(map->at(0, bin), 8.f);
}

TEST(LayerHeatmap, MissingTableIsAClearError)
{
    test::ScratchDir dir;
    RunSchema schema;
    schema.layers = {"a"};
    {
        auto writer = RunWriter::create(dir.path(), schema);
        ASSERT_TRUE(writer);
        ASSERT_TRUE((*writer)->appendRow("layers", 0, {{"grad_norm", {1.f}}}));
    }
    auto reader = RunReader::open(dir.path());
    ASSERT_TRUE(reader);
    auto map = buildLayerHeatmap(**reader, HeatmapQuantity::ActivationAbsMax, 100);
    ASSERT_FALSE(map) << "this run logged no activations";
    EXPECT_NE(map.error().find("/activations"), std::string::npos) << map.error();
    EXPECT_NE(map.error().find("run.h5"), std::string::npos) << map.error();
}

// An expert that no token went to at odd steps has no element measured there (NaN ranges, zero
// counts, as the recorders write it): its activation cells are no value, not non-finite; an
// output whose every element was NaN (NaN ranges, a NaN count) still is.
TEST(LayerHeatmap, AModuleThatDidNotRunIsNoValueAndAnAllNanOutputIsNonfinite)
{
    test::ScratchDir dir;
    RunSchema schema;
    schema.activations = {"router", "expert"};
    schema.activationKinds = {"Linear", "Linear"};
    {
        auto writer = RunWriter::create(dir.path(), schema);
        ASSERT_TRUE(writer);
        std::vector<int64_t> steps;
        std::map<std::string, std::vector<float>> columns;
        for (int64_t s = 0; s < 40; ++s) {
            steps.push_back(s);
            const bool idle = s % 2 == 1, poisoned = s == 30;
            for (int module = 0; module < 2; ++module) {
                const bool empty = module == 1 && (idle || poisoned);
                for (const char* figure : {"min", "max", "mean", "std"})
                    columns[figure].push_back(empty ? NAN : 2.f);
                columns["nan"].push_back(module == 1 && poisoned ? 64.f : 0.f);
                columns["inf"].push_back(0.f);
            }
        }
        ASSERT_TRUE((*writer)->appendRows("activations", steps, columns));
    }
    auto reader = RunReader::open(dir.path());
    ASSERT_TRUE(reader);
    auto map = buildLayerHeatmap(**reader, HeatmapQuantity::ActivationAbsMax, 40);
    ASSERT_TRUE(map) << map.error();
    ASSERT_EQ(map->bins(), 40u);
    for (size_t b = 0; b < 40; ++b) {
        EXPECT_FALSE(map->nonfinite[0 * 40 + b]) << "router, step " << b;
        EXPECT_EQ(bool(map->nonfinite[1 * 40 + b]), b == 30) << "expert, step " << b;
    }
    EXPECT_FLOAT_EQ(map->at(1, 0), std::log10(2.f));
}

#include "TestRuns.h"

#include "core/run/LayerHeatmap.h"
#include "core/run/RunReader.h"
#include "core/run/RunWriter.h"

#include <algorithm>
#include <cmath>

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

// Incidents on the overview's plots: a gradual blow-up's fitted growth line is drawn on the plot of
// the series it was measured on, never in another series' units.

#include "widgets/OverviewView.h"
#include "widgets/SeriesPlot.h"

#include <gtest/gtest.h>

using namespace nanscope;

namespace {

Incident gradualBlowupMeasuredOn(const std::string& series)
{
    Incident incident;
    incident.kind = IncidentKind::Blowup;
    incident.severity = Severity::Critical;
    incident.pattern = BlowupPattern::Gradual;
    incident.onsetStep = 50;
    incident.evidence.series = series;
    incident.evidence.windowBeginStep = 50;
    incident.evidence.windowEndStep = 100;
    incident.evidence.baseline = 0.1;
    incident.evidence.growthDecadesPerStep = 0.01;
    return incident;
}

void showRun(OverviewView& view)
{
    std::vector<int64_t> steps;
    std::vector<double> loss, grad;
    for (int i = 0; i <= 100; ++i) {
        steps.push_back(i);
        loss.push_back(i < 50 ? 0.1 : 0.1 * std::pow(10.0, 0.01 * (i - 50)));
        grad.push_back(1.0);
    }
    view.setScalars(steps, {{"loss", loss}, {"grad_norm", grad}}, {});
}

} // namespace

TEST(OverviewView, AGradualBlowupsTrendIsDrawnOnTheSeriesItWasMeasuredOn)
{
    OverviewView view;
    showRun(view);
    SeriesPlot* loss = view.plot("loss");
    SeriesPlot* grad = view.plot("grad_norm");
    ASSERT_TRUE(loss && grad);

    view.setIncidents({gradualBlowupMeasuredOn("scalars/loss")}); // a divergence of the loss
    EXPECT_GT(loss->trendPointCount(), 0);
    EXPECT_EQ(grad->trendPointCount(), 0) << "a loss level drawn on the gradient norm's axis";

    view.setIncidents({gradualBlowupMeasuredOn("scalars/grad_norm")});
    EXPECT_EQ(loss->trendPointCount(), 0);
    EXPECT_GT(grad->trendPointCount(), 0);

    // Measured on a module's activations, which no overview plot shows: the band, but no line.
    view.setIncidents({gradualBlowupMeasuredOn("activations/attn.scores")});
    EXPECT_EQ(loss->trendPointCount(), 0);
    EXPECT_EQ(grad->trendPointCount(), 0);
}

// Issue 50: a blow-up that began in a quantity inside the model gets that quantity's series under
// the loss, on the same steps; another incident (none) hides it, and a run that grew keeps it.
TEST(OverviewView, ABlowupsPrecursorIsDrawnUnderTheLossAndHiddenWithoutOne)
{
    OverviewView view;
    showRun(view);
    view.show();
    SeriesPlot* precursor = view.precursorPlot();
    ASSERT_TRUE(precursor);
    EXPECT_TRUE(precursor->isHidden()) << "no incident shown yet";

    std::vector<int64_t> steps;
    std::vector<double> logits;
    for (int i = 0; i <= 100; ++i) {
        steps.push_back(i);
        logits.push_back(1.0 + 0.1 * i);
    }
    Incident drift = gradualBlowupMeasuredOn("activations/logits");
    drift.evidence.baseline = 1.0;
    view.setIncidents({drift});
    view.showPrecursor("output of logits (largest value)", "activations/logits", steps, logits);
    EXPECT_FALSE(precursor->isHidden());
    EXPECT_EQ(precursor->smoothedValues().size(), logits.size());
    EXPECT_GT(precursor->trendPointCount(), 0) << "the growth fitted on the quantity it was measured on";
    EXPECT_EQ(view.plot("loss")->trendPointCount(), 0);
    view.showReadoutAt(50); // hovering any plot shows the precursor's value there too
    EXPECT_TRUE(precursor->readoutText().contains("logits")) << precursor->readoutText().toStdString();
    EXPECT_FALSE(view.addableSeries().contains("incident precursor")) << "not a Series-menu plot";

    showRun(view); // the run grew: the precursor stays as it was
    EXPECT_FALSE(precursor->isHidden());

    view.showPrecursor(QString(), QString(), {}, {});
    EXPECT_TRUE(precursor->isHidden());
}

// A log-variance head's magnitude jumped from 0.7 to 5 right after its loss switched, then crept to
// 10: the trend fitted on it (x2 over the growth region) is drawn through those points, not from the
// baseline before the jump, where it would lie under the whole climb.
TEST(OverviewView, APrecursorsTrendIsDrawnThroughItsPointsNotFromItsBaseline)
{
    OverviewView view;
    showRun(view);
    view.show();
    SeriesPlot* precursor = view.precursorPlot();
    ASSERT_TRUE(precursor);
    std::vector<int64_t> steps;
    std::vector<double> magnitude;
    for (int i = 0; i <= 100; ++i) {
        steps.push_back(i);
        magnitude.push_back(i < 50 ? 0.7 : 5.0 * std::pow(2.0, double(i - 50) / 50.0));
    }
    Incident drift = gradualBlowupMeasuredOn("activations/log_var");
    drift.evidence.baseline = 0.7;
    drift.evidence.growthDecadesPerStep = std::log10(2.0) / 50.0;
    view.setIncidents({drift});
    view.showPrecursor("output of log_var (largest |x|)", "activations/log_var", steps, magnitude);
    ASSERT_GT(precursor->trendPointCount(), 0);
    EXPECT_NEAR(precursor->trendValueAt(50), 5.0, 0.5) << "through the points";
    EXPECT_NEAR(precursor->trendValueAt(100), 10.0, 1.0);
}

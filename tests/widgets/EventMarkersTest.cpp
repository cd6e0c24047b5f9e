// The defences' events on the timeline: marked on the loss plot, with their message on hover.
#include "widgets/EventMarkers.h"
#include "widgets/OverviewView.h"
#include "widgets/SeriesPlot.h"

#include <gtest/gtest.h>

using namespace nanscope;

TEST(EventMarkers, MarksTheDefencesEventsOnTheLossPlotWithTheirMessages)
{
    OverviewView view;
    view.setScalars({0, 10, 20, 30, 40}, {{"loss", {1.0, 0.9, 0.8, 0.7, 0.6}}}, {20});
    view.setTimelineEvents({{20, "buffers_restored", "BatchNorm running statistics put back"},
                            {20, "skipped_step", "non-finite loss"}, // has its own marker already
                            {22, "incident_capture", "batches 12..22 and checkpoint 12 written"},
                            {30, "rollback", "weights, buffers and optimizer state of step 10 restored after 3 non-finite steps in a row (up to step 30); learning rate x0.5 (0.1 -> 0.05)"},
                            {35, "checkpoint", "checkpoints/step_00000035.pt (traced)"}});
    const EventMarkers* markers = view.timelineEvents();
    ASSERT_NE(markers, nullptr);
    EXPECT_EQ(markers->markedCount("rollback"), 1);
    EXPECT_EQ(markers->markedCount("buffers_restored"), 1);
    EXPECT_EQ(markers->markedCount("incident_capture"), 1);
    EXPECT_EQ(markers->markedCount("skipped_step"), 0);
    EXPECT_EQ(view.plot("loss")->markedCount(), 1) << "skipped steps keep their marker at the foot";

    const QString rollback = markers->textNear(30.4, 1.0);
    EXPECT_TRUE(rollback.startsWith("rollback at step 30:")) << rollback.toStdString();
    EXPECT_TRUE(rollback.contains("(0.1 -> 0.05)"));
    EXPECT_EQ(markers->textNear(21, 1.0).split('\n').size(), 2) << "both events near step 21 are listed";
    EXPECT_TRUE(markers->textNear(35, 1.0).isEmpty()) << "a checkpoint is no defence event";
    EXPECT_FALSE(isTimelineEventKind("note"));

    view.clear();
    EXPECT_EQ(markers->markedCount("rollback"), 0) << "a closed run leaves no markers";
    EXPECT_TRUE(markers->textNear(30, 1.0).isEmpty());
}

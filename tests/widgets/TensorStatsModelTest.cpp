// The checkpoints pane's table says what a tensor holds (issue 27): an all-NaN tensor has no L2
// norm, not a norm of 0 beside "—" for its range.
#include "widgets/TensorStatsModel.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace nanscope;

TEST(TensorStatsModel, AnAllNanTensorHasNoNorm)
{
    CheckpointTensor nan;
    nan.stats.name = "fc.weight";
    nan.stats.numel = 6;
    nan.stats.nan = 6;
    nan.stats.norm = 0; // the kernel's norm over no finite element
    CheckpointTensor finite;
    finite.stats.name = "fc.bias";
    finite.stats.numel = 2;
    finite.stats.min = -1.0;
    finite.stats.max = 2.0;
    finite.stats.norm = std::sqrt(5.0);
    TensorStatsModel model;
    model.setTensors({nan, finite});
    const QString dash = QString::fromUtf8("\u2014");
    EXPECT_EQ(model.data(model.index(0, TensorStatsModel::Min)).toString(), dash);
    EXPECT_EQ(model.data(model.index(0, TensorStatsModel::Norm)).toString(), dash) << "no finite element: no norm";
    EXPECT_EQ(model.data(model.index(1, TensorStatsModel::Norm)).toString(), QString("2.236"));
}

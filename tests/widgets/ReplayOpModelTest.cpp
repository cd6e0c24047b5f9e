// The replay pane's signature columns (issue 14): float16 headroom and dynamic range per op, a
// softmax's max |input| and entropy, red where the replay's thresholds flag them, and the
// summary's loss convention, log Z and findings.
#include "widgets/ReplayOpModel.h"
#include "widgets/ReplayView.h"

#include <QBrush>

#include <gtest/gtest.h>

#include <cmath>

using namespace nanscope;

namespace {
TensorStats valueOf(double absmax, double smallest, std::vector<int64_t> shape)
{
    TensorStats v;
    v.shape = shape;
    v.numel = 1;
    for (int64_t d : shape)
        v.numel *= d;
    v.min = -absmax;
    v.max = absmax;
    v.absmax = absmax;
    v.nonzeroAbsmin = smallest;
    return v;
}

ReplayReport grownAttention()
{
    ReplayReport report;
    report.dtype = "float32";
    report.mode = "train";
    ReplayOp scores;
    scores.index = 4;
    scores.op = "aten::mul";
    scores.module = "attn";
    scores.output = valueOf(2e4, 1e-3, {2, 6, 6});
    scores.headroom = precisionHeadroomOf(scores.output);
    ReplayOp softmax;
    softmax.index = 5;
    softmax.op = "aten::softmax";
    softmax.module = "attn";
    softmax.output = valueOf(1.0, 1e-30, {2, 6, 6});
    softmax.headroom = precisionHeadroomOf(softmax.output);
    softmax.softmax = SoftmaxSignature{2e4, 0.01, std::log(6.0)};
    report.result.ops = {scores, softmax};
    report.result.lossConvention = LossConvention::InForward;
    report.result.lossFrom = "forward(x, labels)['loss']";
    report.result.loss = 1.5;
    report.result.logits = LogitsSignature{"forward's output['logits']", 9, 2, 7.5, 7.0, 8.0};
    report.result.findings = {{ReplaySignal::AttentionLogits, 5, "Attention logits have grown.", "Normalise q and k."}};
    return report;
}

int columnTitled(const ReplayOpModel& model, const QString& title)
{
    for (int c = 0; c < model.columnCount(); ++c)
        if (model.headerData(c, Qt::Horizontal).toString().replace('\n', ' ') == title) // two-line titles
            return c;
    return -1;
}
} // namespace

TEST(ReplayOpModel, ShowsHeadroomRangeAndSoftmaxColumnsAndMarksWhatTheReplayFlags)
{
    ReplayOpModel model;
    model.setReport(grownAttention());
    const int headroom = columnTitled(model, "fp16 headroom");
    const int range = columnTitled(model, "range (bits)");
    const int softmaxInput = columnTitled(model, "softmax max|in|");
    const int entropy = columnTitled(model, "softmax entropy");
    ASSERT_GE(headroom, 0);
    ASSERT_GE(range, 0);
    ASSERT_GE(softmaxInput, 0);
    ASSERT_GE(entropy, 0);

    EXPECT_EQ(model.index(0, headroom).data().toString(), QString::number(std::log2(65504.0 / 2e4), 'f', 1));
    EXPECT_EQ(model.index(0, range).data().toString(), QString::number(std::log2(2e4 / 1e-3), 'f', 1));
    EXPECT_TRUE(model.index(0, headroom).data(ReplayOpModel::IsFlaggedRole).toBool()) << "1.7 bits to float16's limit";
    EXPECT_EQ(model.index(0, headroom).data(Qt::ForegroundRole).value<QBrush>().color(), QColor(200, 20, 20));
    EXPECT_TRUE(model.index(0, softmaxInput).data().toString().isEmpty()) << "not a softmax";

    EXPECT_EQ(model.index(1, softmaxInput).data().toString(), "2e+04");
    EXPECT_EQ(model.index(1, entropy).data().toString(), "0.01");
    EXPECT_TRUE(model.index(1, entropy).data(ReplayOpModel::IsFlaggedRole).toBool());
    EXPECT_FALSE(model.index(1, headroom).data(ReplayOpModel::IsFlaggedRole).toBool()) << "probabilities are far from 65504";
    EXPECT_FALSE(model.index(1, entropy).data(Qt::ToolTipRole).toString().isEmpty());
}

TEST(ReplayView, SummarySaysTheLossConventionLogZAndTheFindings)
{
    ReplayView view;
    view.setReport(grownAttention());
    const QString summary = view.summaryText();
    EXPECT_TRUE(summary.contains("loss computed by the model's forward")) << summary.toStdString();
    EXPECT_TRUE(summary.contains("forward(x, labels)[&#39;loss&#39;]") || summary.contains("forward(x, labels)['loss']"))
        << summary.toStdString();
    EXPECT_TRUE(summary.contains("log Z of the logits")) << summary.toStdString();
    EXPECT_TRUE(summary.contains("mean 7.5")) << summary.toStdString();
    EXPECT_TRUE(summary.contains("Attention logits have grown.")) << summary.toStdString();
    EXPECT_TRUE(summary.contains("Normalise q and k.")) << summary.toStdString();
}

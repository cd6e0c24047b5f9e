// The incident table: a multi-rank run's incidents name their rank.

#include "widgets/IncidentModel.h"

#include <QAbstractItemModelTester>

#include <gtest/gtest.h>

using namespace nanscope;

TEST(IncidentModel, AMultiRankRunsIncidentsNameTheirRank)
{
    IncidentModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
    ScanReport single;
    single.incidents.resize(1);
    single.incidents[0].kind = IncidentKind::Blowup;
    model.setReport(single);
    EXPECT_FALSE(model.hasRanks()) << "a single process: the window hides the column";
    EXPECT_FALSE(model.index(0, IncidentModel::Rank).data().isValid());
    EXPECT_EQ(model.index(0, 0).data(IncidentModel::RankRole).toInt(), -1);

    ScanReport ranks = single;
    ranks.incidents.resize(2);
    ranks.incidents[0].rank = 2;
    ranks.incidents[1].kind = IncidentKind::RankNonfinite;
    ranks.incidents[1].rank = 0;
    model.setReport(ranks);
    EXPECT_TRUE(model.hasRanks());
    EXPECT_EQ(model.headerData(IncidentModel::Rank, Qt::Horizontal).toString(), "rank");
    EXPECT_EQ(model.index(0, IncidentModel::Rank).data().toInt(), 2);
    EXPECT_EQ(model.index(1, IncidentModel::Rank).data().toInt(), 0);
    EXPECT_EQ(model.index(1, IncidentModel::Kind).data().toString(), "rank_nonfinite");
    EXPECT_EQ(model.index(0, 0).data(IncidentModel::RankRole).toInt(), 2);
}

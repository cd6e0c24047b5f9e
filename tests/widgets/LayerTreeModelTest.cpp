#include "widgets/LayerTreeModel.h"

#include <QAbstractItemModelTester>
#include <QSortFilterProxyModel>

#include <gtest/gtest.h>

using namespace nanscope;

TEST(LayerTreeModel, GroupsParametersByModulePathAndPropagatesWorstHealth)
{
    LayerTreeModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
    model.setLayers({"encoder.0.weight", "encoder.0.bias", "encoder.1.weight", "head.weight", "scale"},
                    {LayerHealth::Ok, LayerHealth::Ok, LayerHealth::Bad, LayerHealth::Warning, LayerHealth::Ok});
    EXPECT_EQ(model.parameterCount(), 5);
    ASSERT_EQ(model.rowCount(), 3) << "encoder, head and the top-level parameter";
    const QModelIndex encoder = model.index(0, 0);
    EXPECT_EQ(encoder.data().toString(), "encoder");
    EXPECT_EQ(model.rowCount(encoder), 2);
    EXPECT_EQ(encoder.data(LayerTreeModel::HealthRole).toInt(), int(LayerHealth::Bad))
        << "a module shows the worst status of what it holds";
    const QModelIndex leaf = model.indexOfParameter("encoder.1.weight");
    ASSERT_TRUE(leaf.isValid());
    EXPECT_EQ(leaf.data().toString(), "weight");
    EXPECT_EQ(leaf.data(LayerTreeModel::ModulePathRole).toString(), "encoder.1");
    EXPECT_FALSE(model.indexOfParameter("nope").isValid());

    model.setLayers({"a.weight"}, {LayerHealth::Ok});
    EXPECT_EQ(model.rowCount(), 1);
}

TEST(LayerTreeModel, FilterKeepsTheModulesOfMatchingParameters)
{
    LayerTreeModel model;
    model.setLayers({"encoder.0.weight", "encoder.1.weight", "decoder.0.weight"}, {});
    QSortFilterProxyModel filter;
    QAbstractItemModelTester tester(&filter, QAbstractItemModelTester::FailureReportingMode::Fatal);
    filter.setSourceModel(&model);
    filter.setRecursiveFilteringEnabled(true);
    filter.setFilterRole(LayerTreeModel::ParameterNameRole);
    filter.setFilterFixedString("decoder");
    ASSERT_EQ(filter.rowCount(), 1);
    EXPECT_EQ(filter.index(0, 0).data().toString(), "decoder");
}

// The NaN of the division-by-zero demo is born in `norm`, a module without parameters: it must be
// in the tree (to be chosen and replayed), with the health the scan gave it.
TEST(LayerTreeModel, ModulesWithoutParametersCanBeChosen)
{
    LayerTreeModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
    model.setLayers({"fc1.weight", "fc2.weight"}, {LayerHealth::Ok, LayerHealth::Ok}, {"fc1", "norm", "fc2"},
                    {LayerHealth::Ok, LayerHealth::Warning, LayerHealth::Ok});
    const QModelIndex norm = model.indexOfModule("norm");
    ASSERT_TRUE(norm.isValid());
    EXPECT_EQ(norm.data(LayerTreeModel::ModulePathRole).toString(), "norm");
    EXPECT_TRUE(norm.data(LayerTreeModel::ParameterNameRole).toString().isEmpty());
    EXPECT_EQ(norm.data(LayerTreeModel::HealthRole).toInt(), int(LayerHealth::Warning));
    EXPECT_EQ(model.parameterCount(), 2);
    EXPECT_TRUE(model.indexOfModule("fc1").isValid()) << "a module with parameters is there once, as before";
    EXPECT_EQ(model.rowCount(), 3);
}

#include "LayerTreeModel.h"

#include "core/run/LayerNames.h"

#include <QPainter>
#include <QPixmap>

#include <map>

namespace nanscope {

LayerTreeModel::LayerTreeModel(QObject* parent)
    : QStandardItemModel(parent)
{
    setHorizontalHeaderLabels({tr("Layer")});
}

QIcon LayerTreeModel::healthIcon(LayerHealth health)
{
    static const std::map<LayerHealth, QColor> colours{
        {LayerHealth::Ok, QColor(34, 160, 90)}, {LayerHealth::Warning, QColor(230, 150, 0)}, {LayerHealth::Bad, QColor(210, 30, 30)}};
    QPixmap pixmap(14, 14);
    pixmap.fill(Qt::transparent);
    QPainter painter(&pixmap);
    painter.setRenderHint(QPainter::Antialiasing);
    painter.setBrush(colours.at(health));
    painter.setPen(colours.at(health).darker(130));
    painter.drawEllipse(2, 2, 10, 10);
    return QIcon(pixmap);
}

void LayerTreeModel::setLayers(const std::vector<std::string>& names, const std::vector<LayerHealth>& health)
{
    beginResetModel();
    blockSignals(true);
    removeRows(0, rowCount());
    std::map<QString, QStandardItem*> modules;
    auto moduleItem = [&](const QString& path) {
        QStandardItem* parent = invisibleRootItem();
        QString current;
        for (const QString& part : path.split('.', Qt::SkipEmptyParts)) {
            current = current.isEmpty() ? part : current + "." + part;
            auto& item = modules[current];
            if (!item) {
                item = new QStandardItem(part);
                item->setEditable(false);
                item->setData(current, ModulePathRole);
                item->setData(int(LayerHealth::Ok), HealthRole);
                item->setIcon(healthIcon(LayerHealth::Ok));
                parent->appendRow(item);
            }
            parent = item;
        }
        return parent;
    };
    m_parameterCount = 0;
    for (size_t i = 0; i < names.size(); ++i) {
        const QString name = QString::fromStdString(names[i]);
        const QString module = QString::fromStdString(layernames::owningModule(names[i]));
        QStandardItem* parent = moduleItem(module);
        const LayerHealth h = i < health.size() ? health[i] : LayerHealth::Ok;
        auto* leaf = new QStandardItem(healthIcon(h), QString::fromStdString(layernames::leafName(names[i])));
        leaf->setEditable(false);
        leaf->setData(name, ParameterNameRole);
        leaf->setData(module, ModulePathRole);
        leaf->setData(int(h), HealthRole);
        leaf->setToolTip(name);
        parent->appendRow(leaf);
        ++m_parameterCount;
        // Worst status climbs up to every enclosing module.
        for (QStandardItem* up = parent; up && up != invisibleRootItem(); up = up->parent()) {
            if (up->data(HealthRole).toInt() < int(h)) {
                up->setData(int(h), HealthRole);
                up->setIcon(healthIcon(h));
            }
            if (!up->parent())
                break;
        }
    }
    blockSignals(false);
    endResetModel();
}

QModelIndex LayerTreeModel::indexOfParameter(const QString& name) const
{
    const QModelIndexList found =
        match(index(0, 0), ParameterNameRole, name, 1, Qt::MatchExactly | Qt::MatchRecursive);
    return found.isEmpty() ? QModelIndex() : found.first();
}

} // namespace nanscope

#pragma once

#include "ViewData.h"

#include <QStandardItemModel>

#include <string>
#include <vector>

namespace nanscope {

// Parameters grouped by module path: "encoder.0.weight" sits under encoder > 0. Each leaf is a
// parameter with a health status; a module shows the worst status below it.
class LayerTreeModel : public QStandardItemModel
{
    Q_OBJECT
public:
    enum Role {
        ParameterNameRole = Qt::UserRole + 1, // full name on leaves, empty on modules
        HealthRole,                           // int(LayerHealth)
        ModulePathRole                        // path of the module the row stands for
    };

    explicit LayerTreeModel(QObject* parent = nullptr);

    // `modules` (with `moduleHealth`): module paths logged without parameters of their own (a
    // normalisation, an activation), so that where a NaN was born can be chosen and replayed.
    void setLayers(const std::vector<std::string>& names, const std::vector<LayerHealth>& health,
                   const std::vector<std::string>& modules = {}, const std::vector<LayerHealth>& moduleHealth = {});
    // The row of a module path, or an invalid index.
    QModelIndex indexOfModule(const QString& path) const;
    // The leaf for a parameter name, or an invalid index.
    QModelIndex indexOfParameter(const QString& name) const;
    int parameterCount() const { return m_parameterCount; }

    static QIcon healthIcon(LayerHealth health);

private:
    int m_parameterCount = 0;
};

} // namespace nanscope

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

    void setLayers(const std::vector<std::string>& names, const std::vector<LayerHealth>& health);
    // The leaf for a parameter name, or an invalid index.
    QModelIndex indexOfParameter(const QString& name) const;
    int parameterCount() const { return m_parameterCount; }

    static QIcon healthIcon(LayerHealth health);

private:
    int m_parameterCount = 0;
};

} // namespace nanscope

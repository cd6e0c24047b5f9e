#include "app/codecs/OptimizerJson.h"

#include "app/codecs/CheckpointJson.h"
#include "app/codecs/JsonNumbers.h"

#include <QJsonArray>

#include <algorithm>

namespace nanscope {

namespace {

QJsonObject groupToJson(const OptimizerGroup& group)
{
    QJsonArray indices;
    for (int64_t index : group.parameterIndices)
        indices.append(qint64(index));
    return QJsonObject{{"lr", jsonNumber(group.lr)},
                       {"eps", jsonNumber(group.eps)},
                       {"betas", QJsonArray{jsonNumber(group.beta1), jsonNumber(group.beta2)}},
                       {"weight_decay", jsonNumber(group.weightDecay)},
                       {"params", indices}};
}

OptimizerGroup groupFromJson(const QJsonObject& o)
{
    OptimizerGroup group;
    group.lr = optionalNumber(o["lr"]);
    group.eps = optionalNumber(o["eps"]);
    const QJsonArray betas = o["betas"].toArray();
    group.beta1 = optionalNumber(betas.at(0)); // at() past the end is Undefined: read back as empty
    group.beta2 = optionalNumber(betas.at(1));
    group.weightDecay = optionalNumber(o["weight_decay"]);
    for (const auto& index : o["params"].toArray())
        group.parameterIndices.push_back(index.toInteger());
    return group;
}

QJsonObject parameterToJson(const OptimizerParameterState& p, const OptimizerGroup* group,
                            const std::vector<std::string>& flags)
{
    return QJsonObject{{"index", qint64(p.index)},
                       {"group", qint64(p.group)},
                       {"name", text(p.name)},
                       {"shape", shapeToJson(p.shape)},
                       {"has_state", p.hasState},
                       {"step", jsonNumber(p.step)},
                       {"update_rms", jsonNumber(p.updateRms)},
                       {"update_to_lr", jsonNumber(group ? updateToLearningRate(p, *group) : std::nullopt)},
                       {"eps_dominated", jsonNumber(p.epsilonDominatedShare)},
                       {"exp_avg_rms", jsonNumber(p.expAvgRms)},
                       {"sqrt_exp_avg_sq_rms", jsonNumber(p.expAvgSqRootRms)},
                       {"nonfinite", qint64(p.nonfinite)},
                       {"nonfinite_exp_avg", qint64(p.nonfiniteExpAvg)},
                       {"nonfinite_exp_avg_sq", qint64(p.nonfiniteExpAvgSq)},
                       {"flags", textArray(flags)}};
}

OptimizerParameterState parameterFromJson(const QJsonObject& o, std::vector<std::string>& flags)
{
    OptimizerParameterState p;
    p.index = o["index"].toInteger();
    p.group = size_t(std::max<qint64>(0, o["group"].toInteger()));
    p.name = o["name"].toString().toStdString();
    p.shape = shapeFromJson(o["shape"]);
    p.hasState = o["has_state"].toBool();
    p.step = optionalNumber(o["step"]);
    p.updateRms = optionalNumber(o["update_rms"]);
    p.epsilonDominatedShare = optionalNumber(o["eps_dominated"]);
    p.expAvgRms = optionalNumber(o["exp_avg_rms"]);
    p.expAvgSqRootRms = optionalNumber(o["sqrt_exp_avg_sq_rms"]);
    p.nonfinite = o["nonfinite"].toInteger();
    p.nonfiniteExpAvg = o["nonfinite_exp_avg"].toInteger();
    p.nonfiniteExpAvgSq = o["nonfinite_exp_avg_sq"].toInteger();
    flags = textsFromJson(o["flags"]);
    return p;
}

} // namespace

QJsonObject checkpointOptimizerToJson(const CheckpointOptimizer& optimizer)
{
    const OptimizerStateSummary& summary = optimizer.summary;
    QJsonArray groups, parameters;
    for (const OptimizerGroup& group : summary.groups)
        groups.append(groupToJson(group));
    for (size_t i = 0; i < summary.parameters.size(); ++i) {
        const OptimizerParameterState& p = summary.parameters[i];
        parameters.append(parameterToJson(p, optimizer.groupOf(p), i < optimizer.flags.size() ? optimizer.flags[i]
                                                                                              : std::vector<std::string>{}));
    }
    return QJsonObject{{"file", text(summary.path)},
                       {"is_adam", summary.isAdam},
                       {"names_mapped", summary.namesMapped},
                       {"names_from", optimizer.namesFrom.empty() ? QJsonValue() : QJsonValue(text(optimizer.namesFrom))},
                       {"groups", groups},
                       {"parameters", parameters},
                       {"warnings", textArray(summary.warnings)},
                       {"notes", textArray(summary.notes)}};
}

CheckpointOptimizer checkpointOptimizerFromJson(const QJsonObject& o)
{
    CheckpointOptimizer optimizer;
    OptimizerStateSummary& summary = optimizer.summary;
    summary.path = o["file"].toString().toStdString();
    summary.isAdam = o["is_adam"].toBool();
    summary.namesMapped = o["names_mapped"].toBool();
    optimizer.namesFrom = o["names_from"].toString().toStdString();
    for (const auto& group : o["groups"].toArray())
        summary.groups.push_back(groupFromJson(group.toObject()));
    for (const auto& parameter : o["parameters"].toArray()) {
        optimizer.flags.emplace_back();
        summary.parameters.push_back(parameterFromJson(parameter.toObject(), optimizer.flags.back()));
    }
    summary.warnings = textsFromJson(o["warnings"]);
    summary.notes = textsFromJson(o["notes"]);
    return optimizer;
}

} // namespace nanscope

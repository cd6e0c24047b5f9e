#include "app/codecs/CheckpointJson.h"

#include "app/codecs/JsonNumbers.h"

#include <cmath>

namespace nanscope {

namespace {

DType dtypeFromJson(const QJsonValue& value)
{
    return dtypeFromName(value.toString().toStdString()).value_or(DType::Float32);
}

} // namespace

QJsonArray shapeToJson(const std::vector<int64_t>& shape)
{
    QJsonArray array;
    for (int64_t extent : shape)
        array.append(qint64(extent));
    return array;
}

std::vector<int64_t> shapeFromJson(const QJsonValue& value)
{
    std::vector<int64_t> shape;
    for (const auto& extent : value.toArray())
        shape.push_back(extent.toInteger());
    return shape;
}

QJsonObject tensorStatsToJson(const TensorStats& s, const std::vector<std::string>& flags)
{
    QJsonObject t{{"name", text(s.name)},
                  {"shape", shapeToJson(s.shape)},
                  {"dtype", dtypeName(s.dtype)},
                  {"numel", qint64(s.numel)},
                  {"min", jsonNumber(s.min)},
                  {"max", jsonNumber(s.max)},
                  {"mean", jsonNumber(s.mean)},
                  {"std", jsonNumber(s.std)},
                  {"norm", s.norm},
                  {"absmax", s.absmax},
                  {"nan", qint64(s.nan)},
                  {"posinf", qint64(s.posinf)},
                  {"neginf", qint64(s.neginf)},
                  {"inf", qint64(s.inf())},
                  {"zero", qint64(s.zero)},
                  {"subnormal", qint64(s.subnormal)}};
    QJsonArray flagArray;
    for (const auto& flag : flags)
        flagArray.append(text(flag));
    t["flags"] = flagArray;
    if (!s.histogram.empty()) {
        QJsonArray bins;
        for (int64_t count : s.histogram)
            bins.append(qint64(count));
        t["histogram"] = bins;
    }
    if (s.spectralNorm)
        t["spectral_norm"] = jsonNumber(s.spectralNorm);
    return t;
}

TensorStats tensorStatsFromJson(const QJsonObject& o, std::vector<std::string>* flags)
{
    TensorStats s;
    s.name = o["name"].toString().toStdString();
    s.shape = shapeFromJson(o["shape"]);
    s.dtype = dtypeFromJson(o["dtype"]);
    s.numel = o["numel"].toInteger();
    s.min = optionalNumber(o["min"]);
    s.max = optionalNumber(o["max"]);
    s.mean = optionalNumber(o["mean"]);
    s.std = optionalNumber(o["std"]);
    s.norm = o["norm"].toDouble();
    s.absmax = o["absmax"].toDouble();
    s.nan = o["nan"].toInteger();
    s.posinf = o["posinf"].toInteger();
    s.neginf = o["neginf"].toInteger();
    s.zero = o["zero"].toInteger();
    s.subnormal = o["subnormal"].toInteger();
    for (const auto& count : o["histogram"].toArray())
        s.histogram.push_back(count.toInteger());
    s.spectralNorm = optionalNumber(o["spectral_norm"]);
    if (flags)
        for (const auto& flag : o["flags"].toArray())
            flags->push_back(flag.toString().toStdString());
    return s;
}

QJsonObject tensorDiffToJson(const TensorDiff& d)
{
    return QJsonObject{{"name", text(d.name)},
                       {"shape", shapeToJson(d.shapeA)},
                       {"shape_b", shapeToJson(d.shapeB)},
                       {"dtype_a", dtypeName(d.dtypeA)},
                       {"dtype_b", dtypeName(d.dtypeB)},
                       {"comparable", d.comparable},
                       {"norm_a", d.normA},
                       {"norm_b", d.normB},
                       {"diff_norm", d.diffNorm},
                       {"relative_update", jsonNumber(d.relativeUpdate)},
                       {"nonfinite_a", qint64(d.nonfiniteA)},
                       {"nonfinite_b", qint64(d.nonfiniteB)},
                       {"became_nonfinite", qint64(d.becameNonfinite)},
                       {"became_finite", qint64(d.becameFinite)}};
}

TensorDiff tensorDiffFromJson(const QJsonObject& o)
{
    TensorDiff d;
    d.name = o["name"].toString().toStdString();
    d.shapeA = shapeFromJson(o["shape"]);
    d.shapeB = o.contains("shape_b") ? shapeFromJson(o["shape_b"]) : d.shapeA;
    d.dtypeA = dtypeFromJson(o["dtype_a"]);
    d.dtypeB = dtypeFromJson(o["dtype_b"]);
    d.comparable = o["comparable"].toBool(true);
    d.normA = o["norm_a"].toDouble();
    d.normB = o["norm_b"].toDouble();
    d.diffNorm = o["diff_norm"].toDouble();
    d.relativeUpdate = optionalNumber(o["relative_update"]);
    d.nonfiniteA = o["nonfinite_a"].toInteger();
    d.nonfiniteB = o["nonfinite_b"].toInteger();
    d.becameNonfinite = o["became_nonfinite"].toInteger();
    d.becameFinite = o["became_finite"].toInteger();
    return d;
}

} // namespace nanscope

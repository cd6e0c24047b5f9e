#include "SeriesData.h"
#include "core/NumberText.h"

#include <QLocale>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace nanscope {

SplitSeries splitSeries(const std::vector<int64_t>& steps, const std::vector<double>& values, bool logScale)
{
    SplitSeries s;
    const size_t n = std::min(steps.size(), values.size());
    s.x.reserve(int(n));
    s.y.reserve(int(n));
    for (size_t i = 0; i < n; ++i) {
        const double v = values[i];
        const double step = double(steps[i]);
        if (std::isfinite(v) && !(logScale && v <= 0)) {
            s.x << step;
            s.y << v;
            continue;
        }
        if (std::isnan(v))
            s.nanX << step;
        else if (std::isinf(v))
            (v > 0 ? s.posX : s.negX) << step;
        s.x << step;
        s.y << std::numeric_limits<double>::quiet_NaN();
    }
    return s;
}

int64_t nearestStepIndex(const std::vector<int64_t>& steps, double step)
{
    if (steps.empty())
        return -1;
    auto after = std::lower_bound(steps.begin(), steps.end(), step,
                                  [](int64_t logged, double wanted) { return double(logged) < wanted; });
    if (after == steps.end())
        return int64_t(steps.size()) - 1;
    if (after != steps.begin() && step - double(*(after - 1)) <= double(*after) - step)
        --after;
    return after - steps.begin();
}

QString readoutValue(double v)
{
    return QString::fromStdString(numberText(v, 6));
}

namespace {
QString csvValue(double v)
{
    if (std::isnan(v))
        return "nan";
    if (std::isinf(v))
        return v > 0 ? "inf" : "-inf";
    return QString::number(v, 'g', QLocale::FloatingPointShortest);
}
} // namespace

QString seriesCsv(const std::vector<int64_t>& steps, const std::vector<double>& values,
                  const std::vector<double>& smoothed)
{
    QString text = "step,value,smoothed\n";
    const size_t rows = std::min(steps.size(), values.size());
    for (size_t i = 0; i < rows; ++i)
        text += QString::number(steps[i]) + ',' + csvValue(values[i]) + ','
                + csvValue(i < smoothed.size() ? smoothed[i] : values[i]) + '\n';
    return text;
}

std::vector<std::optional<QRect>> stackBandLabels(const std::vector<BandLabel>& labels, const QRect& area,
                                                  std::vector<QRect> taken)
{
    std::vector<std::optional<QRect>> placed(labels.size());
    const int top = area.top() + 4;
    for (size_t i = 0; i < labels.size(); ++i) {
        const BandLabel& label = labels[i];
        const bool fits = label.x + label.width <= area.right();
        const int left = fits ? label.x : label.x - label.width;
        if (left + label.width < area.left() || left > area.right()) {
            placed[i] = QRect(left, top, label.width, label.height); // clipped by the plot anyway
            continue;
        }
        bool duplicate = false;
        for (size_t j = 0; j < i && !duplicate; ++j)
            duplicate = placed[j] && labels[j].text == label.text && std::abs(placed[j]->left() - left) < 4;
        for (int row = 0; !duplicate && top + (row + 1) * label.height <= area.bottom(); ++row) {
            const QRect rect(left, top + row * label.height, label.width, label.height);
            if (std::any_of(taken.begin(), taken.end(), [&](const QRect& t) { return t.intersects(rect); }))
                continue;
            taken.push_back(rect);
            placed[i] = rect;
            break;
        }
    }
    return placed;
}

} // namespace nanscope

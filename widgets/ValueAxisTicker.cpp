#include "ValueAxisTicker.h"

#include <algorithm>
#include <cmath>

namespace nanscope {

namespace {
// Most significant digits a label gets: past this, neighbouring doubles cannot be told apart anyway.
constexpr int kMostDigits = 15;
} // namespace

ValueAxisTicker::ValueAxisTicker(bool logarithmic)
    : m_logarithmic(logarithmic)
{
}

int ValueAxisTicker::distinguishingPrecision(const QVector<double>& ticks, int minimum)
{
    // Neighbours must read differently, and each label must read as its own tick (to a hundredth
    // of the spacing): "0.049992" under a tick at 0.0499925 is a different number.
    double spacing = 0;
    for (int i = 1; i < ticks.size(); ++i) {
        const double gap = std::abs(ticks[i] - ticks[i - 1]);
        if (gap > 0 && (spacing == 0 || gap < spacing))
            spacing = gap;
    }
    for (int digits = std::max(minimum, 1); digits < kMostDigits; ++digits) {
        bool readable = true;
        for (int i = 0; i < ticks.size() && readable; ++i) {
            const QString label = QString::number(ticks[i], 'g', digits);
            readable = std::abs(label.toDouble() - ticks[i]) <= 0.01 * spacing
                       && (i == 0 || label != QString::number(ticks[i - 1], 'g', digits));
        }
        if (readable)
            return digits;
    }
    return kMostDigits;
}

int ValueAxisTicker::getSubTickCount(double tickStep)
{
    // Subticks between 1-2-5 or power-of-ten ticks would be spaced linearly on a log axis.
    return m_ticksAreLinear ? QCPAxisTicker::getSubTickCount(tickStep) : 0;
}

QVector<double> ValueAxisTicker::createTickVector(double tickStep, const QCPRange& range)
{
    m_ticksAreLinear = true;
    if (!m_logarithmic || !(range.lower > 0) || !(range.upper > range.lower))
        return QCPAxisTicker::createTickVector(tickStep, range);
    const double lowDecade = std::floor(std::log10(range.lower));
    const double highDecade = std::ceil(std::log10(range.upper));
    const double decades = std::log10(range.upper) - std::log10(range.lower);
    if (decades < 1) // within a decade the linear ticks of the span read best
        return QCPAxisTicker::createTickVector(tickStep, range);
    m_ticksAreLinear = false;
    QVector<double> ticks;
    // One tick below and above the range, as QCustomPlot's own tickers keep, for trimTicks.
    if (decades <= 2.5) {
        for (double decade = lowDecade - 1; decade <= std::min(highDecade, 307.0); ++decade)
            for (double mantissa : {1.0, 2.0, 5.0})
                ticks << mantissa * std::pow(10.0, decade);
    } else if (decades <= 4.5) {
        for (double decade = lowDecade - 1; decade <= std::min(highDecade, 307.0); ++decade)
            for (double mantissa : {1.0, 3.0})
                ticks << mantissa * std::pow(10.0, decade);
    } else {
        // Powers of ten, every n-th decade so that about tickCount() of them are labelled.
        const double stride = std::max(1.0, std::ceil(decades / std::max(tickCount(), 1)));
        for (double decade = std::floor(lowDecade / stride) * stride - stride; decade <= highDecade + stride;
             decade += stride)
            if (std::abs(decade) <= 307) // 10^308 and beyond are not doubles
                ticks << std::pow(10.0, decade);
    }
    return ticks;
}

QVector<QString> ValueAxisTicker::createLabelVector(const QVector<double>& ticks, const QLocale& locale,
                                                    QChar formatChar, int precision)
{
    // 'g' labels; the axis's 'b' flag still draws exponents as powers of ten (2·10^-5).
    Q_UNUSED(formatChar);
    const int digits = distinguishingPrecision(ticks, precision);
    QVector<QString> labels;
    labels.reserve(ticks.size());
    for (double tick : ticks)
        labels << getTickLabel(tick, locale, QLatin1Char('g'), digits);
    return labels;
}

} // namespace nanscope

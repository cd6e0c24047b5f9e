#pragma once

#include <qcustomplot.h>

namespace nanscope {

// The value axis of every series plot, linear or logarithmic, ticked so that each label reads as
// a number a person can use:
// - on a log axis of a few decades, ticks at 1, 2 and 5 of each decade ("20 50 100 200 500" for a
//   loss from 20 to 600: QCustomPlot's log ticker labels only 10, 100, 1000 there); over more
//   decades, powers of ten (every second or third one when they would crowd); within one decade,
//   the linear ticks of the span;
// - labels with as many significant digits as it takes for neighbouring ticks to read differently
//   (a learning rate decaying from 0.05 reads "0.04999 0.049992 ... 0.05", never "0.05 0.05 0.05").
class ValueAxisTicker : public QCPAxisTicker
{
public:
    explicit ValueAxisTicker(bool logarithmic);

    // The fewest significant digits (at least `minimum`) at which every two neighbouring ticks of
    // `ticks` get different labels in the 'g' format, each within a hundredth of the spacing of
    // its tick.
    static int distinguishingPrecision(const QVector<double>& ticks, int minimum);

protected:
    int getSubTickCount(double tickStep) override;
    QVector<double> createTickVector(double tickStep, const QCPRange& range) override;
    QVector<QString> createLabelVector(const QVector<double>& ticks, const QLocale& locale, QChar formatChar,
                                       int precision) override;

private:
    bool m_logarithmic;
    bool m_ticksAreLinear = true; // the last tick vector was linear (subticks between ticks make sense)
};

} // namespace nanscope

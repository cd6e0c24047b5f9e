#pragma once

// What a series plot draws and writes, computed without QCustomPlot (tested alone): the line and
// its non-finite markers, the logged step under the cursor, the readout's numbers, the CSV, and
// where incident labels go. SeriesPlot puts these on the canvas.

#include <QRect>
#include <QString>
#include <QVector>

#include <cstdint>
#include <optional>
#include <vector>

namespace nanscope {

// A series split into its drawable line and the steps of its non-finite values. Non-finite (and,
// on a log axis, non-positive) values leave a NaN gap in the line: no segment may pretend the
// value was finite.
struct SplitSeries
{
    QVector<double> x, y, nanX, posX, negX;
};
SplitSeries splitSeries(const std::vector<int64_t>& steps, const std::vector<double>& values, bool logScale);

// The index of the logged step nearest to `step` (the earlier one on a tie); -1 for no steps.
int64_t nearestStepIndex(const std::vector<int64_t>& steps, double step);

// A value as the readout shows it: six significant digits, "NaN", "+Inf", "-Inf".
QString readoutValue(double v);

// The series as CSV: a header `step,value,smoothed`, then one row per logged step, each value
// reading back to the same double, non-finite ones as nan, inf, -inf (what numpy and pandas parse).
QString seriesCsv(const std::vector<int64_t>& steps, const std::vector<double>& values,
                  const std::vector<double>& smoothed);

// An incident label to place: its text, the pixel x of its band's start, its size in pixels.
struct BandLabel
{
    QString text;
    int x = 0;
    int width = 0;
    int height = 0;
};

// Where each label goes inside `area` (the plot's axis rect): the highest row in which it overlaps
// no label placed before it and nothing in `taken` (the legend); reading rightwards from its band,
// or leftwards where it would run past the right edge. Nullopt: no row is free, or the same text
// already stands at the same place (it is drawn once). A label scrolled out of `area` is placed
// where it is and takes no row.
std::vector<std::optional<QRect>> stackBandLabels(const std::vector<BandLabel>& labels, const QRect& area,
                                                  std::vector<QRect> taken);

} // namespace nanscope

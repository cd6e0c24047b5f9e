"""Range statistics of values on the host, in numpy alone: what the recorder logs for a CPU
tensor (an input, a module's output), computed the same way wherever it runs, in the training
process (stats.range_stats) or in the run.h5 writer child (run_file_child), which imports numpy
and never torch. A GPU tensor's figures are computed on its device instead (stats.py).
"""
import math
import threading

import numpy as np

# Order of a range-statistics vector. `finite` (the number of finite elements) lets the host merge
# the statistics of a module that ran more than once in a forward pass.
RANGE_FIELDS = ("min", "max", "mean", "std", "nan", "inf", "finite")
RANGE_WIDTH = len(RANGE_FIELDS)
# The columns of /activations and /inputs: a range vector without its finite count.
LOGGED_RANGE_FIELDS = RANGE_FIELDS[:6]

NAN = float("nan")
NO_VALUES = (NAN, NAN, NAN, NAN, 0.0, 0.0, 0.0)
# Magnitudes whose float32 squares (and sums of 2^31 of them) stay normal and finite.
_SQUARES_SAFE = (1e-15, 1e15)
# The dtypes read as they are; any other (integers, booleans, half precision) as float64 or float32.
_READ_AS_IS = (np.dtype(np.float32), np.dtype(np.float64))

# The deviations of arrays up to this size go into a buffer kept from the last call (per thread
# and dtype); larger ones, whose passes cost far more than an allocation, into a new array.
_SCRATCH_ELEMENTS = 1 << 20


class _Scratch:
    def __init__(self):
        self._local = threading.local()

    def deviations(self, n, dtype):
        if n > _SCRATCH_ELEMENTS:
            return np.empty(n, dtype=dtype)
        buffers = getattr(self._local, "buffers", None)
        if buffers is None:
            buffers = self._local.buffers = {}
        buffer = buffers.get(dtype)
        if buffer is None or buffer.size < n:
            buffer = buffers[dtype] = np.empty(max(n, 1 << 12), dtype=dtype)
        return buffer[:n]


_scratch = _Scratch()


def as_readable(values):
    """`values` as float32 or float64 numpy values: as they are when already so (no copy), else
    converted (integers and booleans to float64, half precision to float32)."""
    values = np.asarray(values)
    if values.dtype in _READ_AS_IS:
        return values
    return values.astype(np.float32 if values.dtype.kind == "f" else np.float64)


def range_figures(values):
    """(min, max, mean, std, nan, inf, finite) over the finite elements of a numpy array, as
    floats. min/max/mean/std are NaN when no element is finite, as the C++ side writes them
    (runFileFigure); std is the sample deviation (n - 1), 0 for one finite value."""
    v = as_readable(values)
    if v.size == 0:
        return NO_VALUES
    if not v.flags.c_contiguous:
        # Sums run in memory order: a strided view (a transposed or channels-last tensor) is read
        # in row order, as the writer child reads its row-order copy, so both give the same figures.
        v = np.ascontiguousarray(v)
    if v.size > 1:
        figures = _all_finite_figures(v)
        if figures is not None:
            return figures
    return _masked_figures(v.reshape(-1))


def _all_finite_figures(v):
    """range_figures of two or more values when all are finite, else None (NaN or Inf, or float32
    values whose squares would overflow or underflow). The range, the sum, then the sum of squared
    deviations from the mean: 2-3x faster than torch.std (a Welford pass) and as exact (numpy's
    sums are pairwise, and the deviations are centred); the deviations go into a buffer kept from
    the last call, not a new allocation. Each call counts: in a training step a library call costs
    10-15 us (cold caches after the step's matrix products)."""
    lo, hi = float(v.min()), float(v.max())
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return None  # NaN or Inf: the masked path counts them
    if v.dtype == np.float32 and not _SQUARES_SAFE[0] < max(abs(lo), abs(hi)) < _SQUARES_SAFE[1]:
        return None  # float32 squares this large overflow, this small underflow: the masked path sums in float64
    n = v.size
    mean = float(v.sum()) / n
    deviations = _scratch.deviations(n, v.dtype)
    np.subtract(v, v.dtype.type(mean), out=deviations.reshape(v.shape))
    np.square(deviations, out=deviations)
    return (lo, hi, mean, math.sqrt(float(deviations.sum()) / (n - 1)), 0.0, 0.0, float(n))


def _masked_figures(v):
    """range_figures of any 1-D array, its finite values summed in float64."""
    finite = np.isfinite(v)
    count = int(np.count_nonzero(finite))
    nan = int(np.count_nonzero(np.isnan(v)))
    inf = v.size - count - nan
    if count == 0:
        return (NAN, NAN, NAN, NAN, float(nan), float(inf), 0.0)
    kept = v[finite].astype(np.float64) if count < v.size else v.astype(np.float64)
    mean = float(kept.sum()) / count
    centred = kept - mean
    m2 = float(np.square(centred, out=centred).sum())
    return (float(kept.min()), float(kept.max()), mean, math.sqrt(m2 / max(count - 1, 1)),
            float(nan), float(inf), float(count))


# The /buffers row of a normalisation layer: its running statistics' finite ranges and how many of
# their values are not finite.
BUFFER_FIELDS = ("running_mean_min", "running_mean_max", "running_var_min", "running_var_max", "nonfinite")


def buffer_figures(running_mean, running_var):
    """A normalisation layer's /buffers row from its two buffers' values (numpy arrays), as floats:
    each buffer's range over its finite values (NaN where none is), then the count of NaN and Inf
    in both."""
    mean_lo, mean_hi, mean_bad = _finite_range(running_mean)
    var_lo, var_hi, var_bad = _finite_range(running_var)
    return (mean_lo, mean_hi, var_lo, var_hi, float(mean_bad + var_bad))


def flat_buffer_figures(values, sizes):
    """buffer_figures of every layer whose running means and variances lie one after the other in
    `values` (mean 0, var 0, mean 1, var 1, ...; `sizes` their lengths in that order)."""
    rows, at = [], 0
    for mean_size, var_size in zip(sizes[0::2], sizes[1::2]):
        middle, end = at + mean_size, at + mean_size + var_size
        rows.append(buffer_figures(values[at:middle], values[middle:end]))
        at = end
    return rows


def _finite_range(values):
    """(min, max, non-finite count) of an array; healthy buffers, the usual case, need only their
    range: two library calls."""
    v = as_readable(values)
    if v.size:
        lo, hi = float(v.min()), float(v.max())
        if math.isfinite(lo) and math.isfinite(hi):
            return lo, hi, 0
    finite = np.isfinite(v)
    count = int(np.count_nonzero(finite))
    if count == 0:
        return NAN, NAN, v.size
    kept = v[finite]
    return float(kept.min()), float(kept.max()), v.size - count


def combine_moments(a, b):
    """Chan's pairwise update of two parts' (count, mean, m2): core/tensor/Moments.h's combineMoments,
    the same formula in the same order of operations (tests/data/moment_merge_cases.json checks both)."""
    (na, ma, m2a), (nb, mb, m2b) = a, b
    if nb == 0:
        return a
    if na == 0:
        return b
    total = na + nb
    delta = mb - ma
    return total, ma + delta * (nb / total), m2a + (m2b + delta * delta * (na * nb / total))


def merge_range_stats(rows):
    """Host-side merge of several range vectors (a module called more than once): the six logged
    figures."""
    if len(rows) == 1:
        return list(rows[0][:6])
    nan = sum(r[4] for r in rows)
    inf = sum(r[5] for r in rows)
    parts = [r for r in rows if r[6] > 0]
    moments = (0, 0.0, 0.0)
    for r in parts:
        moments = combine_moments(moments, (r[6], r[2], (r[6] - 1) * r[3] * r[3]))
    total, mean, m2 = moments
    if total == 0:
        return [NAN, NAN, NAN, NAN, nan, inf]
    std = math.sqrt(m2 / (total - 1)) if total > 1 else 0.0
    return [min(r[0] for r in parts), max(r[1] for r in parts), mean, std, nan, inf]


def buffers_row(parts_per_layer, figures_of=None):
    """The /buffers row of a step as {column: float32 array over the layers}: each layer's
    buffer_figures or, with figures_of, anything figures_of turns into them."""
    rows = np.array([p if figures_of is None else figures_of(p) for p in parts_per_layer],
                    dtype=np.float32).reshape(-1, len(BUFFER_FIELDS))
    return {name: rows[:, j] for j, name in enumerate(BUFFER_FIELDS)}


def ranges_row(parts_per_label, figures_of=None):
    """The /activations or /inputs row of a step as {column: float32 array over the labels}.
    parts_per_label: for each label (a module, an input) the range vectors of its calls, each a
    sequence of RANGE_WIDTH floats or, with figures_of, anything figures_of turns into one (the
    writer child's staged values)."""
    merged = np.array([merge_range_stats([p if figures_of is None else figures_of(p) for p in parts])
                       for parts in parts_per_label], dtype=np.float32).reshape(-1, len(LOGGED_RANGE_FIELDS))
    return {name: merged[:, j] for j, name in enumerate(LOGGED_RANGE_FIELDS)}

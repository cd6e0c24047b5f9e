"""Tensor statistics computed on the tensor's device without waiting for it.

Everything here returns tensors, which the recorder concatenates and copies to the host once a
step (one synchronisation per step on a GPU, none per parameter or per module), except the CPU
short paths of range_stats and buffer_stats: their figures are on the host already, as tuples of
floats (step_readback.gather_rows takes either).
"""
import math
import threading

import numpy as np
import torch

# Order of a range-statistics vector. `finite` (the number of finite elements) lets the host merge
# the statistics of a module that ran more than once in a forward pass.
RANGE_FIELDS = ("min", "max", "mean", "std", "nan", "inf", "finite")
RANGE_WIDTH = len(RANGE_FIELDS)

_NAN = float("nan")
# Magnitudes whose float32 squares (and sums of 2^31 of them) stay normal and finite.
_SQUARES_SAFE = (1e-15, 1e15)


# The dtypes read as they are: the others are converted first (_as_float).
_NUMPY_FLOATS = (torch.float32, torch.float64)


def _as_float(t):
    t = t.detach()
    if t.dtype in _NUMPY_FLOATS:
        return t
    if t.is_complex():
        t = torch.view_as_real(t)
    return t.to(torch.float32) if t.is_floating_point() else t.to(torch.float64)


def range_stats(tensor):
    """[min, max, mean, std, nan, inf, finite] (float64) over the finite elements of `tensor`.
    min/max/mean/std are NaN when no element is finite, as the C++ side writes them (runFileFigure).
    A CPU float tensor whose values are all finite gets a tuple of floats (its figures are on the
    host already); any other gets a tensor on its device, computed without waiting for the device."""
    x = _as_float(tensor)
    n = x.numel()
    if n == 0:
        return torch.tensor([_NAN, _NAN, _NAN, _NAN, 0.0, 0.0, 0.0], dtype=torch.float64, device=x.device)
    if x.device.type == "cpu" and n > 1:
        figures = _host_range_stats(x)
        if figures is not None:
            return figures
    return _masked_range_stats(x.reshape(-1))


# The deviations of tensors up to this size go into a buffer kept from the last step (per thread
# and dtype); larger ones, whose passes cost far more than an allocation, into a new array.
_SCRATCH_ELEMENTS = 1 << 20
_scratch = threading.local()


def _deviation_buffer(n, dtype):
    if n > _SCRATCH_ELEMENTS:
        return np.empty(n, dtype=dtype)
    buffers = getattr(_scratch, "buffers", None)
    if buffers is None:
        buffers = _scratch.buffers = {}
    buffer = buffers.get(dtype)
    if buffer is None or buffer.size < n:
        buffer = buffers[dtype] = np.empty(max(n, 1 << 12), dtype=dtype)
    return buffer[:n]


def _host_range_stats(x):
    """range_stats of an all-finite float32 or float64 CPU tensor of two or more values, else None
    (NaN or Inf, or float32 values whose squares would overflow or underflow). The range, the sum,
    then the sum of squared deviations from the mean: 2-3x faster than torch.std (a Welford pass,
    53 us on a 64 x 512 activation against a 4 us sum) and as exact (numpy's sums are pairwise, and
    the deviations are centred). Read through numpy, in place: in a training step each library call
    costs 10-15 us (cold caches after the step's matrix products, against 1-3 us in a loop), and
    numpy's calls are fewer and lighter than torch's for the same figures; the deviations go into a
    buffer kept from the last step, not a new allocation."""
    v = x.numpy()
    lo, hi = float(v.min()), float(v.max())
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return None  # NaN or Inf: the masked path counts them
    if v.dtype == np.float32 and not _SQUARES_SAFE[0] < max(abs(lo), abs(hi)) < _SQUARES_SAFE[1]:
        return None  # float32 squares this large overflow, this small underflow: the masked path sums in float64
    n = v.size
    mean = float(v.sum()) / n
    deviations = _deviation_buffer(n, v.dtype)
    np.subtract(v, v.dtype.type(mean), out=deviations.reshape(v.shape))
    np.square(deviations, out=deviations)
    return (lo, hi, mean, math.sqrt(float(deviations.sum()) / (n - 1)), 0.0, 0.0, float(n))


def _masked_range_stats(x):
    """range_stats without any host synchronisation."""
    finite = torch.isfinite(x)
    nan = torch.isnan(x).sum().double()
    count = finite.sum().double()
    inf = x.numel() - count - nan
    lo = torch.where(finite, x, torch.full_like(x, math.inf)).amin().double()
    hi = torch.where(finite, x, torch.full_like(x, -math.inf)).amax().double()
    zeros = torch.zeros_like(x)
    mean = torch.where(finite, x, zeros).sum(dtype=torch.float64) / count.clamp(min=1)
    centred = torch.where(finite, x.double() - mean, zeros.double())
    var = (centred * centred).sum() / (count - 1).clamp(min=1)
    none = count == 0
    nan_t = torch.full((), _NAN, dtype=torch.float64, device=x.device)
    return torch.stack([torch.where(none, nan_t, lo), torch.where(none, nan_t, hi),
                        torch.where(none, nan_t, mean), torch.where(none, nan_t, var.sqrt()),
                        nan, inf, count])


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
    """Host-side merge of several range_stats vectors (a module called more than once)."""
    if len(rows) == 1:
        return rows[0][:6]
    nan = sum(r[4] for r in rows)
    inf = sum(r[5] for r in rows)
    parts = [r for r in rows if r[6] > 0]
    moments = (0, 0.0, 0.0)
    for r in parts:
        moments = combine_moments(moments, (r[6], r[2], (r[6] - 1) * r[3] * r[3]))
    total, mean, m2 = moments
    if total == 0:
        return [_NAN, _NAN, _NAN, _NAN, nan, inf]
    std = math.sqrt(m2 / (total - 1)) if total > 1 else 0.0
    return [min(r[0] for r in parts), max(r[1] for r in parts), mean, std, nan, inf]


def finite_min_max(tensor):
    """(min, max) over the finite elements, NaN when there are none; no host synchronisation."""
    x = _as_float(tensor).reshape(-1)
    finite = torch.isfinite(x)
    lo = torch.where(finite, x, torch.full_like(x, math.inf)).amin()
    hi = torch.where(finite, x, torch.full_like(x, -math.inf)).amax()
    none = ~finite.any()
    return torch.where(none, torch.full_like(lo, _NAN), lo), torch.where(none, torch.full_like(hi, _NAN), hi)


def buffer_stats(running_mean, running_var):
    """[mean min, mean max, var min, var max, non-finite count] of a normalisation layer's running
    statistics (float64): the /buffers row, over the finite values, NaN where none is."""
    mean_host, var_host = _host_values(running_mean), _host_values(running_var)
    if mean_host is not None and var_host is not None and mean_host.size and var_host.size:
        # As in range_stats: on the CPU a host check is free, and healthy buffers (the usual case)
        # need only their two ranges, read in place through numpy.
        row = (float(mean_host.min()), float(mean_host.max()), float(var_host.min()), float(var_host.max()), 0.0)
        if all(math.isfinite(v) for v in row):
            return row
    mean_lo, mean_hi = finite_min_max(running_mean)
    var_lo, var_hi = finite_min_max(running_var)
    bad = nonfinite_count(running_mean) + nonfinite_count(running_var)
    return torch.stack([mean_lo.double(), mean_hi.double(), var_lo.double(), var_hi.double(), bad.double()])


def _host_values(tensor):
    """A CPU tensor's values as numpy (a view of float32 and float64 ones, no copy), else None."""
    t = _as_float(tensor)
    return t.numpy() if t.device.type == "cpu" else None


def nonfinite_count(tensor):
    return (~torch.isfinite(tensor.detach())).sum()


_HAS_FOREACH_NORM = hasattr(torch, "_foreach_norm")


def tensor_norms(tensors):
    """L2 norm of each tensor as one float32 vector on the first tensor's device. Uses the fused
    torch._foreach_norm where it exists (PyTorch >= 1.13) and the tensors allow it."""
    if not tensors:
        return torch.zeros(0)
    device = tensors[0].device
    dtype = tensors[0].dtype
    fused = _HAS_FOREACH_NORM and dtype in (torch.float32, torch.float64) and \
        all(t.device == device and t.dtype == dtype for t in tensors)
    if fused:
        return torch.stack(torch._foreach_norm(tensors)).float()
    # Half precision, mixed dtypes or devices: norms accumulated in float32, gathered on one device.
    norms = [torch.linalg.vector_norm(t if t.dtype in (torch.float32, torch.float64) else t.float())
             .float().to(device, non_blocking=True) for t in tensors]
    return torch.stack(norms)

"""Tensor statistics computed on the tensor's device without waiting for it.

Everything here returns tensors, which the recorder concatenates and copies to the host once a
step (one synchronisation per step on a GPU, none per parameter or per module), except for CPU
tensors in range_stats and buffer_stats: their figures are on the host already, as tuples of
floats (step_readback takes either).
"""
import math

import torch

from .host_stats import (RANGE_FIELDS, RANGE_WIDTH, buffer_figures, combine_moments, merge_range_stats,  # noqa: F401
                         range_figures)

_NAN = float("nan")

# The dtypes numpy reads as they are: the others are converted first (_as_float).
NUMPY_FLOATS = (torch.float32, torch.float64)


def _as_float(t):
    t = t.detach()
    if t.dtype in NUMPY_FLOATS:
        return t
    if t.is_complex():
        t = torch.view_as_real(t)
    return t.to(torch.float32) if t.is_floating_point() else t.to(torch.float64)


def range_stats(tensor):
    """[min, max, mean, std, nan, inf, finite] (float64) over the finite elements of `tensor`.
    min/max/mean/std are NaN when no element is finite, as the C++ side writes them (runFileFigure).
    A CPU tensor gets a tuple of floats, computed in place through numpy (host_stats, the same code
    the run.h5 writer child runs on the values it is handed); a device tensor gets a tensor on its
    device, computed without waiting for the device."""
    x = _as_float(tensor)
    if x.device.type == "cpu":
        return range_figures(x.numpy())
    if x.numel() == 0:
        return torch.tensor([_NAN, _NAN, _NAN, _NAN, 0.0, 0.0, 0.0], dtype=torch.float64, device=x.device)
    return _masked_range_stats(x.reshape(-1))


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
    statistics (float64): the /buffers row, over the finite values, NaN where none is. CPU buffers
    get a tuple of floats, read in place through numpy (host_stats, as the writer child does);
    device buffers a tensor on their device, without waiting for it."""
    mean, var = _as_float(running_mean), _as_float(running_var)
    if mean.device.type == "cpu" and var.device.type == "cpu":
        return buffer_figures(mean.numpy(), var.numpy())
    mean_lo, mean_hi = finite_min_max(running_mean)
    var_lo, var_hi = finite_min_max(running_var)
    bad = nonfinite_count(running_mean) + nonfinite_count(running_var)
    return torch.stack([mean_lo.double(), mean_hi.double(), var_lo.double(), var_hi.double(), bad.double()])


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
        norms = torch.stack(torch._foreach_norm(tensors))
        return norms if dtype == torch.float32 else norms.float()
    # Half precision, mixed dtypes or devices: norms accumulated in float32, gathered on one device.
    norms = [torch.linalg.vector_norm(t if t.dtype in (torch.float32, torch.float64) else t.float())
             .float().to(device, non_blocking=True) for t in tensors]
    return torch.stack(norms)

"""A step's figures read back from the device in one copy: the loss, each parameter's norm and
gradient norm, the normalisation layers' running statistics, the inputs' and the logged modules'
output ranges. The C++ Guard's counterpart is core/torch/GuardReadback's readStepFigures."""
import math

import numpy as np
import torch

from . import stats
from .buffer_snapshot import BufferSnapshot
from .host_stats import flat_buffer_figures
from .value_ring import StagedBuffers


def named_inputs(inputs, targets):
    """The batch's tensors as the /inputs table names them: x (or 0, 1, ... or the dict's keys), then
    y (or y0, y1, ...)."""
    named = []
    if isinstance(inputs, torch.Tensor):
        named.append(("x", inputs))
    elif isinstance(inputs, (list, tuple)):
        named.extend((str(i), t) for i, t in enumerate(inputs) if isinstance(t, torch.Tensor))
    elif isinstance(inputs, dict):
        named.extend((str(k), t) for k, t in inputs.items() if isinstance(t, torch.Tensor))
    if isinstance(targets, torch.Tensor):
        named.append(("y", targets))
    elif isinstance(targets, (list, tuple)):
        named.extend(("y%d" % i, t) for i, t in enumerate(targets) if isinstance(t, torch.Tensor))
    return named


def check_loss(loss):
    """The loss as a one-element tensor; a clear error for anything else."""
    if not isinstance(loss, (torch.Tensor, int, float)):
        raise TypeError("end_step: the loss must be a scalar tensor or a number, not a %s (pass the "
                        "value backward() ran on)" % type(loss).__name__)
    loss_t = loss.detach().reshape(-1) if isinstance(loss, torch.Tensor) else torch.tensor([float(loss)])
    if loss_t.numel() != 1:
        raise ValueError("end_step: the loss must be a single value, not a tensor of shape %s"
                         % tuple(loss.shape))
    return loss_t


def _to_host(parts, device):
    """The step's tensors on the host as numpy arrays: float64 in one copy from a GPU (one wait a
    step), as they are (float32 or float64) from the CPU."""
    if all(t.device.type == "cpu" for t in parts.values()):
        return {k: (t if t.dtype in (torch.float32, torch.float64) else t.double()).numpy()
                for k, t in parts.items()}
    keys = list(parts)
    flat = torch.cat([parts[k].reshape(-1).to(device=device, dtype=torch.float64) for k in keys]).cpu().numpy()
    host, offset = {}, 0
    for k in keys:
        n = parts[k].numel()
        host[k] = flat[offset:offset + n].reshape(parts[k].shape)
        offset += n
    return host


def total_norm(norms):
    """The L2 norm of the layers' norms (the model's), summed in float64: one conversion and one
    dot product (each library call counts in a training step)."""
    wide = np.asarray(norms, dtype=np.float64)
    return math.sqrt(float(wide @ wide))


class StepReadback:
    def __init__(self, params, norms):
        self._params = params  # [(name, parameter)]
        self._norms = norms    # [(name, module)] with running statistics
        # The running means and variances after the forward, copied flat with one torch.cat a
        # step: one array to measure or hand to the writer child, where measuring each layer's two
        # buffers costs about ten library calls (a ResNet-50 has 53 layers).
        self._after_forward = BufferSnapshot()
        # The writer child's ChildRunFile.stage once there is one: it measures the running statistics.
        self.stage = None

    def read(self, loss, input_stats, activation_hooks):
        """Computes the step's statistics on the device and copies them to the host at once."""
        with torch.no_grad():  # one block rather than a detach() per tensor
            return self._read(check_loss(loss), input_stats, activation_hooks)

    def _read(self, loss_t, input_stats, activation_hooks):
        params = [p for _, p in self._params]
        present = [i for i, p in enumerate(params) if p.grad is not None]
        grads = [params[i].grad for i in present]
        parts = {"loss": loss_t}
        if params:
            # Weights and gradients in one fused call, read back whole and split on the host:
            # each torch call costs tens of microseconds in a training step's cold caches.
            parts["norms"] = stats.tensor_norms(params + grads)
        # The row parts of /buffers, /inputs and /activations: figures on the host already (a
        # CPU tensor's, a tuple) or a note of where the writer child measures them
        # (value_ring.Staged, StagedBuffers) stay as they are; a device tensor's join the step's
        # one copy to the host.
        calls = activation_hooks.take_calls()
        buffers = self._buffer_parts()
        ranges = {"inputs": [s for _, s in input_stats], "activations": [s for _, s in calls]}
        if isinstance(buffers, list):  # per layer, not staged as one array
            ranges["buffers"] = buffers
        for key, rows in ranges.items():
            on_device = [r for r in rows if isinstance(r, torch.Tensor)]
            if on_device:
                parts[key] = torch.stack(on_device)

        host = _to_host(parts, loss_t.device)
        for key, rows in ranges.items():
            measured = iter(host.pop(key, ()))
            ranges[key] = [next(measured) if isinstance(r, torch.Tensor) else r for r in rows]
        host["loss"] = float(host["loss"][0])
        norms = np.asarray(host.pop("norms", np.zeros(0)), dtype=np.float32)
        host["param_norm"] = norms[:len(params)]
        if len(present) == len(params):
            host["grad_norm"] = norms[len(params):]
        else:
            # A parameter without a gradient received none this step: its gradient norm is 0.
            host["grad_norm"] = np.zeros(len(params), dtype=np.float32)
            host["grad_norm"][present] = norms[len(params):]
        host["buffers"] = ranges.get("buffers", buffers)
        host["inputs"] = ranges["inputs"]
        host["activations"] = [(index, part) for (index, _), part in zip(calls, ranges["activations"])]
        return host

    def _buffer_parts(self):
        """The /buffers row: each layer's figures (or a device tensor of them), or the CPU layers'
        running statistics staged for the writer child as one array (StagedBuffers)."""
        flat = None
        if self._norms and self._norms[0][1].running_mean.is_cpu:  # a device's are measured there
            self._after_forward.take(("", t) for _, m in self._norms for t in (m.running_mean, m.running_var))
            flat = self._after_forward.flat()
        if flat is None or flat[0].dtype not in stats.NUMPY_FLOATS:
            return [stats.buffer_stats(m.running_mean, m.running_var) for _, m in self._norms]
        values, sizes = flat[0].numpy(), flat[1]
        staged = self.stage(values) if self.stage is not None else None
        if staged is not None:
            return StagedBuffers(staged, sizes)
        return flat_buffer_figures(values, sizes)

    def nonfinite_counts(self, grad_norms, total):
        """The non-finite values of each gradient whose norm is not finite (a finite norm means a
        finite gradient: only the failure path counts). `total`: total_norm(grad_norms), finite
        exactly when every norm is (float32 squares cannot overflow its float64 sum)."""
        counts = np.zeros(len(self._params), dtype=np.float32)
        if math.isfinite(total):
            return counts
        for i in np.flatnonzero(~np.isfinite(grad_norms)):
            grad = self._params[i][1].grad
            counts[i] = float(stats.nonfinite_count(grad).item()) if grad is not None else 0.0
        return counts

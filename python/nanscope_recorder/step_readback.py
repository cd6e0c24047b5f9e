"""A step's figures read back from the device in one copy: the loss, each parameter's norm and
gradient norm, the normalisation layers' running statistics, the inputs' and the logged modules'
output ranges. The C++ Guard's counterpart is core/torch/GuardReadback's readStepFigures."""
import numpy as np
import torch

from . import stats


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


class StepReadback:
    def __init__(self, params, norms):
        self._params = params  # [(name, parameter)]
        self._norms = norms    # [(name, module)] with running statistics
        self._present_index = (None, None)

    def read(self, loss, input_stats, activation_hooks):
        """Computes the step's statistics on the device and copies them to the host at once."""
        loss_t = check_loss(loss)
        params = [p.detach() for _, p in self._params]
        present = [i for i, (_, p) in enumerate(self._params) if p.grad is not None]
        grads = [self._params[i][1].grad.detach() for i in present]
        parts = {"loss": loss_t}
        if params:
            parts["param_norm"] = stats.tensor_norms(params)
            device = parts["param_norm"].device
            if len(present) == len(params):
                parts["grad_norm"] = stats.tensor_norms(grads)
            else:
                # A parameter without a gradient received none this step: its gradient norm is 0.
                norms = torch.zeros(len(params), device=device)
                if grads:
                    key = (tuple(present), device)
                    if self._present_index[0] != key:  # the same parameters lack gradients step after step
                        self._present_index = (key, torch.tensor(present, device=device))
                    norms[self._present_index[1]] = stats.tensor_norms(grads).to(device)
                parts["grad_norm"] = norms
        if self._norms:
            parts["buffers"] = torch.stack([stats.buffer_stats(m.running_mean, m.running_var) for _, m in self._norms])
        if input_stats:
            parts["inputs"] = torch.stack([s for _, s in input_stats])
        calls = activation_hooks.take_calls()
        if calls:
            parts["activations"] = torch.stack([s for _, s in calls])

        # One copy to the host for the whole step.
        keys = list(parts)
        device = loss_t.device
        flat = torch.cat([parts[k].reshape(-1).to(device=device, dtype=torch.float64) for k in keys])
        flat = flat.cpu().numpy()
        host, offset = {}, 0
        for k in keys:
            n = parts[k].numel()
            host[k] = flat[offset:offset + n].reshape(parts[k].shape)
            offset += n
        host["loss"] = float(host["loss"][0])
        for k in ("grad_norm", "param_norm"):
            host[k] = host.get(k, np.zeros(0)).astype(np.float32)
        host["activations"] = [(index, host["activations"][i]) for i, (index, _) in enumerate(calls)] \
            if calls else []
        return host

    def nonfinite_counts(self, grad_norms):
        """The non-finite values of each gradient whose norm is not finite (a finite norm means a
        finite gradient: only the failure path counts)."""
        counts = np.zeros(len(self._params), dtype=np.float32)
        for i in np.flatnonzero(~np.isfinite(grad_norms)):
            grad = self._params[i][1].grad
            counts[i] = float(stats.nonfinite_count(grad).item()) if grad is not None else 0.0
        return counts

"""The recorder's defences and incident capture, each a small piece the Recorder drives.

- LastGoodState: an in-memory copy of the weights and optimizer state of the last good step,
  put back after several bad steps in a row (rollback), with the learning rate scaled down.
- SpikeDetector: is this loss or gradient norm a spike against its recent past (median + k MAD)?
- BatchRing: the last K batches and a copy of the model's state from before the oldest of them,
  written out only when an incident fires.

Copies stay on the tensors' device (a clone queues a device copy and waits for nothing).
"""
import bisect
import collections
import copy
import math

import torch


class UnsupportedOptimizer(ValueError):
    """The optimizer cannot be rolled back: its state cannot be restored, or it has no lr to scale."""


def _clone_state(module, device=None):
    if device is None:
        return {name: t.detach().clone() for name, t in module.state_dict().items()}
    return {name: t.detach().to(device, copy=True) for name, t in module.state_dict().items()}


def check_optimizer(optimizer):
    """Raises UnsupportedOptimizer naming what the rollback needs and the optimizer lacks."""
    name = type(optimizer).__name__
    groups = getattr(optimizer, "param_groups", None)
    if not isinstance(groups, (list, tuple)) or not groups:
        raise UnsupportedOptimizer("rollback: %s has no param_groups (a list of dicts with 'lr'); the rollback "
                                   "scales the learning rate there" % name)
    for i, group in enumerate(groups):
        lr = group.get("lr") if isinstance(group, dict) else None
        if isinstance(lr, torch.Tensor) or not isinstance(lr, (int, float)):
            raise UnsupportedOptimizer("rollback: %s's param_groups[%d] has no numeric 'lr' (got %r); the rollback "
                                       "scales it" % (name, i, lr))
    try:
        state = optimizer.state_dict()
        optimizer.load_state_dict(copy.deepcopy(state))
    except Exception as error:  # noqa: BLE001 - any failure means "cannot be restored"
        raise UnsupportedOptimizer("rollback: %s's state cannot be saved and restored (state_dict / "
                                   "load_state_dict: %s: %s)" % (name, type(error).__name__, error)) from error


class LastGoodState:
    """The weights (buffers included) and optimizer state at the start of a good step: one whose
    forward and backward came out finite on them. Taken as a candidate when the step begins and
    kept once it ends finite (the C++ Guard's rule, core/record/DefencePolicy): the weights an update
    left behind count as good only after a forward has run on them, so an update that wrote NaN
    from finite gradients (Adam with eps=0) is never what a rollback returns to."""

    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.step = None
        self._model_state = None
        self._optimizer_state = None
        self._candidate = None  # (step, model state, optimizer state) of the step under way

    def take(self, step):
        """The state `step` starts from, kept as a candidate until the step is judged."""
        self._candidate = (int(step), _clone_state(self.model), copy.deepcopy(self.optimizer.state_dict()))

    def judge(self, finite):
        """The step under way ended: its candidate becomes the good state if it came out finite."""
        if self._candidate is not None and finite:
            self.step, self._model_state, self._optimizer_state = self._candidate
        self._candidate = None

    def restore(self, lr_factor):
        """Puts the saved state back and sets each group's lr to its current value x lr_factor.
        Returns (old lrs, new lrs)."""
        old = [group["lr"] for group in self.optimizer.param_groups]
        self.model.load_state_dict(self._model_state)
        self.optimizer.load_state_dict(copy.deepcopy(self._optimizer_state))
        new = [lr * lr_factor for lr in old]
        for group, lr in zip(self.optimizer.param_groups, new):
            group["lr"] = lr
        return old, new


class SpikeDetector:
    """A value is a spike when it exceeds the median of the last `window` values by more than
    `mads` times their median absolute deviation (a robust scale: one earlier spike does not
    widen it). Non-finite values are neither spikes nor history: they are incidents of their own."""

    def __init__(self, mads, window=50, least_history=20):
        self.mads = float(mads)
        self.least_history = int(least_history)
        self._values = collections.deque(maxlen=int(window))  # the history, oldest first
        self._sorted = []  # the same values, sorted

    def is_spike(self, value):
        """Judges `value` against the history, then adds it to the history."""
        if not math.isfinite(value):
            return False
        spike = False
        if len(self._values) >= self.least_history:
            # Plain Python on a window of ~50 values: numpy's two medians cost ~10x more here,
            # in call overhead, every step. The even-count median averages the two middle values
            # as numpy's does (and the C++ Guard's, core/scan/OnlineSpikeDetector.cpp).
            median = _median(self._sorted)
            # A flat history (MAD 0) still has a scale: 1e-3 of the median's size. The scale is at
            # least that floor, so a value below median + mads x floor (most steps) is no spike
            # whatever the MAD: the walk for the MAD is left out for it.
            floor = max(1e-3 * abs(median), 1e-12)
            if self.mads < 0 or value > median + self.mads * floor:
                scale = max(_median_deviation(self._sorted, median), floor)
                spike = value > median + self.mads * scale
        if not spike:
            if len(self._values) == self._values.maxlen:
                del self._sorted[bisect.bisect_left(self._sorted, self._values[0])]
            self._values.append(value)
            bisect.insort(self._sorted, value)
        return spike


def _median(ordered):
    n = len(ordered)
    middle = n // 2
    return ordered[middle] if n % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def _median_deviation(ordered, median):
    """The median of |v - median| over the sorted values, without building and sorting the
    deviations: those below the median and those above are each sorted already, so walking
    outward from the median meets them in order and stops halfway (half the work; it runs every
    step). median - v equals |v - median| exactly: IEEE subtraction rounds symmetrically."""
    n = len(ordered)
    below = bisect.bisect_left(ordered, median) - 1
    above = below + 1
    previous = deviation = 0.0
    for _ in range(n // 2 + 1):
        previous = deviation
        if above < n and (below < 0 or ordered[above] - median <= median - ordered[below]):
            deviation = ordered[above] - median
            above += 1
        else:
            deviation = median - ordered[below]
            below -= 1
    return deviation if n % 2 else (previous + deviation) / 2


class BatchRing:
    """The last `size` batches, and a copy of the model's state at the start of an anchor step
    at or before the oldest of them, so that an incident can be written out with the state the
    batches ran on. A new anchor is taken every `size` steps; the batches since the previous one
    are kept (between `size` and 2 x `size` - 1 of them), so an anchor always precedes the last
    `size` batches. `device`: where the copies live (None: the tensors' own device; "cpu" keeps
    them out of GPU memory at the cost of a copy to the host)."""

    def __init__(self, size, device=None):
        self.size = int(size)
        self.device = device
        self._batches = collections.OrderedDict()  # step -> (inputs, targets), device copies
        self._anchors = collections.deque(maxlen=2)  # (step, model state)
        self._next_anchor = None
        self._healthy = set()  # steps of the kept batches that ended finite and uncaptured
        self._last_healthy = None  # (step, inputs, targets): kept past the window, for triage

    def wants_anchor(self, step):
        return self._next_anchor is None or step >= self._next_anchor

    def add_anchor(self, step, model_state):
        self._anchors.append((int(step), model_state))
        self._next_anchor = int(step) + self.size
        oldest = self._anchors[0][0]
        for kept in [s for s in self._batches if s < oldest]:
            del self._batches[kept]
            self._healthy.discard(kept)

    def add_batch(self, step, inputs, targets):
        self._batches[int(step)] = (_copy(inputs, self.device), _copy(targets, self.device))

    def mark_healthy(self, step):
        """Step `step` ended finite and was not captured: its batch is evidence about the state
        (triage replays it on an incident's checkpoint to tell a bad batch from bad weights)."""
        batch = self._batches.get(int(step))
        if batch is not None:
            self._healthy.add(int(step))
            self._last_healthy = (int(step), batch[0], batch[1])

    def is_healthy(self, step):
        return int(step) in self._healthy

    def last_healthy(self):
        """The latest healthy batch seen, (step, inputs, targets), even when older than the window;
        None when no step has been healthy yet."""
        return self._last_healthy

    def capture(self, step):
        """(anchor step, anchor state, [(step, inputs, targets)]) covering at least the last `size`
        batches up to `step`, from the latest anchor that precedes them; None with no anchor."""
        first_wanted = int(step) - self.size + 1
        usable = [a for a in self._anchors if a[0] <= first_wanted] or list(self._anchors)[:1]
        if not usable:
            return None
        anchor_step, state = usable[-1]
        batches = [(s, x, y) for s, (x, y) in self._batches.items() if anchor_step <= s <= step]
        return anchor_step, state, batches

    def clear(self):
        """After a rollback the anchors no longer describe the weights the next batches run on."""
        self._batches.clear()
        self._anchors.clear()
        self._next_anchor = None
        self._healthy.clear()
        self._last_healthy = None


def _copy(value, device=None):
    if isinstance(value, torch.Tensor):
        return value.detach().clone() if device is None else value.detach().to(device, copy=True)
    if isinstance(value, list):
        return [_copy(v, device) for v in value]
    if isinstance(value, tuple):
        return tuple(_copy(v, device) for v in value)
    if isinstance(value, dict):
        return {k: _copy(v, device) for k, v in value.items()}
    return value


def model_state(model, device=None):
    """A copy of the model's state_dict (weights and buffers), on `device` (None: where it is)."""
    return _clone_state(model, device)


def spike_reason(detectors, loss_value, grad_norm):
    """Why this finite step is a spike, or None; every detector ({"loss": ..., "grad_norm": ...})
    sees every step."""
    reasons = []
    for name, value in (("loss", loss_value), ("grad_norm", grad_norm)):
        detector = detectors.get(name)
        if detector is not None and detector.is_spike(value):
            reasons.append("%s spike (%g, over %g MADs above the median of the last steps)"
                           % (name, value, detector.mads))
    return "; ".join(reasons) or None

"""The recorder: hooks into a PyTorch training loop and writes a run directory nanscope reads."""
import math
import os
import re
import warnings

import numpy as np
import torch
from torch.nn.modules.batchnorm import _NormBase

from . import stats
from .checkpoints import Checkpointer, save_batch
from .run_file import RunFile, log_path

_BUFFER_NAMES = ("running_mean", "running_var", "num_batches_tracked")
STEP_FILE = re.compile(r"step_\d{8,}\.(pt|safetensors)(\.partial)?")


def _tensors_of(value):
    """The floating-point tensors in a module output (a tensor, or tuples/lists/dicts of them)."""
    if isinstance(value, torch.Tensor):
        return [value] if value.is_floating_point() or value.is_complex() else []
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors_of(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors_of(v)]
    return []


def _named_inputs(inputs, targets):
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


def _remove_step_files(directory):
    if os.path.isdir(directory):
        for name in os.listdir(directory):
            if STEP_FILE.fullmatch(name):
                os.remove(os.path.join(directory, name))


def _is_leaf(name, module):
    return name != "" and next(module.children(), None) is None


class Recorder:
    """Records one training run into `run_dir` (run.h5, checkpoints/, batches/).

    Per step, between ``begin_step(step, inputs=..., targets=...)`` before the forward pass and
    ``end_step(loss, lr=...)`` after the backward pass (and before ``optimizer.step()``):

    - /scalars: loss, grad_norm, param_norm, skipped, and lr, loss_scale and any keyword scalars
      passed to end_step (the names given at the first end_step are the table's columns);
    - /layers: per parameter gradient norm, parameter norm and count of non-finite gradient values;
    - /buffers: running statistics of every BatchNorm-like layer (every step);
    - /inputs: value ranges of the inputs and targets given to begin_step;
    - /activations: value ranges of each selected module's output, on the first step and every
      ``activations_every`` steps (forward hooks, attached only for those steps);
    - /events: checkpoints, saved batches, skipped steps, non-finite losses, notes.

    Checkpoint N (the weights step N's forward used) is saved at begin_step every
    ``checkpoint_every`` steps. When end_step sees a non-finite loss or gradient norm it saves
    checkpoint N as it was before step N's forward (BatchNorm buffers included) and batch N, logs
    the step as skipped and returns False: the caller then skips ``optimizer.step()``.

    On a GPU the statistics stay on the device until one copy to the host per step.
    """

    def __init__(self, run_dir, model, loss_name=None, checkpoint_every=50, activations_every=5,
                 amp_dtype="none", run_name=None, warn_after_skipped=3, activation_filter=None,
                 restore_buffers_on_skip=False, overwrite=False):
        """activation_filter: callable(name, module) -> bool choosing the modules whose outputs
        are logged; default: every leaf module. restore_buffers_on_skip: on a skipped step, put
        BatchNorm running statistics back to their values before that step's forward (off by
        default: the recorder observes and does not change training)."""
        self.run_dir = run_dir
        self.model = model
        self.loss_name = loss_name
        self.checkpoint_every = int(checkpoint_every or 0)
        self.activations_every = int(activations_every or 0)
        self.warn_after_skipped = warn_after_skipped
        self.restore_buffers_on_skip = restore_buffers_on_skip
        self._attributes = {
            "run_name": run_name or os.path.basename(os.path.normpath(os.path.abspath(run_dir))),
            "framework": "pytorch %s" % torch.__version__,
            "amp_dtype": amp_dtype,
            "loss_name": loss_name,
        }
        os.makedirs(run_dir, exist_ok=True)
        if os.path.exists(log_path(run_dir)):
            if not overwrite:
                raise FileExistsError("%s already exists; pass overwrite=True to replace the run"
                                      % log_path(run_dir))
            os.remove(log_path(run_dir))
        self._checkpoint_dir = os.path.join(run_dir, "checkpoints")
        self._batch_dir = os.path.join(run_dir, "batches")
        if overwrite:
            _remove_step_files(self._checkpoint_dir)  # another run's checkpoints would mislead
            _remove_step_files(self._batch_dir)

        self._params = [(name, p) for name, p in model.named_parameters()]
        self._norms = [(name, m) for name, m in model.named_modules()
                       if isinstance(m, _NormBase) and m.track_running_stats and m.running_mean is not None]
        choose = activation_filter or _is_leaf
        self._activation_candidates = [(name, m) for name, m in model.named_modules() if choose(name, m)]
        self._checkpointer = Checkpointer(model, self._checkpoint_dir)

        self._file = None
        self._pending_events = []  # events seen before run.h5 exists (it is created at the first end_step)
        self._scalar_names = None
        self._input_names = None
        self._activation_columns = None  # indices into _activation_candidates
        self._hook_handles = []
        self._calls = None  # activation stats collected by the hooks in this step: (candidate index, tensor)
        self._step = None
        self._last_step = None
        self._in_step = False
        self._checkpoint_saved = False
        self._buffer_snapshot = None
        self._skipped_streak = 0
        self._last_loss_scale = None
        self._warned = set()
        self._last_event_step = -(2 ** 62)
        self._input_stats = []
        self._inputs = self._targets = None
        self._closed = False
        self._present_index = (None, None)
        # Extra /layers columns for this step, {name: [L] array}, set before end_step by a wrapper
        # (distributed.py: each rank's local gradient norms); the names are fixed at the first step.
        self.extra_layer_values = None

    # ---------------------------------------------------------------- the training loop's calls

    def begin_step(self, step, inputs=None, targets=None):
        """Call before the forward pass of optimizer step `step` (a global step, increasing)."""
        step = int(step)
        if self._closed:
            raise RuntimeError("begin_step after close()")
        if self._in_step:
            raise RuntimeError("begin_step(%d) before end_step of step %d" % (step, self._step))
        if self._last_step is not None and step <= self._last_step:
            raise ValueError("steps must increase: got %d after %d (pass a global step that keeps counting "
                             "across epochs)" % (step, self._last_step))
        self._step, self._in_step = step, True
        self._inputs, self._targets = inputs, targets
        self._snapshot_buffers()
        self._input_stats = [(name, stats.range_stats(t)) for name, t in _named_inputs(inputs, targets)]
        self._checkpoint_saved = False
        if self.checkpoint_every > 0 and step % self.checkpoint_every == 0:
            self._save_checkpoint(step, overrides=None)  # nothing of step N has run yet
            if self._file is not None:
                self._flush_events()
                self._file.flush()
        if self._activations_due(step):
            self._arm_hooks()

    def end_step(self, loss, lr=None, loss_scale=None, **scalars):
        """Call after backward, before optimizer.step(). Returns False when the loss or the
        gradient norm is not finite: the step was logged as skipped and should not be applied."""
        if not self._in_step:
            raise RuntimeError("end_step without begin_step")
        self._disarm_hooks()
        step = self._step
        extra = {}
        if lr is not None:
            extra["lr"] = lr
        if loss_scale is not None:
            extra["loss_scale"] = loss_scale
        reserved = {"loss", "grad_norm", "param_norm", "skipped"}.intersection(scalars)
        if reserved:
            raise ValueError("end_step: %s is computed by the recorder; log your own value under another name"
                             % ", ".join(sorted(reserved)))
        extra.update(scalars)
        extra = {k: float(v.item() if isinstance(v, torch.Tensor) else v) for k, v in extra.items()}
        scalar_row = self._scalar_row(extra) if self._file is not None else None
        captured = self._calls is not None

        host = self._gather(loss)
        loss_value = host["loss"]
        grad_norms = host["grad_norm"]
        total_grad_norm = float(np.sqrt(np.sum(np.square(grad_norms, dtype=np.float64))))
        total_param_norm = float(np.sqrt(np.sum(np.square(host["param_norm"], dtype=np.float64))))
        grad_nonfinite = self._nonfinite_counts(grad_norms)
        bad = not (math.isfinite(loss_value) and math.isfinite(total_grad_norm))

        if self._file is None:
            self._create_file(extra, host)
            scalar_row = self._scalar_row(extra)
        row = {"loss": loss_value, "grad_norm": total_grad_norm, "param_norm": total_param_norm,
               "skipped": 1.0 if bad else 0.0}
        row.update(scalar_row)
        run = self._file
        run.scalars.append(step, row)
        if run.layers is not None:
            run.layers.append(step, dict({"grad_norm": grad_norms, "param_norm": host["param_norm"],
                                          "grad_nonfinite": grad_nonfinite}, **(self.extra_layer_values or {})))
        if run.buffers is not None:
            b = host["buffers"]
            run.buffers.append(step, {name: b[:, i] for i, name in enumerate(
                ("running_mean_min", "running_mean_max", "running_var_min", "running_var_max", "nonfinite"))})
        self._append_inputs(step, host["inputs"])
        if captured:
            self._append_activations(step, host["activations"])

        if "loss_scale" in extra:
            if self._last_loss_scale is not None and extra["loss_scale"] < self._last_loss_scale:
                self._event(step, "loss_scale_decrease", "loss scale %g -> %g"
                            % (self._last_loss_scale, extra["loss_scale"]))
            self._last_loss_scale = extra["loss_scale"]
        if bad:
            self._on_nonfinite(step, loss_value, grad_nonfinite)
        else:
            self._skipped_streak = 0
        self._flush_events()
        run.flush()

        self._in_step = False
        self._last_step = step
        self._inputs = self._targets = None
        self._buffer_snapshot = None
        return not bad

    def note(self, message, step=None):
        """Adds a `note` event (at the current or last step unless `step` is given)."""
        if step is None:
            step = self._step if self._step is not None else 0
        if int(step) < self._last_event_step:
            raise ValueError("note at step %d after an event at step %d: /events steps must not decrease"
                             % (step, self._last_event_step))
        self._event(int(step), "note", str(message))
        if self._file is not None:
            self._flush_events()
            self._file.flush()

    def close(self):
        self._closed = True
        self._disarm_hooks()
        if self._file is None and self._pending_events:
            self._create_file({}, None)
        if self._file is not None:
            self._flush_events()
            self._file.close()
            self._file = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # ---------------------------------------------------------------- statistics

    def _gather(self, loss):
        """Computes the step's statistics on the device and copies them to the host at once."""
        loss_t = loss.detach().reshape(-1) if isinstance(loss, torch.Tensor) else torch.tensor([float(loss)])
        if loss_t.numel() != 1:
            raise ValueError("end_step: the loss must be a single value, not a tensor of shape %s"
                             % tuple(loss.shape))
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
            rows = []
            for _, m in self._norms:
                mean_lo, mean_hi = stats.finite_min_max(m.running_mean)
                var_lo, var_hi = stats.finite_min_max(m.running_var)
                bad = stats.nonfinite_count(m.running_mean) + stats.nonfinite_count(m.running_var)
                rows.append(torch.stack([mean_lo.double(), mean_hi.double(), var_lo.double(), var_hi.double(),
                                         bad.double()]))
            parts["buffers"] = torch.stack(rows)
        if self._input_stats:
            parts["inputs"] = torch.stack([s for _, s in self._input_stats])
        calls = self._calls or []
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
        self._calls = None
        return host

    def _nonfinite_counts(self, grad_norms):
        counts = np.zeros(len(self._params), dtype=np.float32)
        # A finite norm means a finite gradient; only the others are counted (the failure path).
        for i in np.flatnonzero(~np.isfinite(grad_norms)):
            grad = self._params[i][1].grad
            counts[i] = float(stats.nonfinite_count(grad).item()) if grad is not None else 0.0
        return counts

    # ---------------------------------------------------------------- activations

    def _activations_due(self, step):
        if self.activations_every <= 0 or not self._activation_candidates:
            return False
        first = self._activation_columns is None
        return first or step % self.activations_every == 0

    def _arm_hooks(self):
        self._calls = []
        indices = (range(len(self._activation_candidates)) if self._activation_columns is None
                   else self._activation_columns)
        for index in indices:
            module = self._activation_candidates[index][1]
            self._hook_handles.append(module.register_forward_hook(self._make_hook(index)))

    def _make_hook(self, index):
        calls = self._calls

        def record_output(module, inputs, output):
            with torch.no_grad():
                for t in _tensors_of(output):
                    calls.append((index, stats.range_stats(t)))
        return record_output

    def _disarm_hooks(self):
        for handle in self._hook_handles:
            handle.remove()
        self._hook_handles = []

    def _append_activations(self, step, calls):
        run = self._file
        if run.activations is None:
            return
        by_module = {}
        for index, row in calls:
            by_module.setdefault(index, []).append(row)
        missing = [self._activation_candidates[i][0] for i in self._activation_columns if i not in by_module]
        if missing:
            # No value was measured for these modules: the step gets no activation row at all.
            if "activations" not in self._warned:
                self._warned.add("activations")
                self._event(step, "note", "activations not logged at step %d: module(s) %s did not run"
                            % (step, ", ".join(missing[:5])))
            return
        merged = np.array([stats.merge_range_stats(by_module[i]) for i in self._activation_columns],
                          dtype=np.float32)
        run.activations.append(step, {name: merged[:, j] for j, name in enumerate(
            ("min", "max", "mean", "std", "nan", "inf"))})

    # ---------------------------------------------------------------- inputs

    def _append_inputs(self, step, rows):
        run = self._file
        if run.inputs is None:
            return
        names = [name for name, _ in self._input_stats]
        if names != self._input_names:
            if "inputs" not in self._warned:
                self._warned.add("inputs")
                self._event(step, "note", "inputs not logged at step %d: expected %s, got %s"
                            % (step, self._input_names, names))
            return
        run.inputs.append(step, {name: rows[:, j].astype(np.float32) for j, name in enumerate(
            ("min", "max", "mean", "std", "nan", "inf"))})

    # ---------------------------------------------------------------- failures

    def _on_nonfinite(self, step, loss_value, grad_nonfinite):
        self._skipped_streak += 1
        if not math.isfinite(loss_value):
            self._event(step, "nonfinite_loss", "loss = %s" % loss_value)
            reason = "non-finite loss (%s)" % loss_value
        else:
            bad = [self._params[i][0] for i in np.flatnonzero(grad_nonfinite)]
            if bad:
                reason = "non-finite gradients in %d parameter(s) (first: %s)" % (len(bad), bad[0])
            else:
                reason = "the gradient norm overflowed, though every gradient value is finite"
        self._event(step, "skipped_step", reason)
        if not self._checkpoint_saved:
            self._save_checkpoint(step, overrides=self._snapshot_overrides())
        path = save_batch(self._batch_dir, step, self._inputs, self._targets, self.loss_name)
        self._event(step, "batch_saved", os.path.relpath(path, self.run_dir))
        if self.restore_buffers_on_skip:
            self._restore_buffers()
        if self.warn_after_skipped and self._skipped_streak == self.warn_after_skipped:
            warnings.warn("nanscope: %d consecutive steps skipped (up to step %d, %s); see %s"
                          % (self._skipped_streak, step, reason, self.run_dir), RuntimeWarning, stacklevel=3)

    def _save_checkpoint(self, step, overrides):
        path = self._checkpointer.save(step, overrides)
        if self._checkpointer.script_error and "script" not in self._warned:
            self._warned.add("script")
            self._event(step, "note", "the model does not script (%s): checkpoints are state_dicts, "
                                      "without replay" % self._checkpointer.script_error)
        self._event(step, "checkpoint", "%s (%s)" % (os.path.relpath(path, self.run_dir), self._checkpointer.kind))
        self._checkpoint_saved = True

    # ---------------------------------------------------------------- normalisation buffers

    def _norm_buffers(self):
        for name, m in self._norms:
            for b in _BUFFER_NAMES:
                t = getattr(m, b, None)
                if isinstance(t, torch.Tensor):
                    yield "%s.%s" % (name, b) if name else b, t

    def _snapshot_buffers(self):
        """Running statistics before this step's forward changes them (checkpoint N holds those)."""
        if not self._norms:
            self._buffer_snapshot = None
            return
        with torch.no_grad():
            self._buffer_snapshot = [(name, t, t.detach().clone()) for name, t in self._norm_buffers()]

    def _snapshot_overrides(self):
        return {name: copy for name, _, copy in self._buffer_snapshot or []}

    def _restore_buffers(self):
        with torch.no_grad():
            for _, live, copy in self._buffer_snapshot or []:
                live.copy_(copy)

    # ---------------------------------------------------------------- run.h5

    def _create_file(self, extra, host):
        self._scalar_names = ["loss", "grad_norm", "param_norm", "skipped"] + list(extra)
        self._input_names = [name for name, _ in getattr(self, "_input_stats", [])]
        calls = host["activations"] if host else []
        fired = {index for index, _ in calls}
        self._activation_columns = [i for i in range(len(self._activation_candidates)) if i in fired]
        columns = [self._activation_candidates[i] for i in self._activation_columns]
        self._file = RunFile(
            log_path(self.run_dir), self._attributes, self._scalar_names,
            layers=[name for name, _ in self._params],
            layer_columns=tuple(self.extra_layer_values or ()),
            activations=[name for name, _ in columns],
            activation_kinds=[type(m).__name__ for _, m in columns],
            buffers=[name for name, _ in self._norms],
            inputs=self._input_names)

    def _scalar_row(self, extra):
        known = self._scalar_names[4:]
        missing = [name for name in known if name not in extra]
        if missing:
            raise ValueError("end_step: scalar(s) %s were logged from the first step on and must be given "
                             "at every step" % ", ".join(missing))
        new = [name for name in extra if name not in known]
        if new and "scalars" not in self._warned:
            self._warned.add("scalars")
            warnings.warn("nanscope: scalar(s) %s were not given at the first step and are not logged "
                          "(run.h5's tables are fixed at the first step)" % ", ".join(new), stacklevel=3)
        return {name: extra[name] for name in known}

    def _event(self, step, kind, message):
        self._last_event_step = max(self._last_event_step, int(step))
        self._pending_events.append((int(step), kind, message))

    def _flush_events(self):
        if self._file is None or self._file.events is None:
            return
        for step, kind, message in self._pending_events:
            self._file.append_event(step, kind, message)
        self._pending_events = []

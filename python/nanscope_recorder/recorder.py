"""The recorder: hooks into a PyTorch training loop and writes a run directory nanscope reads."""
import math
import operator
import os
import sys
import time
import warnings

import torch
from torch.nn.modules.batchnorm import _NormBase

from . import stats
from .activations import ActivationHooks
from .buffer_snapshot import BufferSnapshot, norm_buffers
from .checkpoints import Checkpointer, remove_step_files
from .model_factory import describe as model_factory_spec
from .model_names import is_transformers_model, uncompiled, user_name_of, wrapper_prefix_of
from .capture import DEFAULTS as CAPTURE_DEFAULTS, CapturePolicy, spike_detection_on
from .defences import BatchRing, SpikeDetector, model_state, spike_reason
from .incident_response import IncidentResponse
from .run_file import RunFile, log_path
from .run_file_child import ChildRunFile, ChildUnavailable
from .run_format import OPTIMIZER_SCALARS, RECORDER_DEFAULTS, RECORDER_SCALARS, event_kind, event_text
from .optimizer_count import counts_updates, update_count
from .step_readback import StepReadback, named_inputs, total_norm

# The /scalars columns the recorder computes itself; `wall_time` is seconds since the Unix epoch.
_COMPUTED_SCALARS = RECORDER_SCALARS  # run_format.json, shared with the C++ Guard
# Which steps the training loop skips (the Recorder's skipped_steps).
SKIPPED_STEPS = ("bad", "none", "nonfinite_gradients")
# The dtypes whose values the writer child measures as they are (numpy has them all); half
# precision and complex tensors are converted and measured in the training process.
_STAGED_DTYPES = (torch.float32, torch.float64, torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8,
                  torch.bool)
# A CPU tensor's values as numpy, in place: one call where detach().numpy() is two (each call counts
# in a training step); numpy(force=True) is in every torch the recorder supports (1.13 on).
_host_view = operator.methodcaller("numpy", force=True)


def _is_leaf(name, module):
    return name != "" and next(module.children(), None) is None


class Recorder(IncidentResponse):
    """Records one training run into `run_dir` (run.h5, checkpoints/, batches/).

    Per step, between ``begin_step(step, inputs=..., targets=...)`` before the forward pass and
    ``end_step(loss, lr=...)`` after the backward pass (and before ``optimizer.step()``):

    - /scalars: loss, grad_norm, param_norm, skipped, and lr, loss_scale and any keyword scalars
      passed to end_step (the names given at the first end_step are the table's columns);
    - /layers: per parameter gradient norm, parameter norm and count of non-finite gradient values,
      every ``layers_every`` steps (default 1: every step);
    - /buffers: running statistics of every BatchNorm-like layer (with /layers);
    - /inputs: value ranges of the inputs and targets given to begin_step;
    - /activations: value ranges of each selected module's output, on the first step and every
      ``activations_every`` steps (forward hooks, attached only for those steps);
    - /events: checkpoints, saved batches, skipped steps, non-finite losses, notes, and what the
      defences did (rollback, buffers_restored, incident_capture).

    Checkpoint N (the weights step N's forward used) is saved at begin_step every
    ``checkpoint_every`` steps, as TorchScript when the model scripts, else traced on step N's own
    batch, else as a state_dict; checkpoints/step_N.form says which, and for a state_dict why it
    cannot replay. When end_step sees a non-finite loss or gradient norm it saves checkpoint N as
    it was before step N's forward (BatchNorm buffers included) and batch N, logs the step as
    skipped and returns False: the caller then skips ``optimizer.step()``.

    Defences (off by default, except skipping):

    - ``restore_buffers_on_skip=True``: on a skipped step, BatchNorm running statistics go back to
      their values before that step's forward (a ``buffers_restored`` event);
    - ``rollback_after=N`` (needs ``optimizer=``): after N consecutive skipped steps, the weights
      (buffers included) and the optimizer state go back to the last good state, copied in memory
      every ``snapshot_every`` good steps, and every param group's lr is multiplied by
      ``rollback_lr_factor`` (a ``rollback`` event; ``lr_scale`` is the product so far, for loops
      that set the lr themselves each step). An optimizer whose state cannot be restored or that
      has no numeric ``lr`` per param group is refused at construction (UnsupportedOptimizer),
      unless ``allow_unguarded=True``: then a warning, and training runs without rollback.

    Incident capture (``batch_ring=K``, default 8; 0 turns it off): the recorder keeps the last K
    batches and a copy of the model's state from before them in memory. When a step's loss or
    gradients are not finite, or its loss or gradient norm is a spike (more than ``spike_mads``
    median absolute deviations above the median of the last ``spike_window`` steps; None turns
    spike capture off), it writes checkpoint N and batch N, those batches to batches/, the state
    before them to checkpoints/ and an ``incident_capture`` event: replay and triage then have the
    steps leading to the incident without every batch being saved. Which incidents are captured
    is the policy both recorders share (capture.py, defaults in capture_policy.json): the run's
    first non-finite step always; spikes up to ``spike_captures`` and later non-finite steps up to
    ``later_nonfinite_captures`` (-1: every one); the ring's batches at most once every K steps
    but for the first non-finite step. A capture that writes no batch of a healthy step also writes
    the latest healthy batch the ring saw, so that triage can tell a bad batch from bad weights.
    The ring holds up to 2K-1 batches (and that one) and two copies of the weights, on the
    tensors' own device unless ``ring_device="cpu"`` (for a model that fills the GPU).

    A forward hook of the recorder that fails (a module output it cannot measure) is a warning
    and a step without activations, never an exception in the training loop.

    On a GPU the statistics stay on the device until one copy to the host per step.
    """

    def __init__(self, run_dir, model, loss_name=None, checkpoint_every=50, activations_every=5,
                 amp_dtype="none", run_name=None, warn_after_skipped=3, activation_filter=None,
                 restore_buffers_on_skip=False, overwrite=False, optimizer=None, rollback_after=0,
                 rollback_lr_factor=RECORDER_DEFAULTS["rollback_lr_factor"],
                 snapshot_every=RECORDER_DEFAULTS["snapshot_every"], allow_unguarded=False, batch_ring=8,
                 spike_mads=CAPTURE_DEFAULTS["spike_mads"], spike_window=CAPTURE_DEFAULTS["spike_window"],
                 ring_device=None, layers_every=1, spike_captures=None, later_nonfinite_captures=None,
                 model_factory=None, write_in_process=False, skipped_steps="bad", checkpoint_form=None,
                 batch_call=None):
        """activation_filter: callable(name, module) -> bool choosing the modules whose outputs
        are logged; default: every leaf module. restore_buffers_on_skip: on a skipped step, put
        BatchNorm running statistics back to their values before that step's forward (off by
        default: the recorder observes and does not change training). The other defences and
        incident capture: see the class docstring. layers_every: write the per-layer tables (/layers,
        /buffers) every N steps; the first step of a run of non-finite steps is written whatever N,
        so that its row shows the first bad parameter before the NaN spreads. model_factory: how
        eager replay rebuilds the model when its checkpoints are state_dicts (it neither scripts
        nor traces): "module:function", or the function, called with no arguments; default: the
        model's class when it takes no constructor argument (model_factory.py). skipped_steps: which
        steps the training loop skips: "bad" (the loop skips the optimizer step when end_step returns
        False), "none" (a framework's loop applies every update; the recorder only observes) or
        "nonfinite_gradients" (an AMP loss scaler skips the steps whose gradients are not finite);
        with anything but "bad" the defences that change training (rollback, restore_buffers_on_skip)
        are refused. checkpoint_form: None (a torch.export archive when the model exports, else
        TorchScript when it scripts or traces, else a state_dict); "torchscript" (no export);
        ("state_dict", why): state_dicts only, for a model the model_factory rebuilds better than a
        trace; or ("exported", why): exported when it exports, else a state_dict the factory rebuilds
        (a transformers model from its config). batch_call: the name of the
        model's method that computed the loss from the batch when it is not forward (Lightning's
        "training_step"); saved in batch files for eager replay, and what an exported checkpoint holds."""
        if skipped_steps not in SKIPPED_STEPS:
            raise ValueError("skipped_steps must be one of %s, not %r" % (", ".join(SKIPPED_STEPS), skipped_steps))
        if skipped_steps != "bad" and (rollback_after or restore_buffers_on_skip):
            raise ValueError("rollback_after and restore_buffers_on_skip change training; a recorder that observes "
                             "a framework's loop (skipped_steps=%r) cannot use them" % skipped_steps)
        self.skipped_steps = skipped_steps
        self.batch_call = batch_call  # the model's method eager replay calls with a saved batch (None: forward)
        self.run_dir = run_dir
        # A torch.compile'd model (torch 2.x's OptimizedModule) wraps the module the user wrote: the
        # recorder watches, names and saves that one (no "_orig_mod." in layer names; a checkpoint
        # that scripts), while training runs the compiled forward, which calls its hooks.
        model = uncompiled(model)
        self.model = model
        self._write_in_process = bool(write_in_process)
        self.loss_name = loss_name
        self.checkpoint_every = int(checkpoint_every or 0)
        self.activations_every = int(activations_every or 0)
        self.layers_every = max(1, int(layers_every or 1))
        self.warn_after_skipped = warn_after_skipped
        self.restore_buffers_on_skip = restore_buffers_on_skip
        self.rollback_after = int(rollback_after or 0)
        self.rollback_lr_factor = float(rollback_lr_factor)
        self.snapshot_every = max(1, int(snapshot_every or 1))
        self.lr_scale = 1.0  # the product of the rollbacks' lr factors so far
        self._unguarded_note = None  # why rollback is off although asked for (allow_unguarded)
        self._last_good = self._rollback_state(optimizer, allow_unguarded)
        # Read for its count of updates (optimizer_step), never changed; a framework callback sets it.
        self.optimizer, self._counting_updates = optimizer, None  # counting: decided at the first row
        self._ring = BatchRing(batch_ring, ring_device) if batch_ring and int(batch_ring) > 0 else None
        self._spikes = ({name: SpikeDetector(spike_mads, spike_window) for name in ("loss", "grad_norm")}
                        if self._ring is not None and spike_detection_on(spike_mads) else {})
        self._last_capture = None
        self._captures = CapturePolicy(spike_captures, later_nonfinite_captures)
        self._attributes = {
            "run_name": run_name or os.path.basename(os.path.normpath(os.path.abspath(run_dir))),
            "framework": "pytorch %s" % torch.__version__,
            "amp_dtype": amp_dtype,
            "loss_name": loss_name,
        }
        # A transformers model (the Trainer's, or one in a loop of one's own) is rebuilt from its
        # config for eager replay, with no factory written by hand (hf.py); one transformers cannot
        # rebuild (custom code) is scripted or traced as any model, and a note says why.
        transformers_note = None
        if model_factory is None and checkpoint_form is None and is_transformers_model(model):
            from .hf import rebuild_plan
            model_factory, checkpoint_form, transformers_note = rebuild_plan(model)
        factory, folders, self._no_factory = model_factory_spec(model_factory, model)
        if factory:
            self._attributes.update({"model_factory": factory, "model_factory_path": os.pathsep.join(folders),
                                     "python_executable": sys.executable})
        self._prepare_run_folder(run_dir, overwrite)
        self._watch(model, activation_filter, checkpoint_form, model_factory)
        self._reset_state(transformers_note)

    def _prepare_run_folder(self, run_dir, overwrite):
        """The run folder, with no run.h5 (refused unless overwrite) and no other run's step files."""
        os.makedirs(run_dir, exist_ok=True)
        if os.path.exists(log_path(run_dir)):
            if not overwrite:
                raise FileExistsError("%s already exists; pass overwrite=True to replace the run"
                                      % log_path(run_dir))
            os.remove(log_path(run_dir))
        self._checkpoint_dir = os.path.join(run_dir, "checkpoints")
        self._batch_dir = os.path.join(run_dir, "batches")
        if overwrite:
            remove_step_files(self._checkpoint_dir)  # another run's checkpoints would mislead
            remove_step_files(self._batch_dir)

    def _watch(self, model, activation_filter, checkpoint_form, model_factory):
        """What is logged of the model: its trained parameters, normalisation layers and module
        outputs, and how its checkpoints are saved."""
        # Frozen parameters (a LoRA fine-tune's base weights) have no gradient to log: in /layers they
        # would read as vanishing gradients. A model with none trainable yet is logged whole.
        user_name = user_name_of(model)
        if wrapper_prefix_of(model):
            self._attributes["module_path_prefix"] = wrapper_prefix_of(model)
        named = [(user_name(name), p) for name, p in model.named_parameters()]
        self._params = [(name, p) for name, p in named if p.requires_grad] or named
        self._norms = [(user_name(name), m) for name, m in model.named_modules()
                       if isinstance(m, _NormBase) and m.track_running_stats and m.running_mean is not None]
        choose = activation_filter or _is_leaf
        self._activations = ActivationHooks([(user_name(name), m) for name, m in model.named_modules()
                                             if choose(name, m)],
                                            self._activation_hook_failed, self._measure)
        self._readback = StepReadback(self._params, self._norms)
        self._checkpointer = Checkpointer(model, self._checkpoint_dir, checkpoint_form, call=self.batch_call)
        if model_factory == "nanscope_recorder.hf:rebuild":
            from .hf import save_model_description
            save_model_description(model, self.run_dir)

    def _reset_state(self, transformers_note):
        """The state the training loop's calls keep between steps, before the first."""
        self._file = None
        self._stage = None  # the writer child's ChildRunFile.stage, once there is one
        self._pending_events = []  # events seen before run.h5 exists (it is created at the first end_step)
        self._scalar_names = None
        self._input_names = None
        self._step = None
        self._last_step = None
        self._in_step = False
        self._checkpoint_saved = False
        self._buffer_snapshot = BufferSnapshot()
        self._skipped_streak = 0
        # Said at the first step, in the run: set-up facts a reader of the run needs.
        self._first_step_notes = (["checkpoints are not rebuilt from a transformers config: " + transformers_note]
                                  if transformers_note else [])
        self.last_step_skipped = None
        self._last_loss_scale = None
        self._warned = set()
        self._last_event_step = -(2 ** 62)
        self._input_stats = []
        self._inputs = self._targets = None
        self._closed = False
        # Extra /layers columns for this step, {name: [L] array}, set before end_step by a wrapper
        # (distributed.py: each rank's local gradient norms); the names are fixed at the first step.
        self.extra_layer_values = None
        # Set by DistributedRecorder: called with this rank's verdict (True: not finite), returns
        # whether any rank's step was bad, so that every replica skips the same steps.
        self.skip_agreement = None

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
        self._input_stats = [(name, self._measure(t)) for name, t in named_inputs(inputs, targets)]
        self._checkpoint_saved = False
        if self._unguarded_note:
            self._event(step, "note", self._unguarded_note)
            self._unguarded_note = None
        for note in self._first_step_notes:
            self._event(step, "note", note)
        self._first_step_notes = []
        self._keep_good_state(step)
        if self._ring is not None:
            if self._ring.wants_anchor(step):
                self._ring.add_anchor(step, model_state(self.model, self._ring.device))
            self._ring.add_batch(step, inputs, targets)
        if self.checkpoint_every > 0 and step % self.checkpoint_every == 0:
            self._save_checkpoint(step, overrides=None)  # nothing of step N has run yet
            if self._file is not None:
                self._flush_events()
                self._file.flush()
        if self._activations.due(step, self.activations_every):
            self._activations.arm()
        else:
            self._activations.disarm()

    def end_step(self, loss, lr=None, loss_scale=None, gradient_scale=None, **scalars):
        """Call after backward, before optimizer.step(). Returns False when the loss or the
        gradient norm is not finite: the step was logged as skipped and should not be applied
        (with skipped_steps="bad"; otherwise the loop's own rule said whether it is skipped).
        gradient_scale: the factor the gradients still carry (an AMP loss scale not yet unscaled);
        the gradient norms logged are divided by it."""
        if not self._in_step:
            raise RuntimeError("end_step without begin_step")
        self._activations.stop()
        step = self._step
        extra = {}
        if lr is not None:
            extra["lr"] = lr
        if loss_scale is not None:
            extra["loss_scale"] = loss_scale
        reserved = set(_COMPUTED_SCALARS).intersection(scalars)
        if reserved:
            raise ValueError("end_step: %s is computed by the recorder; log your own value under another name"
                             % ", ".join(sorted(reserved)))
        extra.update(scalars)
        if self._counting_updates is None:
            self._counting_updates = self.optimizer is not None and counts_updates(self.optimizer)
        if self._counting_updates and OPTIMIZER_SCALARS[0] not in extra:
            extra[OPTIMIZER_SCALARS[0]] = update_count(self.optimizer)
        extra = {k: float(v.item() if isinstance(v, torch.Tensor) else v) for k, v in extra.items()}
        scalar_row = self._scalar_row(extra) if self._file is not None else None
        captured = self._activations.captured()

        host = self._readback.read(loss, self._input_stats, self._activations)
        loss_value = host["loss"]
        grad_norms = host["grad_norm"]
        if gradient_scale is not None and float(gradient_scale) not in (0.0, 1.0):
            grad_norms = grad_norms / float(gradient_scale)
        total_grad_norm = total_norm(grad_norms)
        total_param_norm = total_norm(host["param_norm"])
        grad_nonfinite = self._readback.nonfinite_counts(grad_norms, total_grad_norm)
        bad = not (math.isfinite(loss_value) and math.isfinite(total_grad_norm))
        if self.skipped_steps == "bad":
            skipped = bad
        else:
            skipped = self.skipped_steps == "nonfinite_gradients" and not math.isfinite(total_grad_norm)
        skipped_for_another_rank = False
        if self.skip_agreement is not None:
            any_rank_bad = bool(self.skip_agreement(bad))
            skipped_for_another_rank = any_rank_bad and not bad
            bad = bad or any_rank_bad
            skipped = skipped or any_rank_bad
        if self._last_good is not None:
            self._last_good.judge(finite=not bad)

        if self._file is None:
            self._create_file(extra, host)
            scalar_row = self._scalar_row(extra)
        # Wall time lets nanscope plot against time as TensorBoard does, and shows pauses and slow steps.
        row = {"loss": loss_value, "grad_norm": total_grad_norm, "param_norm": total_param_norm,
               "skipped": 1.0 if skipped else 0.0, "wall_time": time.time()}
        row.update(scalar_row)
        self.last_step_skipped = skipped  # what the row says; a framework callback checks it against its loop
        run = self._file
        run.scalars.append(step, row)
        layer_tables = self._layer_tables_due(step, bad)
        if run.layers is not None and layer_tables:
            run.layers.append(step, dict({"grad_norm": grad_norms, "param_norm": host["param_norm"],
                                          "grad_nonfinite": grad_nonfinite}, **(self.extra_layer_values or {})))
        if run.buffers is not None and layer_tables:
            run.buffers.append_buffers(step, host["buffers"])
        self._append_inputs(step, host["inputs"])
        if captured:
            self._append_activations(step, host["activations"])

        if "loss_scale" in extra:
            if self._last_loss_scale is not None and extra["loss_scale"] < self._last_loss_scale:
                self._event(step, "loss_scale_decrease", "loss scale %g -> %g"
                            % (self._last_loss_scale, extra["loss_scale"]))
            self._last_loss_scale = extra["loss_scale"]
        spike_captured = False
        if bad:
            self._on_nonfinite(step, loss_value, grad_nonfinite, skipped,
                               reason="another rank's loss or gradients were not finite at this step; every rank "
                                      "skips it, so the replicas stay equal" if skipped_for_another_rank else None)
        else:
            self._skipped_streak = 0
            spike = spike_reason(self._spikes, loss_value, total_grad_norm)
            capture = self._captures.decide(finite=True, spike=True) if spike else None
            spike_captured = capture is not None
            if capture is not None:
                self._capture_incident(step, spike, capture)
            elif not spike and self._ring is not None:
                self._ring.mark_healthy(step)
        if self._stage is not None:
            run.commit_staged()  # the step's staged values are all in its queued rows, or dropped
        self._flush_events()
        if bad or spike_captured:
            run.sync()  # the incident's rows are on disk before training goes on
        else:
            run.flush()

        self._in_step = False
        self._last_step = step
        self._inputs = self._targets = None
        self._buffer_snapshot.clear()
        return not bad

    @property
    def logged_parameters(self):
        """[(name, parameter)]: the parameters /layers logs, in its column order."""
        return list(self._params)

    def abandon_step(self):
        """Leaves the current step unlogged (a framework callback that failed to measure it)."""
        if self._in_step:
            self._activations.stop()
            self._activations.disarm()
            self._in_step = False
            self._last_step = self._step
            self._inputs = self._targets = None
            self._buffer_snapshot.clear()

    def use_batch(self, inputs, targets=None):
        """The batch saved for the current step, when it is not the one begin_step was given: with
        gradient accumulation, the micro-batch that went non-finite (the /inputs row is then this
        batch's). Call between begin_step and end_step."""
        if not self._in_step:
            raise RuntimeError("use_batch outside a step (between begin_step and end_step)")
        self._inputs, self._targets = inputs, targets
        self._input_stats = [(name, self._measure(t)) for name, t in named_inputs(inputs, targets)]
        if self._ring is not None:
            self._ring.add_batch(self._step, inputs, targets)

    def note(self, message, step=None):
        """Adds a `note` event (at the current or last step unless `step` is given)."""
        if step is None:
            step = self._step if self._step is not None else 0
        if int(step) < self._last_event_step:
            raise ValueError("note at step %d after an event at step %d: /events steps must not decrease"
                             % (step, self._last_event_step))
        self._event(int(step), "note", str(message))
        self.flush()

    def flush(self):
        """Returns once every row and event given so far is in run.h5 and flushed. The recorder
        does this itself at a non-finite or captured step and at close(); between them run.h5's
        writer (a child process) is at most a few steps behind the training loop."""
        if self._file is not None:
            self._flush_events()
            self._file.sync()

    def close(self):
        self._closed = True
        self._activations.disarm()
        if self._file is None and self._pending_events:
            self._create_file({}, None)
        if self._file is not None:
            self._stage = self._readback.stage = None
            self._flush_events()
            self._file.close()
            self._file = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # ---------------------------------------------------------------- statistics

    def _layer_tables_due(self, step, bad):
        """Every layers_every steps, and the first bad step of a streak whatever the interval: by the
        next row on the interval the NaN has spread through the updates to every parameter."""
        return step % self.layers_every == 0 or (bad and self._skipped_streak == 0)

    # ---------------------------------------------------------------- activations

    def _activation_hook_failed(self, name, error):
        """This step logs no activations (a partial row would mislead); training goes on."""
        if "hook" not in self._warned:
            self._warned.add("hook")
            message = ("the activation hook of module %s failed (%s: %s); steps where it fails log no "
                       "activations" % (name, type(error).__name__, error))
            warnings.warn("nanscope: " + message, RuntimeWarning, stacklevel=2)
            self._event(self._step, "note", message)

    def _append_activations(self, step, calls):
        run = self._file
        if run.activations is None:
            return
        parts, missing = self._activations.row_parts(calls)
        if missing and "activations" not in self._warned:
            self._warned.add("activations")
            self._event(step, "note", "module(s) %s did not run at step %d: their activation cells hold no "
                        "value there (NaN ranges, zero counts), as at any step where a module does not run"
                        % (", ".join(missing[:5]), step))
        run.activations.append_ranges(step, parts)

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
        run.inputs.append_ranges(step, [[part] for part in rows])

    def _measure(self, tensor):
        """A logged tensor's range statistics (an input, a module's output): a CPU tensor's values
        are handed to the writer child, which measures them on another core while training goes
        on (run_file_child); where it cannot take them (no child yet, no room), measured here, the
        same way (stats.range_stats)."""
        stage = self._stage
        if stage is not None and tensor.is_cpu and tensor.dtype in _STAGED_DTYPES:
            staged = stage(_host_view(tensor))
            if staged is not None:
                return staged
        return stats.range_stats(tensor)

    # ---------------------------------------------------------------- failures

    def _save_checkpoint(self, step, overrides, inputs=None, event=True):
        path = self._checkpointer.save(step, overrides, self._inputs if inputs is None else inputs)
        checkpointer = self._checkpointer
        if checkpointer.export_error and checkpointer.kind in ("scripted", "traced") and "export" not in self._warned:
            self._warned.add("export")
            self._event(self._step, "note", "the model does not export (%s): checkpoints are %s TorchScript, which "
                                            "nanscope replays by running the archive's code"
                        % (checkpointer.export_error, checkpointer.kind))
        if checkpointer.script_error and "script" not in self._warned:
            self._warned.add("script")
            if checkpointer.kind == "traced":
                note = ("the model does not script (%s): checkpoints are traced on their step's batch"
                        % checkpointer.script_error)
            else:
                note = "checkpoints are state_dicts, without replay: %s" % checkpointer.why_not_replayable()
                # Said at training time, once: a note in run.h5 alone is read only after the incident.
                if self._no_factory:
                    warnings.warn("nanscope: the checkpoints of this run cannot be replayed (%s): %s; for eager "
                                  "replay instead: %s" % (self.run_dir, checkpointer.why_not_replayable(),
                                                          self._no_factory), RuntimeWarning, stacklevel=4)
                else:
                    note += ("; nanscope replays them eagerly, rebuilding the model with %s"
                             % self._attributes["model_factory"])
            self._event(self._step, "note", note)  # the current step: an anchor's step is in the past
        if event:
            self._event(step, "checkpoint",
                        event_text("checkpoint", path=os.path.relpath(path, self.run_dir), form=checkpointer.kind))
            self._checkpoint_saved = True
        return path

    # ---------------------------------------------------------------- normalisation buffers

    def _snapshot_buffers(self):
        """Running statistics before this step's forward changes them (checkpoint N holds those)."""
        if self._norms:
            self._buffer_snapshot.take(norm_buffers(self._norms))
        else:
            self._buffer_snapshot.clear()

    # ---------------------------------------------------------------- run.h5

    def _create_file(self, extra, host):
        self._scalar_names = list(_COMPUTED_SCALARS) + list(extra)
        self._input_names = [name for name, _ in getattr(self, "_input_stats", [])]
        calls = host["activations"] if host else []
        columns = self._activations.fix_columns({index for index, _ in calls})
        schema = dict(layers=[name for name, _ in self._params],
                      layer_columns=tuple(self.extra_layer_values or ()),
                      activations=[name for name, _ in columns],
                      activation_kinds=[type(m).__name__ for _, m in columns],
                      buffers=[name for name, _ in self._norms],
                      inputs=self._input_names)
        path = log_path(self.run_dir)
        if not self._write_in_process:
            try:
                self._file = ChildRunFile(path, self._attributes, self._scalar_names, **schema)
                self._stage = self._readback.stage = self._file.stage
                return
            except ChildUnavailable as why:
                self._write_in_process = True
                warnings.warn("nanscope: run.h5 is written in the training process, which costs the step more: %s"
                              % why, RuntimeWarning, stacklevel=4)
        self._file = RunFile(path, self._attributes, self._scalar_names, **schema)

    def _scalar_row(self, extra):
        known = self._scalar_names[len(_COMPUTED_SCALARS):]
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
        self._pending_events.append((int(step), event_kind(kind), message))

    def _flush_events(self):
        if self._file is None or self._file.events is None:
            return
        for step, kind, message in self._pending_events:
            self._file.append_event(step, kind, message)
        self._pending_events = []

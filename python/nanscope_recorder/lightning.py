"""Records a Lightning run in one line, with `lightning` or `pytorch_lightning`:

    from nanscope_recorder.lightning import NanscopeCallback
    trainer = Trainer(callbacks=[NanscopeCallback("runs/exp1")])

Where in Lightning's step (2.x): on_train_batch_start gives the batch of each micro-batch,
on_before_backward the loss that goes into backward (already divided by accumulate_grad_batches),
and on_before_optimizer_step comes once per optimizer step, after the AMP scaler unscaled the
gradients and before configure_gradient_clipping: the recorder reads the gradients there, unscaled
and not yet clipped. Lightning has no "skipped" flag: a 16-mixed scaler skipped the step when its
scale fell, which on_train_batch_end checks against what the recorder logged.

Step N is trainer.global_step when the step's first micro-batch starts (the step Lightning's
loggers write for metrics logged in that training_step). A checkpoint is the module's
training_step exported with torch.export (step_N.pt2: the loss and every op that made it, which
nanscope replays natively) when it exports; else a state_dict. The run also records the
LightningModule's class and hyperparameters (save_hyperparameters()): eager replay rebuilds it with
them (rebuild() below) and calls its training_step with the saved batch. Nothing is changed: the
hooks only read, the export runs on fake tensors with the module's self.log silenced, and a step
with a NaN is recorded, not skipped.
"""
import importlib
import json
import os

import torch

from .framework_step import MicroBatches, WarnOnce, refuse_existing_run, refuse_own_options
from .model_factory import describe as factory_spec
from .recorder import Recorder

MODULE_FILE = os.path.join("lightning", "module.json")


def _callback_bases():
    """Lightning's Callback classes that are installed: `lightning.pytorch` and `pytorch_lightning`
    are two packages with two Callback classes, and a Trainer accepts only its own."""
    bases = []
    for name in ("lightning.pytorch", "pytorch_lightning"):
        try:
            bases.append(importlib.import_module(name).Callback)
        except ImportError:
            pass
    if not bases:
        raise ImportError("nanscope_recorder.lightning needs lightning or pytorch_lightning installed")
    return tuple(bases)


def _hyperparameters(module):
    """The module's saved hyperparameters as JSON, or None when it has none that JSON can hold."""
    hparams = dict(getattr(module, "hparams", {}) or {})
    try:
        return json.loads(json.dumps(hparams))
    except (TypeError, ValueError):
        return None


def _describe_module(module, run_dir):
    """Writes lightning/module.json (class, import folders, hyperparameters) when the module can be
    rebuilt from them; returns why not otherwise."""
    cls = type(module)
    spec, folders, why = factory_spec(cls, module)
    if spec is None:
        return why
    hparams = _hyperparameters(module)
    if hparams is None:
        return "%s's hyperparameters are not all JSON values (numbers, strings, lists, dicts)" % cls.__name__
    path = os.path.join(run_dir, MODULE_FILE)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"class": spec, "paths": folders, "hparams": hparams}, f, indent=1)
    return None


def rebuild(run_dir):
    """The model factory eager replay calls ("nanscope_recorder.lightning:rebuild"): the
    LightningModule built again from its class and saved hyperparameters."""
    from .eager_model import load_factory
    with open(os.path.join(run_dir, MODULE_FILE), encoding="utf-8") as f:
        description = json.load(f)
    cls = load_factory(description["class"], description.get("paths", []))
    return cls(**description.get("hparams", {}))


def _refusal(trainer, module):
    if getattr(trainer, "world_size", 1) > 1:
        return ("a distributed run (%d processes): the callback records one process; use "
                "nanscope_recorder.DistributedRecorder in your own loop" % trainer.world_size)
    strategy = type(getattr(trainer, "strategy", None)).__name__
    if "DeepSpeed" in strategy or "FSDP" in strategy:
        return "the %s strategy shards the model; the callback does not record it yet" % strategy
    if getattr(module, "_compiler_ctx", None) or type(module).__name__ == "OptimizedModule":
        return "a torch.compile'd module: the compiled forward bypasses the recorder's hooks; record without compiling"
    return None


def _amp_dtype(trainer):
    precision = str(getattr(trainer, "precision", "32-true"))
    if precision.startswith("16"):
        return "float16"
    if precision.startswith("bf16"):
        return "bfloat16"
    return "none"


class _Recording:
    """The callback's behaviour; NanscopeCallback puts it over the installed Callback classes."""

    def __init__(self, run_dir, **recorder_options):
        refuse_existing_run(run_dir)
        refuse_own_options(recorder_options)
        self.run_dir = run_dir
        self._options = recorder_options
        self.recorder = None
        self._failure = WarnOnce("NanscopeCallback")
        self._scaler = None
        self._scale_before = None
        self._parameters = []
        self._step = None
        self._micro = MicroBatches()
        self._accumulation = 1
        self._scaler_disagreed = False

    def on_train_start(self, trainer, pl_module):
        refusal = _refusal(trainer, pl_module)
        if refusal:
            raise RuntimeError("nanscope NanscopeCallback: " + refusal)
        scaler = getattr(getattr(trainer, "precision_plugin", None), "scaler", None)
        self._scaler = scaler if scaler is not None and scaler.is_enabled() else None
        self._accumulation = int(getattr(trainer, "accumulate_grad_batches", 1) or 1)
        options = dict(self._options)
        options.setdefault("run_name", os.path.basename(os.path.normpath(os.path.abspath(self.run_dir))))
        os.makedirs(self.run_dir, exist_ok=True)
        why_not = _describe_module(pl_module, self.run_dir)
        # training_step exported (what the form file says when it did not export is why, then this).
        if why_not is None:
            options["checkpoint_form"] = ("exported", "a LightningModule: nanscope's replay rebuilds %s from %s "
                                          "(nanscope_recorder.lightning:rebuild)"
                                          % (type(pl_module).__name__, MODULE_FILE))
            options["model_factory"] = "nanscope_recorder.lightning:rebuild"
        else:
            options["checkpoint_form"] = ("exported", "a LightningModule that nanscope cannot rebuild: " + why_not)
        self.recorder = Recorder(self.run_dir, pl_module, amp_dtype=_amp_dtype(trainer),
                                 skipped_steps="nonfinite_gradients" if self._scaler is not None else "none",
                                 batch_call="training_step", **options)
        if why_not is not None:
            self.recorder.note("checkpoints are not rebuilt from the LightningModule's hyperparameters: " + why_not)
        self._parameters = [p for p in pl_module.parameters() if p.requires_grad]

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if self._failure.failed or self.recorder is None:
            return
        try:
            if self._step is None:
                self._step = int(trainer.global_step)
                self._micro = MicroBatches()
                self.recorder.begin_step(self._step, inputs=batch)
            self._micro.add(batch)
        except Exception as error:  # noqa: BLE001 - never stop the training
            self._failure.fail(self.recorder, "the start of step %s" % self._step, error)

    def on_before_backward(self, trainer, pl_module, loss):
        if self._failure.failed or self._step is None:
            return
        try:
            self._micro.add_loss(loss)
        except Exception as error:  # noqa: BLE001
            self._failure.fail(self.recorder, "the loss of step %s" % self._step, error)

    def on_after_backward(self, trainer, pl_module):
        if self._failure.failed or self._step is None or self._accumulation <= 1:
            return
        try:
            self._micro.note_gradients(self._parameters)
        except Exception as error:  # noqa: BLE001
            self._failure.fail(self.recorder, "the backward pass of step %s" % self._step, error)

    def on_before_optimizer_step(self, trainer, pl_module, optimizer):
        if self._failure.failed or self._step is None:
            return
        try:
            scale = float(self._scaler.get_scale()) if self._scaler is not None else None
            self._scale_before = scale
            if self.recorder.optimizer is None:  # read for optimizer_step
                self.recorder.optimizer = optimizer
            # Lightning divided each micro-batch's loss by accumulate_grad_batches: their sum is the
            # step's. Its scaler has unscaled the gradients already.
            self._micro.end_step(self.recorder, self._accumulation > 1, summed=True,
                                 lr=optimizer.param_groups[0].get("lr"), loss_scale=scale)
        except Exception as error:  # noqa: BLE001
            self._failure.fail(self.recorder, "the end of step %s" % self._step, error)
        self._step = None
        self._micro = MicroBatches()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        recorder = self.recorder
        if self._scaler is None or self._scale_before is None or recorder is None or self._failure.failed:
            return
        skipped = float(self._scaler.get_scale()) < self._scale_before
        self._scale_before = None
        if recorder.last_step_skipped is not None and skipped != recorder.last_step_skipped and \
                not self._scaler_disagreed:
            self._scaler_disagreed = True
            recorder.note("the loss scaler %s the update, though the recorder logged it as %s"
                          % ("skipped" if skipped else "applied", "skipped" if recorder.last_step_skipped else "applied"))

    def on_train_end(self, trainer, pl_module):
        if self.recorder is not None and not self._failure.failed:
            self.recorder.abandon_step()
            self.recorder.close()

    def on_exception(self, trainer, pl_module, exception):
        self.on_train_end(trainer, pl_module)


NanscopeCallback = type("NanscopeCallback", (_Recording,) + _callback_bases(), {
    "__doc__": "A Lightning Callback that records the run into `run_dir` (see the module text). Options are the "
               "Recorder's (checkpoint_every, activations_every, layers_every, batch_ring, spike_mads...).",
    "__module__": __name__,
})

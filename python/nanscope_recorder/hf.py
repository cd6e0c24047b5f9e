"""Records a Hugging Face Trainer run in one line (transformers, and TRL's trainers built on it):

    from nanscope_recorder.hf import NanscopeCallback
    trainer = Trainer(..., callbacks=[NanscopeCallback("runs/exp1")])

What it records, and where in the Trainer's step (transformers 5.x, trainer.py): the Trainer runs
forward and backward for each micro-batch, then clips the gradients, then calls
on_pre_optimizer_step, optimizer.step() and on_step_end. No callback event sees the gradients
before clipping, and clipping by a NaN norm makes every gradient NaN, which would hide the first bad
layer. So the callback also hooks the model:

- a forward pre-hook begins the step at its first micro-batch, with the batch as the model
  received it (its keyword arguments: input_ids, labels, attention_mask, num_items_in_batch...);
- the Trainer's compute_loss (the one of its class: TRL's trainers compute their own loss outside
  the model) is wrapped on this Trainer instance to keep each micro-batch's raw loss, NaN included
  (the Trainer's own log writes 0.0 for a NaN loss: logging_nan_inf_filter), and a gradient hook
  on that loss asks autograd to call back when its backward ends;
- after the backward of the step's last micro-batch (accelerate's GradientState.sync_gradients),
  before clipping, the recorder reads the gradients; an fp16 loss scale still in them is divided out.

Step N is the Trainer's global step N (trainer_state.json's "step"): the update the Trainer logs as
N. Nothing is changed: no hook returns a value, nothing draws random numbers, and a step with a NaN
is recorded, not skipped (the Trainer applies it, or its fp16 loss scaler skips it, as it would
unwatched). Checkpoints are state_dicts: nanscope's replay rebuilds a transformers model from the
config saved in the run (rebuild() below), so no factory has to be written; a model transformers
cannot rebuild (custom code) is saved as TorchScript or a trace, and the form file says why.
"""
import importlib
import inspect
import json
import os

import torch
from transformers import TrainerCallback

from .framework_step import MicroBatches, WarnOnce, model_batch, output_loss, refuse_existing_run, refuse_own_options
from .recorder import Recorder

# Where the run keeps what rebuilds the model: the config transformers wrote and which class read it.
MODEL_FOLDER = "transformers"
MODEL_FILE = "model.json"


def _gradient_state():
    from accelerate.state import GradientState
    return GradientState()


def _peft_parts(model):
    """(base model, PEFT config) of a PEFT-wrapped model, or (model, None)."""
    configs = getattr(model, "peft_config", None)
    base = getattr(getattr(model, "base_model", None), "model", None)
    if isinstance(configs, dict) and len(configs) == 1 and base is not None:
        return base, next(iter(configs.values()))
    return model, None


def why_not_rebuildable(model):
    """None when rebuild() can build this model again from its saved config, else why not."""
    base, _ = _peft_parts(model)
    config = getattr(base, "config", None)
    cls = type(base)
    if config is None or not hasattr(cls, "_from_config"):
        return "%s is not a transformers model (no config)" % cls.__name__
    if getattr(config, "auto_map", None):
        return "%s comes from the model's own code (trust_remote_code)" % cls.__name__
    module = cls.__module__.split(".")[0]
    if module != "transformers" or not hasattr(importlib.import_module("transformers"), cls.__name__):
        return "%s is not one of transformers' own classes (%s)" % (cls.__name__, cls.__module__)
    return None


def save_model_description(model, run_dir):
    """Writes <run>/transformers/: config.json (and PEFT's adapter_config.json) and model.json,
    which class to build and in which dtype."""
    folder = os.path.join(run_dir, MODEL_FOLDER)
    os.makedirs(folder, exist_ok=True)
    base, peft_config = _peft_parts(model)
    base.config.save_pretrained(folder)
    if peft_config is not None:
        peft_config.save_pretrained(folder)
    dtype = next((p.dtype for p in base.parameters() if p.is_floating_point()), torch.float32)
    description = {"class": type(base).__name__, "dtype": str(dtype).replace("torch.", ""),
                   "peft": peft_config is not None}
    with open(os.path.join(folder, MODEL_FILE), "w", encoding="utf-8") as f:
        json.dump(description, f, indent=1)


def rebuild_plan(model):
    """(model_factory, checkpoint_form, why not) for a transformers model: exported programs when
    it exports on its batch (replayed natively), else state_dict checkpoints that rebuild() builds
    again; or (None, None, why) when transformers cannot rebuild this one."""
    why_not = why_not_rebuildable(model)
    if why_not is not None:
        return None, None, why_not
    form = ("exported", "a transformers model: nanscope's replay rebuilds %s from the config in %s/ "
            "(nanscope_recorder.hf:rebuild)" % (type(_peft_parts(model)[0]).__name__, MODEL_FOLDER))
    return "nanscope_recorder.hf:rebuild", form, None


def rebuild(run_dir):
    """The model factory nanscope's eager replay calls (model_factory "nanscope_recorder.hf:rebuild"):
    the recorded model rebuilt, untrained, through transformers' own class from the config saved in
    the run (and PEFT's adapters around it); the checkpoint's weights are loaded afterwards."""
    import transformers
    folder = os.path.join(run_dir, MODEL_FOLDER)
    with open(os.path.join(folder, MODEL_FILE), encoding="utf-8") as f:
        description = json.load(f)
    cls = getattr(transformers, description["class"])
    config = transformers.AutoConfig.from_pretrained(folder)
    model = cls._from_config(config, dtype=getattr(torch, description.get("dtype", "float32")))
    if description.get("peft"):
        import peft
        model = peft.get_peft_model(model, peft.PeftConfig.from_pretrained(folder))
    return model


def _amp_dtype(args):
    """The autocast dtype the Trainer really trains in: accelerate turns fp16=True into nothing on a
    CPU (no autocast, no loss scaler: float32), and bf16=True into bfloat16 autocast everywhere."""
    device = getattr(getattr(args, "device", None), "type", "cpu")
    if getattr(args, "fp16", False) and device != "cpu":
        return "float16"
    if getattr(args, "bf16", False):
        return "bfloat16"
    return "none"


def _calling_trainer():
    """The transformers Trainer whose callback handler is calling: a callback is not given its
    Trainer, and the loss that goes into backward is the Trainer's (compute_loss), not always the
    model's. None when no Trainer is on the stack."""
    from transformers import Trainer
    frame = inspect.currentframe()
    try:
        while frame is not None:
            candidate = frame.f_locals.get("self")
            if isinstance(candidate, Trainer):
                return candidate
            frame = frame.f_back
    finally:
        del frame
    return None


def _refusal(args, model):
    """Why this callback cannot record this Trainer's run, or None. Said at on_train_begin,
    before the first step, so a run is never half-recorded."""
    if getattr(args, "deepspeed", None):
        return "DeepSpeed shards and wraps the model and its optimizer; the callback does not record DeepSpeed runs yet"
    if getattr(args, "fsdp", None):
        return "FSDP shards the parameters; the callback does not record FSDP runs yet"
    if getattr(args, "torch_compile", False) or type(model).__name__ == "OptimizedModule":
        return ("torch_compile=True: the compiled forward bypasses the hooks the callback needs; record without "
                "torch_compile, or use nanscope_recorder.Recorder in your own loop")
    if getattr(args, "world_size", 1) > 1:
        return ("a distributed run (%d processes): the callback records one process; use "
                "nanscope_recorder.DistributedRecorder in your own loop" % args.world_size)
    return None


class NanscopeCallback(TrainerCallback):
    """A transformers TrainerCallback that records the run into `run_dir` (see the module text).
    Options are the Recorder's (checkpoint_every, activations_every, layers_every, batch_ring,
    spike_mads...); skipped_steps, checkpoint_form and model_factory are the callback's to set."""

    def __init__(self, run_dir, **recorder_options):
        refuse_existing_run(run_dir)
        refuse_own_options(recorder_options)
        self.run_dir = run_dir
        self._options = recorder_options
        self.recorder = None
        self._failure = WarnOnce("NanscopeCallback")
        self._handles = []
        self._state = None
        self._optimizer = None
        self._scaler = None
        self._parameters = []
        self._step = None
        self._micro = MicroBatches()
        self._summed_losses = False
        self._backward_queued = False
        self._accumulation = 1
        self._scaler_disagreed = False
        self._trainer = None
        self._unwrap = lambda: None

    # ---------------------------------------------------------------- Trainer events

    def on_train_begin(self, args, state, control, model=None, optimizer=None, **kwargs):
        refusal = _refusal(args, model)
        if refusal:
            raise RuntimeError("nanscope NanscopeCallback: " + refusal)
        self._state, self._optimizer = state, optimizer
        scaler = getattr(optimizer, "scaler", None)
        self._scaler = scaler if scaler is not None and scaler.is_enabled() else None
        self._accumulation = int(getattr(args, "gradient_accumulation_steps", 1) or 1)
        amp = _amp_dtype(args)
        options = dict(self._options)
        # The Recorder itself rebuilds a transformers model from its config (rebuild_plan below).
        self.recorder = Recorder(self.run_dir, model, amp_dtype=amp,
                                 skipped_steps="nonfinite_gradients" if self._scaler is not None else "none",
                                 run_name=options.pop("run_name", None) or getattr(args, "run_name", None), **options)
        if self.recorder.optimizer is None:  # read for optimizer_step
            self.recorder.optimizer = optimizer
        self._parameters = [p for p in model.parameters() if p.requires_grad]
        self._handles = [model.register_forward_pre_hook(self._before_forward, with_kwargs=True)]
        self._trainer = _calling_trainer()
        if self._trainer is not None:
            self._wrap_compute_loss(self._trainer)
        else:  # called from elsewhere: the loss the model returns
            self._handles.append(model.register_forward_hook(self._after_forward))

    def on_optimizer_step(self, args, state, control, **kwargs):
        # The step's row said "skipped" when its gradients were not finite under an fp16 loss
        # scaler; the scaler has now decided. They agree unless the scaler has another rule.
        recorder = self.recorder
        if self._scaler is None or recorder is None or self._failure.failed or recorder.last_step_skipped is None:
            return
        skipped = bool(getattr(self._optimizer, "step_was_skipped", False))
        if skipped != recorder.last_step_skipped and not self._scaler_disagreed:
            self._scaler_disagreed = True
            recorder.note("step %d: the loss scaler %s the update, though the recorder logged it as %s"
                          % (state.global_step, "skipped" if skipped else "applied",
                             "skipped" if recorder.last_step_skipped else "applied"))

    def on_train_end(self, args, state, control, **kwargs):
        self._close()

    # ---------------------------------------------------------------- model hooks

    def _before_forward(self, module, args, kwargs):
        if self._failure.failed or not (module.training and torch.is_grad_enabled()):
            return None  # evaluation, or recording stopped
        try:
            batch = model_batch(args, kwargs)
            if self._step is None:
                self._step = self._state.global_step + 1  # the update the Trainer will log as this step
                self._micro = MicroBatches()
                self._summed_losses = "num_items_in_batch" in kwargs
                self.recorder.begin_step(self._step, inputs=batch)
            self._micro.add(batch)
        except Exception as error:  # noqa: BLE001 - never stop the training
            self._failure.fail(self.recorder, "the forward pass of step %s" % self._step, error)
        return None

    def _wrap_compute_loss(self, trainer):
        """This Trainer's compute_loss, called as before, its loss kept: an instance attribute over
        the class's method, removed at on_train_end."""
        original = trainer.compute_loss
        callback = self

        def compute_loss(*args, **kwargs):
            result = original(*args, **kwargs)
            loss = result[0] if isinstance(result, tuple) else result
            callback._on_loss(loss, kwargs.get("num_items_in_batch") is not None)
            return result

        trainer.compute_loss = compute_loss
        self._unwrap = lambda: trainer.__dict__.pop("compute_loss", None)

    def _on_loss(self, loss, summed):
        if self._failure.failed or self._step is None or not torch.is_grad_enabled():
            return
        try:
            if not isinstance(loss, torch.Tensor):
                raise ValueError("compute_loss returned a %s, not a tensor" % type(loss).__name__)
            self._summed_losses = summed
            self._micro.add_loss(loss)
            if loss.requires_grad:
                self._backward_queued = False
                loss.register_hook(self._on_gradient)
        except Exception as error:  # noqa: BLE001
            self._failure.fail(self.recorder, "the loss of step %s" % self._step, error)

    def _after_forward(self, module, args, output):
        """Without a Trainer on the stack: the loss the model returns."""
        if self._failure.failed or self._step is None or not (module.training and torch.is_grad_enabled()):
            return None
        try:
            loss = output_loss(output)
            if loss is None:
                raise ValueError("the model returned no loss; the callback records the loss the model returns when "
                                 "no Trainer calls it")
            self._on_loss(loss, self._summed_losses)
        except Exception as error:  # noqa: BLE001
            self._failure.fail(self.recorder, "the forward pass of step %s" % self._step, error)
        return None

    def _on_gradient(self, grad):
        if not self._backward_queued:
            self._backward_queued = True
            torch.autograd.Variable._execution_engine.queue_callback(self._after_backward)
        return None

    def _after_backward(self):
        if self._failure.failed or self._step is None:
            return
        try:
            if not _gradient_state().sync_gradients:
                if self._accumulation > 1:
                    self._micro.note_gradients(self._parameters)
                return
            self._end_step()
        except Exception as error:  # noqa: BLE001
            self._failure.fail(self.recorder, "the backward pass of step %s" % self._step, error)

    def _end_step(self):
        lr = self._optimizer.param_groups[0].get("lr") if self._optimizer is not None else None
        # The gradients still carry an fp16 loss scale here (the Trainer unscales when it clips).
        scale = float(self._scaler.get_scale()) if self._scaler is not None else None
        self._micro.end_step(self.recorder, self._accumulation > 1, self._summed_losses, lr=lr, loss_scale=scale,
                             gradient_scale=scale)
        self._step = None
        self._micro = MicroBatches()

    def _close(self):
        for handle in self._handles:
            handle.remove()
        self._handles = []
        self._unwrap()
        self._unwrap = lambda: None
        if self.recorder is not None and not self._failure.failed:
            self.recorder.abandon_step()
            self.recorder.close()

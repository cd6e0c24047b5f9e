"""Checkpoints and batches as the run directory contract names them (step_%08d.pt)."""
import os
import warnings

import torch


def step_file_name(step):
    return "step_%08d.pt" % step


def _save_atomically(save, path):
    # A process killed while saving leaves no half-written file under the contract's name.
    tmp = path + ".partial"
    save(tmp)
    os.replace(tmp, path)


class Checkpointer:
    """Saves the model as TorchScript when it scripts, else its state_dict.

    The model is scripted once. torch.jit.script shares the model's parameter and buffer tensors,
    so a later save writes the current weights without scripting again; tensors the model replaced
    since then are copied over first. The recorder's hooks must not be on the model while it is
    scripted (scripting compiles forward hooks and fails on them): the recorder only attaches its
    hooks between begin_step and end_step of the steps that log activations, and checkpoints are
    saved outside that window.
    """

    def __init__(self, model, directory):
        self.model = model
        self.directory = directory
        self.scripted = None
        self.script_error = None  # why the model did not script; None while untried or scripted

    @property
    def kind(self):
        return "TorchScript" if self.scripted is not None else "state_dict"

    def _script(self):
        if self.scripted is not None or self.script_error is not None:
            return
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                scripted = torch.jit.script(self.model)
            live = self.model.state_dict(keep_vars=True)
            mine = scripted.state_dict(keep_vars=True)
            if set(live) != set(mine):
                raise RuntimeError("the scripted model's state names differ from the model's")
            self.scripted = scripted
        except Exception as error:  # noqa: BLE001 - any scripting failure means "use a state_dict"
            first_line = (str(error).strip().splitlines() or [type(error).__name__])[0]
            self.script_error = "%s: %s" % (type(error).__name__, first_line)

    def save(self, step, overrides=None):
        """Writes checkpoints/step_N.pt from the model's current state, with `overrides`
        (state name -> tensor, e.g. pre-forward BatchNorm buffers) in place of live tensors.
        Returns the path."""
        os.makedirs(self.directory, exist_ok=True)
        path = os.path.join(self.directory, step_file_name(step))
        overrides = overrides or {}
        self._script()
        if self.scripted is None:
            state = self.model.state_dict()
            for name, tensor in overrides.items():
                state[name] = tensor
            _save_atomically(lambda p: torch.save(state, p), path)
            return path

        live = self.model.state_dict(keep_vars=True)
        target = self.scripted.state_dict(keep_vars=True)
        restore = []
        with torch.no_grad():
            for name, dst in target.items():
                src = overrides.get(name, live[name])
                if dst.data_ptr() == src.data_ptr() and name not in overrides:
                    continue
                if name in overrides and dst.data_ptr() == live[name].data_ptr():
                    restore.append((dst, dst.clone()))  # shared with the live model: put it back after
                dst.copy_(src)
            self.scripted.train(self.model.training)
            try:
                _save_atomically(self.scripted.save, path)
            finally:
                for dst, original in restore:
                    dst.copy_(original)
        return path


def _cpu(value):
    if isinstance(value, torch.Tensor):
        return value.detach().cpu()
    if isinstance(value, (list, tuple)):
        values = [_cpu(v) for v in value]
        # LibTorch's pickle reader fails on one-element lists: a single input is saved bare.
        return values[0] if len(values) == 1 else values
    if isinstance(value, dict):
        return {k: _cpu(v) for k, v in value.items()}
    return value


def save_batch(directory, step, inputs, targets=None, loss_name=None):
    """Writes batches/step_N.pt: {"inputs", "targets", "loss", "step"} as the contract lists them."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, step_file_name(step))
    batch = {"inputs": _cpu(inputs), "step": int(step)}
    if targets is not None:
        batch["targets"] = _cpu(targets)
    if loss_name:
        batch["loss"] = loss_name
    _save_atomically(lambda p: torch.save(batch, p), path)
    return path

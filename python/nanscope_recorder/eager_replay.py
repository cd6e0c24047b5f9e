"""Eager replay: one saved step re-run in Python, for models that neither script nor trace.

`nanscope replay` runs this module in a child process (``python -m nanscope_recorder.eager_replay``)
when a checkpoint is a state_dict and the run says how to rebuild its model (the recorder's
``model_factory``). It rebuilds the model, loads the checkpoint and the batch, and runs forward
and backward with a forward pre-hook and hook on every module (which module is running, by
PyTorch's named_modules() names) and a TorchFunctionMode over every torch call (the op, its
Python source line, the statistics of its inputs and output, and a gradient hook on its output).

It prints the replay JSON `nanscope replay --json` prints, with the ops' statistics and nothing
judged: the culprit, the findings and the layer filter are nanscope's (core/replay), the same as
for a TorchScript replay. It imports and runs the user's code: that is why it runs in a child.

Exit status: 0 with the JSON on stdout; 2 with one line on stderr naming what is wrong (a factory
that does not import, a checkpoint that does not fit the model, a batch the model cannot take)."""
import argparse
import contextlib
import dataclasses
import inspect
import json
import linecache
import math
import os
import sys

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from .model_names import user_name_of
from .eager_model import REPLAY_DTYPES, EagerReplayError, build_model, first_line, load_checkpoint, main_dtype_name

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))
_THIS_DIR = os.path.dirname(os.path.abspath(__file__))

DTYPE_NAMES = {torch.float32: "Float", torch.float64: "Double", torch.float16: "Half", torch.bfloat16: "BFloat16",
               torch.int64: "Long", torch.int32: "Int", torch.int16: "Short", torch.int8: "Char",
               torch.uint8: "Byte", torch.bool: "Bool"}
# --dtype recorded: every parameter keeps the dtype its checkpoint holds, as the training ran (a
# float16 model with float32 LoRA adapters has no single dtype to cast to).
RECORDED_DTYPE = "recorded"
# The named losses of nanscope's replay (core/torch/Replay.cpp computeLoss), computed in float32.
NAMED_LOSSES = {
    "cross_entropy": lambda out, y: F.cross_entropy(out.float(), y.long()),
    "nll": lambda out, y: F.nll_loss(out.float(), y.long()),
    "mse": lambda out, y: F.mse_loss(out.float(), y.float().view_as(out)),
    "bce_with_logits": lambda out, y: F.binary_cross_entropy_with_logits(out.float(), y.float().view_as(out)),
}
# Python operator names of torch calls, as the ATen ops they are.
_OP_NAMES = {"truediv": "div", "rtruediv": "div", "radd": "add", "rsub": "sub", "rmul": "mul", "rpow": "pow",
             "getitem": "index", "rmatmul": "matmul", "itruediv": "div_", "iadd": "add_", "isub": "sub_",
             "imul": "mul_", "floordiv": "floor_divide"}


# ---------------------------------------------------------------- values

def value_json(t):
    """A tensor's statistics as the replay JSON writes a value (app/codecs/ReplayJson.cpp)."""
    if not isinstance(t, torch.Tensor):
        return {}
    t = t.detach()
    if t.is_complex():
        t = torch.view_as_real(t)
    out = {"shape": list(t.shape), "dtype": DTYPE_NAMES.get(t.dtype, str(t.dtype).replace("torch.", "")),
           "numel": t.numel(), "nan": 0, "posinf": 0, "neginf": 0, "inf": 0,
           "min": None, "max": None, "mean": None, "std": None, "absmax": None, "nonzero_absmin": None}
    if t.numel() == 0:
        return out
    x = t.double() if t.dtype != torch.bool else t.to(torch.float64)
    if t.is_floating_point():
        out["nan"] = int(torch.isnan(x).sum())
        out["posinf"] = int(torch.isposinf(x).sum())
        out["neginf"] = int(torch.isneginf(x).sum())
        out["inf"] = out["posinf"] + out["neginf"]
        finite = x[torch.isfinite(x)]
    else:
        finite = x.flatten()
    if finite.numel():
        out["min"] = float(finite.min())
        out["max"] = float(finite.max())
        out["mean"] = float(finite.mean())
        out["std"] = float(finite.std()) if finite.numel() > 1 else 0.0
        magnitude = finite.abs()
        out["absmax"] = float(magnitude.max())
        nonzero = magnitude[magnitude > 0]
        out["nonzero_absmin"] = float(nonzero.min()) if nonzero.numel() else None
    return out


def _has_nonfinite(t):
    return isinstance(t, torch.Tensor) and t.is_floating_point() and not bool(torch.isfinite(t.detach()).all())


def _tensors_in(value):
    """The tensors of an argument, a list, a tuple or a dict, in order."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors_in(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors_in(v)]
    return []


def _source_of_caller():
    """("model.py:42", "return (x - mean) / std"): the innermost frame outside torch and nanscope."""
    frame = sys._getframe(2)
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if not path.startswith(_TORCH_DIR) and not path.startswith(_THIS_DIR) and not path.startswith("<"):
            return "%s:%d" % (os.path.basename(path), frame.f_lineno), linecache.getline(path, frame.f_lineno).strip()
        frame = frame.f_back
    return "", ""


def _op_name(func):
    name = getattr(func, "__name__", None) or str(func)
    stripped = name.strip("_") if name.startswith("__") else name
    return "aten::" + _OP_NAMES.get(stripped, stripped)


def _softmax_signature(name, args, kwargs, output):
    """What a softmax did (ReplayTrace.h SoftmaxSignature): max |input|, the mean row entropy of its
    output along its dim, and that of a uniform row."""
    if name not in ("aten::softmax", "aten::log_softmax") or not args or not isinstance(args[0], torch.Tensor):
        return None
    x = args[0].detach()
    dim = kwargs.get("dim", args[1] if len(args) > 1 else -1)
    if not isinstance(dim, int) or x.dim() == 0:
        return None
    finite = x[torch.isfinite(x)]
    p = output.detach().double()
    if name == "aten::log_softmax":
        logp, p = p, p.exp()
    else:
        logp = p.clamp_min(1e-300).log()
    entropy = -(p * logp).nan_to_num(nan=0.0).sum(dim=dim)
    rows = torch.isfinite(output.detach()).all(dim=dim)
    return {"input_absmax": float(finite.abs().max()) if finite.numel() else 0.0,
            "entropy": float(entropy[rows].mean()) if bool(rows.any()) else None,
            "uniform_entropy": math.log(x.shape[dim]) if x.shape[dim] > 0 else 0.0}


# ---------------------------------------------------------------- the instrumented run

class _Recording(TorchFunctionMode):
    """Every torch call of the forward: op, module, source line, input and output statistics,
    and a gradient hook on its output. Calls that give no floating-point tensor (a shape, a
    comparison's bool mask kept only as an input) are not ops of the replay."""

    def __init__(self, modules, data_ids):
        super().__init__()
        self.modules = modules  # the module path stack, innermost last
        self.data_ids = data_ids  # ids of tensors computed from the batch
        self.ops = []
        self.outputs = []  # (op index, output tensor): kept alive, so ids stay unique
        self.producer = {}  # id(tensor) -> op index that produced it
        self.input_ids = []  # per op: ids of its tensor inputs
        self.grads = {}
        self.grad_order = []
        self.alive = []  # data tensors that are no op's output, kept so that their ids stay theirs

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        name = _op_name(func)
        if name in ("aten::__get__", "aten::get", "aten::__set__", "aten::setitem"):
            return result
        outputs = _tensors_in(result)
        inputs = _tensors_in(list(args)) + _tensors_in(list(kwargs.values()))
        # A value computed from the batch, a bool mask of it included, is data; a mask of
        # finfo.min or a position table made from constants and weights is not.
        from_data = any(id(t) in self.data_ids for t in inputs)
        if from_data:
            for t in outputs:
                self.data_ids.add(id(t))
                self.alive.append(t)
        output = next((t for t in outputs if t.is_floating_point() or t.is_complex()), None)
        if output is None:
            return result
        index = len(self.ops)
        source, code = _source_of_caller()
        op = {"index": index, "op": name, "module": self.modules[-1] if self.modules else "",
              "source": source, "code": code, "output": value_json(output),
              "inputs": [value_json(t) for t in inputs]}
        if not from_data:
            op["from_data"] = False
        if output.grad_fn is not None:
            op["grad_fn"] = type(output.grad_fn).__name__
        softmax = _softmax_signature(name, args, kwargs, output)
        if softmax is not None:
            op["softmax"] = softmax
        self.ops.append(op)
        self.outputs.append((index, output))
        self.input_ids.append([id(t) for t in inputs])
        self.producer[id(output)] = index
        if output.requires_grad:
            output.register_hook(self._grad_hook(index))
        return result

    def _grad_hook(self, index):
        def hook(grad):
            self.grads[index] = grad.detach().clone()
            self.grad_order.append(index)
        return hook


def _module_hooks(model, stack):
    handles = []
    user_name = user_name_of(model)
    for name, module in model.named_modules():
        name = user_name(name)
        def enter(mod, inputs, name=name):
            stack.append(name)

        def leave(mod, inputs, output, name=name):
            if stack and stack[-1] == name:
                stack.pop()
        handles.append(module.register_forward_pre_hook(enter))
        handles.append(module.register_forward_hook(leave))
    return handles


def _positional_parameters(forward):
    try:
        parameters = inspect.signature(forward).parameters.values()
    except (TypeError, ValueError):
        return None, False
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    variadic = any(p.kind == p.VAR_POSITIONAL for p in parameters)
    return positional, variadic


def _forward_arguments(model, batch, batch_path):
    """(args, kwargs, targets passed to forward): the batch's inputs as forward's positional (a
    tensor, a list or tuple) or keyword (a dict) arguments, and the targets too when forward takes
    one argument more (a model that computes its loss in forward)."""
    inputs, targets = batch.get("inputs"), batch.get("targets")
    if isinstance(inputs, dict):
        kwargs = dict(inputs)
        if targets is not None and "labels" not in kwargs:
            positional, _ = _positional_parameters(model.forward)
            if positional is not None and any(p.name == "labels" for p in positional):
                kwargs["labels"] = targets
                return [], kwargs, True
        return [], kwargs, "labels" in kwargs
    args = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    if any(a is None for a in args):
        raise EagerReplayError("%s holds no inputs" % batch_path)
    positional, variadic = _positional_parameters(model.forward)
    if targets is not None and positional is not None and not variadic and len(positional) == len(args) + 1:
        return args + [targets], {}, True
    return args, {}, False


def _returned_loss(returned):
    """(loss tensor or None, "['loss']" / ".loss" / "[0]" / "", logits or None) from forward's output."""
    if isinstance(returned, torch.Tensor):
        return (returned, "", None) if returned.dim() == 0 else (None, "", returned)
    if isinstance(returned, dict):
        return returned.get("loss"), "['loss']", returned.get("logits")
    if dataclasses.is_dataclass(returned) or hasattr(returned, "loss"):
        return getattr(returned, "loss", None), ".loss", getattr(returned, "logits", None)
    if isinstance(returned, (list, tuple)) and returned and isinstance(returned[0], torch.Tensor):
        if returned[0].dim() == 0:
            return returned[0], "[0]", next((t for t in returned[1:] if isinstance(t, torch.Tensor)), None)
    return None, "", None


def _fields_of(returned):
    """A result object's values: a dataclass's fields, else its attributes (model libraries return
    such objects; 'logits' first when it has one)."""
    if dataclasses.is_dataclass(returned):
        return [getattr(returned, f.name) for f in dataclasses.fields(returned)]
    values = dict(getattr(returned, "__dict__", {}))
    first = [values.pop("logits")] if "logits" in values else []
    return first + list(values.values())


def _first_tensor(returned):
    plain = isinstance(returned, (torch.Tensor, list, tuple, dict))
    tensors = _tensors_in(returned if plain else _fields_of(returned))
    return tensors[0] if tensors else None


def _to(value, device, dtype):
    if isinstance(value, torch.Tensor):
        value = value.to(device)
        return value.to(dtype) if value.is_floating_point() else value
    if isinstance(value, (list, tuple)):
        return type(value)(_to(v, device, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _to(v, device, dtype) for k, v in value.items()}
    return value


def _call_of(model, batch, batch_path):
    """(callable, args, kwargs, targets passed, "what was called" or None): the model's forward on
    the batch's inputs, or, for a batch whose loss a framework's training step computed (Lightning's
    training_step(batch, batch_idx): "call" in the batch), that method on the batch as the framework
    gave it, which calls forward itself."""
    step_method = batch.get("call")
    if step_method is None:
        args, kwargs, targets_in_forward = _forward_arguments(model, batch, batch_path)
        return model, args, kwargs, targets_in_forward, None
    if not isinstance(step_method, str) or not callable(getattr(model, step_method, None)):
        raise EagerReplayError("%s: the batch is for %r, which the rebuilt %s does not have"
                               % (batch_path, step_method, type(model).__name__))
    return getattr(model, step_method), [batch.get("inputs"), 0], {}, True, "%s(batch, 0)" % step_method


def replay(model, batch, batch_path, loss_name=None, backward=True):
    """Runs the instrumented forward and backward; returns the replay JSON's fields."""
    target, args, kwargs, targets_in_forward, call = _call_of(model, batch, batch_path)
    stack = []
    data_ids = {id(t) for t in _tensors_in(args) + _tensors_in(kwargs)}
    recording = _Recording(stack, data_ids)
    handles = _module_hooks(model, stack)
    if call is None:
        call = "forward(%s)" % ", ".join([p.name for p in (_positional_parameters(model.forward)[0] or [])][:len(args)]
                                         + list(kwargs))
    try:
        with recording:
            try:
                returned = target(*args, **kwargs)
            except Exception as error:  # noqa: BLE001
                shapes = ", ".join("%s %s" % (DTYPE_NAMES.get(t.dtype, t.dtype), list(t.shape))
                                   for t in _tensors_in(args) + _tensors_in(kwargs))
                raise EagerReplayError("%s: the model's forward failed on this batch, which holds %s: %s: %s"
                                       % (batch_path, shapes, type(error).__name__, first_line(error))) from None
    finally:
        for handle in handles:
            handle.remove()

    result = {"notes": [], "loss": None, "loss_name": "", "loss_convention": "none", "loss_from": "",
              "loss_op": None}
    in_forward, access, _ = _returned_loss(returned)
    loss = None
    if in_forward is not None or targets_in_forward:
        result["loss_convention"] = "in_forward"
        result["loss_from"] = call + access
        if in_forward is None:
            result["notes"].append("the model's %s takes the targets but returned no loss (a scalar tensor, or a "
                                   "'loss' entry or attribute): backward skipped" % call)
        elif in_forward.dim() != 0:
            result["notes"].append("the loss %s has shape %s, not a scalar: backward skipped"
                                   % (result["loss_from"], list(in_forward.shape)))
        else:
            loss = in_forward
    else:
        output = _first_tensor(returned)
        targets = batch.get("targets")
        name = batch.get("loss") or loss_name
        if output is None:
            raise EagerReplayError("forward returned a %s: no tensor to compute a loss of, and no 'loss' entry"
                                   % type(returned).__name__)
        if targets is not None and name:
            if name not in NAMED_LOSSES:
                raise EagerReplayError("unknown loss '%s' (%s)" % (name, ", ".join(NAMED_LOSSES)))
            result.update(loss_convention="named_loss", loss_name=name, loss_from="%s(output, targets)" % name)
            try:
                loss = NAMED_LOSSES[name](output, targets.to(output.device))
            except Exception as error:  # noqa: BLE001
                raise EagerReplayError("%s: the model's output %s does not fit the batch's targets %s for the %s "
                                       "loss (%s)" % (batch_path, list(output.shape), list(targets.shape), name,
                                                      first_line(error))) from None
        else:
            result["notes"].append("no loss name in the batch or the run: backward skipped" if targets is not None
                                   else "the batch has no targets: backward skipped")
    if loss is not None:
        result["loss"] = float(loss.detach().double())
    params = []
    if loss is not None and backward and loss.requires_grad:
        try:
            loss.backward()
        except Exception as error:  # noqa: BLE001
            raise EagerReplayError("backward failed: %s: %s" % (type(error).__name__, first_line(error))) from None
    for index, grad in recording.grads.items():
        recording.ops[index]["grad"] = value_json(grad)
    if result["loss_convention"] == "in_forward" and loss is not None:
        index = recording.producer.get(id(loss))
        if index is not None:
            result["loss_op"] = recording.ops[index]
    if loss is not None and backward:
        user_name = user_name_of(model)
        for name, p in model.named_parameters():
            name = user_name(name)
            params.append({"name": name, "value": value_json(p), "grad": value_json(p.grad)})
    # The backward culprit: the first op, in the order backward reached them, whose output's
    # gradient is finite while a gradient it passed to one of its inputs (an op's output, or a
    # parameter) is not.
    culprit = None
    parameters = {id(p): p for p in model.parameters()}
    for index in recording.grad_order:
        if _has_nonfinite(recording.grads.get(index)):
            continue
        for input_id in recording.input_ids[index]:
            upstream = recording.producer.get(input_id)
            grad = recording.grads.get(upstream) if upstream is not None else (
                parameters[input_id].grad if input_id in parameters else None)
            if _has_nonfinite(grad):
                culprit = index
                break
        if culprit is not None:
            break
    result["ops"] = recording.ops
    result["grad_culprit"] = culprit
    result["params"] = params
    result["call"] = call
    return result


def _blew_up(value, factor, typical):
    """A finite value above factor times its typical one (core/replay/BlowupBaseline's rule)."""
    return factor is not None and typical is not None and typical > 0 and math.isfinite(value) and \
        abs(value) > factor * typical


def _is_bad(model, batch, batch_path, samples, loss_name, blowup=None):
    """A forward (and loss, and gradients) over these samples holds a non-finite value, or the
    loss or gradient norm blew up against `blowup` (factor, typical loss, typical gradient norm)."""
    factor, typical_loss, typical_grad_norm = blowup or (None, None, None)
    index = torch.tensor(samples, dtype=torch.long)

    def take(value):
        if isinstance(value, torch.Tensor) and value.dim() > 0 and value.shape[0] == n:
            return value.index_select(0, index.to(value.device))
        if isinstance(value, (list, tuple)):
            return type(value)(take(v) for v in value)
        if isinstance(value, dict):
            return {k: take(v) for k, v in value.items()}
        return value
    first = _tensors_in(batch.get("inputs"))
    n = first[0].shape[0] if first and first[0].dim() > 0 else 0
    subset = {k: take(v) for k, v in batch.items()}
    try:
        target, args, kwargs, _, _ = _call_of(model, subset, batch_path)
        model.zero_grad(set_to_none=True)
        returned = target(*args, **kwargs)
        plain = isinstance(returned, (torch.Tensor, list, tuple, dict))
        if any(_has_nonfinite(t) for t in _tensors_in(returned if plain else _fields_of(returned))):
            return True
        loss, _, _ = _returned_loss(returned)
        name = subset.get("loss") or loss_name
        if loss is None and name in NAMED_LOSSES and subset.get("targets") is not None:
            loss = NAMED_LOSSES[name](_first_tensor(returned), subset["targets"])
        if loss is None or loss.dim() != 0:
            return False
        loss_value = float(loss.detach())
        if not math.isfinite(loss_value) or _blew_up(loss_value, factor, typical_loss):
            return True
        if loss.requires_grad:
            loss.backward()
            grads = [p.grad for p in model.parameters() if p.grad is not None]
            if any(_has_nonfinite(g) for g in grads):
                return True
            norm = math.sqrt(sum(float(g.detach().double().pow(2).sum()) for g in grads)) if grads else 0.0
            return _blew_up(norm, factor, typical_grad_norm)
    except Exception:  # noqa: BLE001 - a subset the model cannot run counts against it
        return True
    return False


def bisect(model, batch, batch_path, loss_name, limit=512, blowup=None):
    """The bad samples of the batch: every subset padded with samples known clean (BatchNorm in
    training mode cannot run one sample, and a NaN sample poisons its batch's statistics), as
    nanscope's TorchScript replay finds them. A subset is bad when a value goes non-finite, or,
    given `blowup` (factor, typical loss, typical gradient norm: core/replay/BlowupBaseline, passed
    by the C++ side), when its finite loss or gradient norm is factor times the typical one."""
    first = _tensors_in(batch.get("inputs"))
    if not first or first[0].dim() == 0:
        return []
    n = min(int(first[0].shape[0]), limit)
    everything = list(range(n))
    if not _is_bad(model, batch, batch_path, everything, loss_name, blowup):
        return []
    clean, queue = [], [everything]
    while queue and not clean:
        samples = queue.pop(0)
        if len(samples) < 2:
            continue
        mid = len(samples) // 2
        for half in (samples[:mid], samples[mid:]):
            if len(half) >= 2 and not _is_bad(model, batch, batch_path, half, loss_name, blowup):
                clean = half
                break
            queue.append(half)
    if not clean:
        return everything
    return [i for i in everything if i not in clean and _is_bad(model, batch, batch_path, clean + [i], loss_name, blowup)]


def run(options):
    torch.manual_seed(0)
    device = torch.device(options.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise EagerReplayError("--device cuda: this torch has no CUDA, or no GPU is visible")
    if options.dtype != RECORDED_DTYPE and options.dtype not in REPLAY_DTYPES:
        raise EagerReplayError("--dtype %s: one of %s, %s" % (options.dtype, RECORDED_DTYPE, ", ".join(REPLAY_DTYPES)))
    dtype = REPLAY_DTYPES.get(options.dtype)  # None: the checkpoint's own dtypes
    # checkpoints/step_N.pt: the run directory is the folder above.
    run_dir = os.path.dirname(os.path.dirname(os.path.abspath(options.checkpoint)))
    model = build_model(options.factory, options.path, run_dir)
    held = load_checkpoint(model, options.checkpoint, options.factory)
    try:
        batch = torch.load(options.batch, map_location="cpu")
    except Exception as error:  # noqa: BLE001
        raise EagerReplayError("%s: not a batch file torch.load can read (%s)" % (options.batch, first_line(error))) from None
    if not isinstance(batch, dict) or "inputs" not in batch:
        raise EagerReplayError("%s: not a nanscope batch (a dict with 'inputs')" % options.batch)
    model.to(device=device, dtype=dtype)
    model.train(not options.eval)
    replayed_dtype = options.dtype if dtype is not None else main_dtype_name(model)
    batch = {k: (_to(v, device, dtype) if k == "inputs" else _to(v, device, None) if k == "targets" else v)
             for k, v in batch.items()}
    if isinstance(batch.get("targets"), torch.Tensor) and batch["targets"].is_floating_point() and \
            dtype not in (None, torch.float32):
        batch["targets"] = batch["targets"].to(dtype)
    found = replay(model, batch, options.batch, options.loss_name, backward=not options.no_backward)
    # A state_dict is why a replay is eager; a program replays eagerly when asked (--eager), or when
    # the native replay could not run it (nanscope's note before this one says so).
    found["notes"].insert(0, "eager replay: %s rebuilt the model in Python; every module's forward was hooked and "
                             "every torch call recorded%s" % (options.factory, " (a state_dict checkpoint has no "
                                                              "program to replay)" if held == "state_dict" else ""))
    step = batch.get("step", options.step)
    out = {"step": int(step) if step is not None else -1, "replay": "eager", "loss": found["loss"],
           "loss_name": found["loss_name"], "loss_convention": found["loss_convention"],
           "loss_from": found["loss_from"], "loss_op": found["loss_op"], "checkpoint": options.checkpoint,
           "batch": options.batch, "dtype": replayed_dtype, "mode": "eval" if options.eval else "train",
           "forward": {"first_nonfinite": None, "ops": found["ops"]},
           "backward": {"first_nonfinite": None, "culprit_index": found["grad_culprit"], "params": found["params"]},
           "findings": [], "notes": found["notes"]}
    if options.bisect:
        blowup = (options.blowup_factor, options.typical_loss, options.typical_grad_norm)
        out["bad_samples"] = bisect(model, batch, options.batch, options.loss_name, blowup=blowup)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m nanscope_recorder.eager_replay", description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", required=True, help="a state_dict checkpoint (checkpoints/step_N.pt)")
    parser.add_argument("--batch", required=True, help="the batch file (batches/step_N.pt)")
    parser.add_argument("--factory", required=True, help="module:callable that builds the model")
    parser.add_argument("--path", action="append", default=[], help="a folder to import the factory from")
    parser.add_argument("--loss-name", default=None)
    parser.add_argument("--dtype", default="float32", help="float16, bfloat16, float32, float64, or recorded: "
                        "the checkpoint's own dtypes")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--eval", action="store_true")
    parser.add_argument("--bisect", action="store_true")
    parser.add_argument("--blowup-factor", type=float, default=None)
    parser.add_argument("--typical-loss", type=float, default=None)
    parser.add_argument("--typical-grad-norm", type=float, default=None)
    parser.add_argument("--no-backward", action="store_true")
    parser.add_argument("--step", type=int, default=None)
    parser.add_argument("--autocast", default=None, choices=("float16", "bfloat16"),
                        help="replay under torch.autocast in this dtype, as the run trained (its amp_dtype)")
    options = parser.parse_args(argv)
    # The user's code may print: keep stdout for the JSON alone.
    real_stdout = sys.stdout
    try:
        with contextlib.redirect_stdout(sys.stderr):
            if options.autocast:
                with torch.autocast(torch.device(options.device).type, dtype=getattr(torch, options.autocast)):
                    found = run(options)
                found.setdefault("notes", []).append("replayed under %s autocast, as the run trained (amp_dtype); "
                                                     "--dtype float32 replays without it" % options.autocast)
            else:
                found = run(options)
    except EagerReplayError as error:
        print("nanscope eager replay: %s" % error, file=sys.stderr)
        return 2
    json.dump(_json_safe(found), real_stdout, allow_nan=False)
    real_stdout.write("\n")
    return 0


def _json_safe(value):
    """JSON has no NaN or Inf: a non-finite number is null, as nanscope's replay writes it."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


if __name__ == "__main__":
    sys.exit(main())

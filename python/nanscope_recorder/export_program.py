"""What the recorder exports with torch.export: the arguments and dynamic batch dimension of a
model's forward, the view of a framework's training step (Lightning's training_step) that returns
its loss, and whether nanscope's native replay runs the program (run_format.json says which ops)."""
import copy
import inspect

import torch

from .run_format import EXPORT_REPLAY_HIGHER_ORDER_OPS, EXPORT_REPLAY_OP_NAMESPACES


def positional_inputs(inputs):
    """The positional arguments torch.jit.trace (and nanscope's replay) pass to forward."""
    if isinstance(inputs, torch.Tensor):
        return (inputs,)
    if isinstance(inputs, (list, tuple)) and inputs and all(isinstance(t, torch.Tensor) for t in inputs):
        return tuple(inputs)
    if inputs is None:
        raise ValueError("no inputs were given to begin_step to trace with")
    raise ValueError("inputs are a %s; tracing (and replay) passes a tensor or a list of tensors "
                     "as forward's positional arguments" % type(inputs).__name__)


# A batch's settings beside its tensors (CLIP's return_loss=True from its collator): torch.export
# bakes them into the program, and the replay's batch reader leaves them to it.
SETTING_TYPES = (bool, int, float, str, type(None))


def export_arguments(inputs):
    """(args, kwargs) forward is exported with: a tensor or a list of tensors as positional
    arguments, a dict of tensors (a Hugging Face batch) as keyword arguments, with any settings
    among them (SETTING_TYPES)."""
    if isinstance(inputs, dict) and any(isinstance(t, torch.Tensor) for t in inputs.values()) and \
            all(isinstance(t, (torch.Tensor,) + SETTING_TYPES) for t in inputs.values()):
        return (), dict(inputs)
    return positional_inputs(inputs), {}


def signature_of(args, kwargs):
    """What an export specialises on: each tensor's shape, dtype and device, each setting's value."""
    def of(value):
        if isinstance(value, torch.Tensor):
            return tuple(value.shape), value.dtype, value.device
        return type(value).__name__, value
    return tuple(of(t) for t in args), tuple((k, of(v)) for k, v in kwargs.items())


def batch_dims(args, kwargs):
    """dynamic_shapes for torch.export: dim 0 of every tensor input is the batch, dynamic where the
    model allows it (Dim.AUTO: static where the graph needs one size), so that replay can bisect
    the batch into subsets."""
    def dims(t):
        return {0: torch.export.Dim.AUTO} if isinstance(t, torch.Tensor) and t.dim() > 0 else None
    if kwargs:
        return {name: dims(t) for name, t in kwargs.items()}
    return tuple(dims(t) for t in args)


class NotReplayableExport(Exception):
    """An exported program nanscope's replay cannot run: it calls an op outside LibTorch."""


def ops_the_replay_lacks(program):
    """The ops of `program` (its subgraphs included) that the native replay does not run: an
    extension library's op (transformers::grouped_mm_fallback, a user's torch.library op) needs that
    library's code, which the replay never runs; run_format.json says what it does run."""
    lacking = []
    for graph_module in program.graph_module.modules():
        if not isinstance(graph_module, torch.fx.GraphModule):
            continue
        for node in graph_module.graph.nodes:
            if node.op != "call_function":
                continue
            target = node.target
            if isinstance(target, torch._ops.HigherOrderOperator):
                if target.name() not in EXPORT_REPLAY_HIGHER_ORDER_OPS:
                    lacking.append("the higher-order op %s" % target.name())
            elif isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
                # "transformers::grouped_mm_fallback" (an overload's name adds ".default")
                name = target._qualified_op_name if isinstance(target, torch._ops.OpOverloadPacket) else target.name()
                namespace = name.split("::")[0]
                if namespace not in EXPORT_REPLAY_OP_NAMESPACES:
                    lacking.append("%s, an op of the extension library '%s'" % (name.split(".")[0], namespace))
    return list(dict.fromkeys(lacking))


def _loss_returned(returned, call):
    """The loss a training step returned (a scalar tensor, or a dict's "loss" as Lightning accepts)."""
    loss = returned.get("loss") if isinstance(returned, dict) else returned
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
        raise ValueError("%s returned %s, not a loss tensor to export" % (call, type(returned).__name__))
    return loss if loss.dim() == 0 else loss.reshape(())


# What a framework's step method logs through, silenced on the exported view: its logger must not
# receive the fake tensors the export runs on (Lightning's self.log would keep them as metrics).
_LOGGING_METHODS = ("log", "log_dict")


def step_view(model, call, inputs):
    """(view, args, kwargs): a view of `model` that shares its parameters, buffers and submodules
    (a shallow copy, as _with_flat_output) whose forward is `call` (Lightning's training_step) on
    the batch rebuilt from forward's arguments, with batch index 0, returning its loss; and the
    arguments to export it with. The step method calls the model itself (self(x)): that inner call
    goes to the model's own forward. A batch that is a tensor is forward's one argument, a list or
    tuple of tensors its positional arguments (batch_0, batch_1, ...), a dict of tensors its keyword
    arguments by the dict's keys; nanscope's replay feeds the saved batch the same way."""
    if getattr(model, "automatic_optimization", True) is False:
        raise ValueError("%s uses manual optimization: its %s steps the optimizer itself, which an export "
                         "must not run" % (type(model).__name__, call))
    if isinstance(inputs, torch.Tensor):
        names, args, kwargs = ["batch"], (inputs,), {}
        rebuild = lambda values: values[0]  # noqa: E731
    elif isinstance(inputs, (list, tuple)) and inputs and all(isinstance(t, torch.Tensor) for t in inputs):
        names, args, kwargs = ["batch_%d" % i for i in range(len(inputs))], tuple(inputs), {}
        kind = type(inputs) if type(inputs) in (list, tuple) else list
        rebuild = lambda values: kind(values)  # noqa: E731
    elif isinstance(inputs, dict) and inputs and all(isinstance(k, str) and k.isidentifier() and
                                                     isinstance(t, torch.Tensor) for k, t in inputs.items()):
        names, args, kwargs = list(inputs), (), dict(inputs)
        rebuild = lambda values: dict(zip(names, values))  # noqa: E731
    else:
        raise ValueError("the batch is a %s; an exported %s takes a tensor, a list or tuple of tensors, or a dict "
                         "of tensors by name" % (type(inputs).__name__, call))
    view = copy.copy(model)
    own_forward = type(model).forward
    step = getattr(type(model), call)
    inside = []

    def step_forward(*values, **named):
        if inside:  # the step method calling the model: its own forward
            return own_forward(view, *values, **named)
        inside.append(True)
        try:
            values = list(values) + [named[name] for name in names[len(values):]]
            return _loss_returned(step(view, rebuild(values), 0), call)
        finally:
            inside.pop()

    # torch.export names the graph's inputs after forward's signature.
    step_forward.__signature__ = inspect.Signature(
        [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in names])
    object.__setattr__(view, "forward", step_forward)
    for method in _LOGGING_METHODS:
        if callable(getattr(model, method, None)):
            object.__setattr__(view, method, lambda *a, **k: None)
    return view, args, kwargs

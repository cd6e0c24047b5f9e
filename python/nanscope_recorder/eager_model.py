"""The model an eager replay runs (eager_replay.py): rebuilt in this process by the factory the
recorder named (model_factory.py writes the "module:callable" spec, load_factory reads it), then
loaded with the checkpoint's state_dict, which must fit it name for name and shape for shape."""
import importlib
import inspect
import importlib.util
import os
import sys

import torch

# The precisions --dtype casts a replay to (what-ifs); "recorded" keeps the checkpoint's own.
REPLAY_DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
                 "bfloat16": torch.bfloat16}


class EagerReplayError(Exception):
    """A clear, one-line reason the replay could not run."""


def load_factory(spec, paths=()):
    """The callable `spec` names: "package.module:name" (a function or a class called with no
    arguments), or "/path/to/script.py:name" for one defined in a training script. A script is
    imported under its own name, not as __main__, so its training must sit under
    ``if __name__ == "__main__":`` (as multiprocessing's spawn requires)."""
    module_name, sep, attribute = spec.rpartition(":")
    if not sep or not module_name or not attribute:
        raise EagerReplayError("model factory '%s' is not 'module:callable' (e.g. mypkg.models:build)" % spec)
    for path in reversed([p for p in paths if p]):
        if path not in sys.path:
            sys.path.insert(0, path)
    try:
        if module_name.endswith(".py"):
            if not os.path.isfile(module_name):
                raise EagerReplayError("model factory '%s': %s does not exist" % (spec, module_name))
            name = "nanscope_user_" + os.path.splitext(os.path.basename(module_name))[0]
            loader_spec = importlib.util.spec_from_file_location(name, module_name)
            module = importlib.util.module_from_spec(loader_spec)
            sys.modules[name] = module
            loader_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
    except EagerReplayError:
        raise
    except Exception as error:  # noqa: BLE001 - the user's module failed to import: say how
        raise EagerReplayError("model factory '%s': importing %s failed (%s: %s); sys.path: %s"
                               % (spec, module_name, type(error).__name__, first_line(error),
                                  os.pathsep.join(sys.path[:4]))) from None
    target = module
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise EagerReplayError("model factory '%s': %s has no '%s'" % (spec, module_name, attribute))
        target = getattr(target, part)
    if not callable(target):
        raise EagerReplayError("model factory '%s' is a %s, not a callable" % (spec, type(target).__name__))
    return target


def _takes_run_dir(factory):
    try:
        return "run_dir" in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False


def build_model(spec, paths=(), run_dir=None):
    """The model `spec` builds: called with no arguments, or with run_dir= (the run directory the
    checkpoint belongs to) when it takes that keyword, as a factory that rebuilds the model from
    what the recorder saved in the run (nanscope_recorder.hf.rebuild) does."""
    factory = load_factory(spec, paths)
    try:
        model = factory(run_dir=run_dir) if run_dir is not None and _takes_run_dir(factory) else factory()
    except Exception as error:  # noqa: BLE001
        raise EagerReplayError("model factory '%s' failed (%s: %s)"
                               % (spec, type(error).__name__, first_line(error))) from None
    if not isinstance(model, torch.nn.Module):
        raise EagerReplayError("model factory '%s' returned a %s, not a torch.nn.Module"
                               % (spec, type(model).__name__))
    return model


def load_checkpoint(model, path, spec):
    """Loads the checkpoint's weights into `model`; returns what the file held: "exported",
    "torchscript" or "state_dict"."""
    if path.endswith(".pt2"):
        # A torch.export archive (--eager on an exported checkpoint): its weights, by the module's names.
        try:
            program = torch.export.load(path)
        except Exception as error:  # noqa: BLE001
            raise EagerReplayError("%s: not a torch.export archive torch.export.load can read (%s)"
                                   % (path, first_line(error))) from None
        state = {name: value for name, value in program.state_dict.items()}
        own = set(model.state_dict())
        state.update({name: value for name, value in program.constants.items()
                      if name in own and isinstance(value, torch.Tensor)})
        model.load_state_dict(state, strict=True)
        return "exported"
    held = "state_dict"
    try:
        state = torch.load(path, map_location="cpu")
    except Exception as error:  # noqa: BLE001
        # A TorchScript checkpoint replayed eagerly (--eager, a check of the TorchScript replay):
        # its state_dict, by its own names.
        try:
            state, held = dict(torch.jit.load(path, map_location="cpu").state_dict()), "torchscript"
        except Exception:  # noqa: BLE001
            raise EagerReplayError("%s: not a state_dict torch.load can read (%s)"
                                   % (path, first_line(error))) from None
    if isinstance(state, torch.jit.ScriptModule):  # torch.load hands a TorchScript archive to torch.jit.load
        state, held = dict(state.state_dict()), "torchscript"
    if isinstance(state, dict) and "state_dict" in state and isinstance(state["state_dict"], dict):
        state = state["state_dict"]
    if not isinstance(state, dict):
        raise EagerReplayError("%s holds a %s, not a state_dict" % (path, type(state).__name__))
    own = model.state_dict()
    missing = [k for k in own if k not in state]
    unexpected = [k for k in state if k not in own]
    wrong = ["%s (checkpoint %s, model %s)" % (k, tuple(state[k].shape), tuple(own[k].shape))
             for k in own if k in state and isinstance(state[k], torch.Tensor) and state[k].shape != own[k].shape]
    if missing or unexpected or wrong:
        parts = []
        for label, names in (("missing", missing), ("unexpected", unexpected), ("of another shape", wrong)):
            if names:
                parts.append("%d %s: %s%s" % (len(names), label, ", ".join(names[:4]), ", ..." if len(names) > 4 else ""))
        raise EagerReplayError("%s does not fit the model that %s builds: %s" % (path, spec, "; ".join(parts)))
    model.load_state_dict(state, strict=True)
    return held


def first_line(error):
    """The first line of an exception's message (its type when it has none)."""
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def main_dtype_name(model):
    """The dtype most of the model's floating parameters hold, by element count ("float16")."""
    counts = {}
    for p in model.parameters():
        if p.is_floating_point():
            counts[p.dtype] = counts.get(p.dtype, 0) + p.numel()
    main = max(counts, key=counts.get) if counts else torch.float32
    return next((name for name, value in REPLAY_DTYPES.items() if value == main), "float32")

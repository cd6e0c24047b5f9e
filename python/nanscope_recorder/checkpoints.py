"""Checkpoints and batches as the run directory contract names them (step_%08d.pt)."""
import contextlib
import copy
import dataclasses
import inspect
import json
import os
import warnings
import zipfile

import torch

from .export_program import (NotReplayableExport, batch_dims, export_arguments, ops_the_replay_lacks,
                             positional_inputs, signature_of, step_view)
from .run_format import CHECKPOINT_FORMS, STEP_FILE, checkpoint_form_text, step_file_stem


def step_file_name(step):
    return step_file_stem(step) + ".pt"


def exported_file_name(step):
    """A torch.export archive's name: step_N.pt2, as torch.export.save names its archives."""
    return step_file_stem(step) + ".pt2"


def remove_step_files(directory):
    """Removes the checkpoints and batches a recorder wrote into `directory` (a run written again
    with overwrite=True: another run's step files would mislead)."""
    if os.path.isdir(directory):
        for name in os.listdir(directory):
            if STEP_FILE.fullmatch(name):
                os.remove(os.path.join(directory, name))


def _save_atomically(save, path):
    # A process killed while saving leaves no half-written file under the contract's name.
    tmp = path + ".partial"
    try:
        save(tmp)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    os.replace(tmp, path)


# Which form a checkpoint was saved in: checkpoints/step_N.form beside it (docs/run-format.md).
# Its first line is one of these words (run_format.json); the line after it says why the forms
# tried before it failed (export, then TorchScript), and for a state_dict what would make it
# replayable. nanscope reads it (core/run/CheckpointForm) to tell which steps replay and why the
# others cannot.
SCRIPTED, TRACED, STATE_DICT, EXPORTED = CHECKPOINT_FORMS


def form_file_name(step):
    return step_file_stem(step) + ".form"


def _write_text(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def _error_line(error):
    first_line = (str(error).strip().splitlines() or [type(error).__name__])[0]
    return "%s: %s" % (type(error).__name__, first_line)


# What TorchScript says when a class failed to compile earlier in the process: the failed
# attempt left the class half defined in its compilation unit, and the real reason is not repeated.
_REDEFINED = "Can't redefine method"


def _script_again(model):
    """Scripts a shallow copy of `model` whose class is a fresh subclass of the model's, so that
    TorchScript compiles it from the source again (and says the real reason when it fails). The
    copy shares the model's parameter and buffer tensors; the model itself is not touched."""
    cls = type(model)
    fresh = type(cls.__name__, (cls,), {"__module__": cls.__module__,
                                        "__qualname__": "%s_nanscope_%d" % (cls.__qualname__, id(model))})
    view = copy.copy(model)
    view.__class__ = fresh
    return torch.jit.script(view)


def _flat_tensors(output):
    """forward's output as tensors only, in its own order: a dict's or a dataclass's tensor
    entries (Hugging Face's ModelOutput puts the loss first when there is one), a tuple's or a
    list's, a tensor alone; None and other values are left out."""
    if isinstance(output, torch.Tensor):
        return (output,)
    if dataclasses.is_dataclass(output) and not isinstance(output, type):
        output = {f.name: getattr(output, f.name) for f in dataclasses.fields(output)}
    if isinstance(output, dict):
        output = list(output.values())
    if isinstance(output, (list, tuple)):
        return tuple(t for value in output for t in _flat_tensors(value))
    return ()


def _needs_flattening(output):
    return not (isinstance(output, torch.Tensor) or
                (isinstance(output, tuple) and all(isinstance(t, torch.Tensor) for t in output)))


def _with_flat_output(model):
    """A view of `model` that shares every parameter, buffer and submodule with it (a shallow copy:
    the same tensors, names and module tree) and whose forward returns _flat_tensors of the model's
    forward: what a trace can record when forward returns a dataclass or a dict holding non-tensors."""
    view = copy.copy(model)
    forward = type(model).forward

    def flat_forward(*args):
        output = forward(view, *args)
        tensors = _flat_tensors(output)
        if not tensors:
            raise ValueError("forward returned no tensor (a %s): nothing to trace" % type(output).__name__)
        return tensors

    object.__setattr__(view, "forward", flat_forward)
    return view


@contextlib.contextmanager
def _training_state_kept(model):
    """Puts the model's buffers and the random number generators back as they were: an export or a
    trace must leave training as if it had not run (a trace's forward updates BatchNorm's statistics
    and draws dropout masks)."""
    buffers = [(b, b.detach().clone()) for b in model.buffers()]
    rng = torch.random.get_rng_state()
    cuda_rng = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    try:
        yield
    finally:
        with torch.no_grad():
            for live, saved in buffers:
                live.copy_(saved)
        torch.random.set_rng_state(rng)
        if cuda_rng is not None:
            torch.cuda.set_rng_state_all(cuda_rng)


class Checkpointer:
    """Saves the model as a torch.export archive (step_N.pt2) when it exports, else as TorchScript
    when it scripts, else traced on the step's own batch, else its state_dict; each checkpoint's form
    goes into step_N.form beside it. torch.export first: TorchScript is deprecated since torch 2.11,
    and an exported program is data that nanscope replays without running code from the file.

    The model is exported once per batch signature and mode, as it is traced: the ExportedProgram
    holds the model's own parameter and buffer tensors (its state_dict shares them), so a later
    save writes the current weights. Export traces with fake tensors: it changes no weight, buffer
    or random state (put back afterwards all the same, as for a trace).

    The model is scripted once. torch.jit.script shares the model's parameter and buffer tensors,
    so a later save writes the current weights without scripting again; tensors the model replaced
    since then are copied over first. A traced module shares them too; it is traced again only
    when the batch's shapes or dtypes or the model's mode change (a trace records what it saw).
    Tracing runs a forward pass, so BatchNorm buffers and the random number generators are put
    back afterwards: training goes on as if no trace had run (the model's own forward hooks do
    see that pass). The recorder's hooks must not be on the model while it is
    scripted or traced (scripting compiles forward hooks and fails on them): the recorder only
    attaches its hooks between begin_step and end_step of the steps that log activations, and
    checkpoints are saved outside that window.
    """

    def __init__(self, model, directory, form=None, call=None):
        """form: None (export, else script, else trace, else state_dict); "torchscript" (script,
        else trace, else state_dict: no export); ("state_dict", why): state_dicts only, `why` saying
        how they replay; or ("exported", why): an exported program when the model exports, else a
        state_dict saying `why` (a framework's model that its factory rebuilds; the Recorder's
        checkpoint_form). call: the model's method that computes the loss from the batch when it is
        not forward (Lightning's training_step): what is exported is that method (step_view)."""
        self.model = model
        self.call = call
        self.directory = directory
        self.state_dict_only = None
        self.try_export = True
        self.try_torchscript = True
        if form == "torchscript":
            self.try_export = False
        elif form is not None:
            kind, why = form
            if kind not in (STATE_DICT, EXPORTED):
                raise ValueError("checkpoint_form must be None, 'torchscript', ('%s', why) or ('%s', why), not %r"
                                 % (STATE_DICT, EXPORTED, form))
            self.try_export = kind == EXPORTED
            self.try_torchscript = False
            self.state_dict_why = str(why)
            self.state_dict_only = str(why) if kind == STATE_DICT else None
        self.scripted = None
        self.script_error = None  # why the model did not script; None while untried or scripted
        self.traced = None
        self.trace_error = None  # why the latest trace failed
        self.trace_note = None  # how the latest trace was made, when not plainly
        self._traced_signature = None
        self.exported = None
        # The first archive of the exported program, as (entry name, bytes, or the name of the
        # tensor whose bytes the entry holds): later checkpoints of the same program are that archive
        # with the current tensors' bytes, and the program itself is let go. Holding an
        # ExportedProgram (tens of thousands of Python objects) cost a Trainer step 2-3% (bench_hf_callback).
        self._archive_template = None
        self.export_error = None  # why the latest export failed
        self.export_refused = False  # it exported, to a program the replay cannot run (export_error says why)
        self._exported_signature = None
        self.kind = None  # the form of the latest checkpoint saved: EXPORTED, SCRIPTED, TRACED or STATE_DICT

    def _script(self):
        if self.scripted is not None or self.script_error is not None:
            return
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    scripted = torch.jit.script(self.model)
                except RuntimeError as error:
                    if _REDEFINED not in str(error):
                        raise
                    scripted = _script_again(self.model)
            live = self.model.state_dict(keep_vars=True)
            mine = scripted.state_dict(keep_vars=True)
            if set(live) != set(mine):
                raise RuntimeError("the scripted model's state names differ from the model's")
            self.scripted = scripted
        except Exception as error:  # noqa: BLE001 - any scripting failure means "try tracing"
            self.script_error = _error_line(error)
            if _REDEFINED in self.script_error:
                self.script_error = ("TorchScript failed on class %s earlier in this process (torch.jit.script "
                                     "was called on it before) and does not say why a second time; script the "
                                     "model in a fresh process to read the first error (%s)"
                                     % (type(self.model).__name__, self.script_error))

    def _export(self, inputs):
        """Exports the model on `inputs` unless its program for the same shapes and mode is at hand."""
        try:
            if self.call:
                exported, args, kwargs = step_view(self.model, self.call, inputs)
            else:
                exported, (args, kwargs) = self.model, export_arguments(inputs)
        except ValueError as error:
            self.exported, self.export_error = None, str(error)
            return
        signature = signature_of(args, kwargs) + (self.model.training,)
        # A forward that can return a key-value cache (a transformers model) is exported without one:
        # the cache is no tensor torch.export can return, and a replay of one step has no use for it.
        try:
            takes_cache = "use_cache" in inspect.signature(exported.forward).parameters
        except (TypeError, ValueError):
            takes_cache = False
        if takes_cache and "use_cache" not in kwargs:
            kwargs["use_cache"] = False
        if signature == self._exported_signature:
            return
        self._archive_template = None
        try:
            with _training_state_kept(self.model), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                program = torch.export.export(exported, args, kwargs=kwargs or None,
                                              dynamic_shapes=batch_dims(args, kwargs), strict=False)
            if set(self.model.state_dict()) - set(program.state_dict) - set(program.constants):
                raise RuntimeError("the exported program's state names differ from the model's")
            lacking = ops_the_replay_lacks(program)
            if lacking:
                raise NotReplayableExport(
                    "its program calls %s, which nanscope's replay does not run (it runs LibTorch's own ops, never "
                    "a library's code)" % "; ".join(lacking[:3]))
            self.exported, self._exported_signature, self.export_error = program, signature, None
        except NotReplayableExport as refused:
            self.exported, self._exported_signature, self.export_error = None, signature, str(refused)
            self.export_refused = True
        except Exception as error:  # noqa: BLE001 - any export failure means "try TorchScript"
            self.exported, self._exported_signature, self.export_error = None, signature, _error_line(error)
            self.export_refused = False

    def _trace(self, inputs):
        """Traces the model on `inputs` unless the trace of the same shapes is at hand."""
        try:
            args = positional_inputs(inputs)
        except ValueError as error:
            self.traced, self.trace_error = None, str(error)
            return
        # A trace also bakes in the mode (dropout and BatchNorm in training or evaluation).
        signature = signature_of(args, {}) + (self.model.training,)
        if signature == self._traced_signature:
            return  # traced on these shapes already (or failed on them: no second try)
        try:
            # The trace's forward pass updates BatchNorm statistics and draws random numbers.
            with _training_state_kept(self.model), warnings.catch_warnings(), torch.no_grad():
                warnings.simplefilter("ignore")
                # strict=False: a dict or list output is recorded as it is. A dataclass output
                # (Hugging Face's ModelOutput) or one holding non-tensors cannot be: the model
                # is traced through a view that returns only its tensors (_with_flat_output).
                try:
                    traced = torch.jit.trace(self.model, args, check_trace=False, strict=False)
                    self.trace_note = None
                except Exception:  # noqa: BLE001 - an output the tracer cannot take
                    traced = torch.jit.trace(_with_flat_output(self.model), args, check_trace=False, strict=False)
                    self.trace_note = "traced with its output flattened to tensors"
            if set(self.model.state_dict()) != set(traced.state_dict()):
                raise RuntimeError("the traced model's state names differ from the model's")
            self.traced, self._traced_signature, self.trace_error = traced, signature, None
        except Exception as error:  # noqa: BLE001 - any tracing failure means "save a state_dict"
            self.traced, self._traced_signature, self.trace_error = None, signature, _error_line(error)

    def why_not_replayable(self):
        if not self.try_export:
            return ("the model could not be scripted (%s) nor traced (%s); make forward scriptable "
                    "(torch.jit.script(model)) or traceable on a batch (torch.jit.trace(model, inputs)) "
                    "to make its checkpoints replayable" % (self.script_error, self.trace_error))
        return ("the model could not be exported (%s), scripted (%s) nor traced (%s); make forward exportable "
                "(torch.export.export(model, inputs, strict=False)) or scriptable (torch.jit.script(model)) to "
                "make its checkpoints replayable" % (self.export_error, self.script_error, self.trace_error))

    def _why_state_dict(self):
        if self.state_dict_only is not None:
            return self.state_dict_only
        if not self.try_torchscript:  # ("exported", why): the export failed
            return "%s; %s" % (self.why_not_exported(), self.state_dict_why)
        return self.why_not_replayable()

    def why_not_exported(self):
        if not self.export_error:
            return None
        if self.export_refused:
            return "not exported: %s" % self.export_error
        return "not exported: torch.export failed (%s)" % self.export_error

    def save(self, step, overrides=None, inputs=None):
        """Writes checkpoints/step_N.pt (and step_N.form) from the model's current state, with
        `overrides` (state name -> tensor, e.g. pre-forward BatchNorm buffers) in place of live
        tensors. `inputs`: the step's batch, traced on when the model does not script. Returns
        the path."""
        os.makedirs(self.directory, exist_ok=True)
        path = os.path.join(self.directory, step_file_name(step))
        overrides = overrides or {}
        module = None
        if self.try_export:
            self._export(inputs)
            exported_path = os.path.join(self.directory, exported_file_name(step))
            if self._archive_template is not None:
                self._write_form(step, EXPORTED)
                _save_atomically(lambda p: self._write_from_template(p, overrides), exported_path)
                return exported_path
            if self.exported is not None:
                try:
                    self._save_exported(step, overrides, exported_path)
                    self._archive_template = self._template_of(exported_path, overrides)
                    if self._archive_template is not None:
                        self.exported = None
                    return exported_path
                except Exception as error:  # noqa: BLE001 - a program that does not serialize
                    self.exported, self.export_error = None, "saving the program failed: " + _error_line(error)
        if self.try_torchscript:
            self._script()
            module = self.scripted
            if module is None:
                self._trace(inputs)
                module = self.traced
        if module is not None:
            try:
                self._save_module(step, module, overrides, path)
                return path
            except Exception as error:  # noqa: BLE001
                if module is not self.traced:
                    raise
                # A trace can hold what TorchScript cannot save (a Python autograd.Function).
                self.traced, self.trace_error = None, "saving the trace failed: " + _error_line(error)
        # The form first: a checkpoint a reader finds without its form reads as replayable.
        self._write_form(step, STATE_DICT, self._why_state_dict())
        state = self.model.state_dict()
        for name, tensor in overrides.items():
            state[name] = tensor
        _save_atomically(lambda p: torch.save(state, p), path)
        return path

    def _save_exported(self, step, overrides, path):
        """Saves the exported program holding `overrides` in place of the live values (its
        state_dict and constants are the model's own tensors), putting every value back after."""
        self._write_form(step, EXPORTED)
        program = self.exported
        state = dict(program.state_dict)
        state.update({name: value for name, value in program.constants.items() if isinstance(value, torch.Tensor)})
        live = self.model.state_dict(keep_vars=True)
        self._write_in_place(state, live, overrides, lambda: _save_atomically(
            lambda p: _save_program(program, p), path))

    def _live_tensors(self):
        tensors = dict(self.model.named_buffers())  # non-persistent buffers too: an archive's constants
        tensors.update(self.model.state_dict(keep_vars=True))
        return tensors

    def _template_of(self, path, overrides):
        """The archive just written, as a template: every weight and constant entry tied to the live
        tensor it holds, when each is a whole contiguous storage whose bytes the entry holds exactly
        (what torch.export.save writes for a plain parameter); None otherwise (a view into a larger
        storage, a tied weight): the program is kept and saved again instead."""
        live = self._live_tensors()
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            root = names[0].split("/")[0]
            tensor_of = {}
            for folder in ("weights", "constants"):
                configs = [n for n in names if n.startswith("%s/data/%s/" % (root, folder)) and n.endswith("_config.json")]
                for config in configs:
                    for name, entry in json.loads(archive.read(config))["config"].items():
                        tensor_of["%s/data/%s/%s" % (root, folder, entry["path_name"])] = name
            template = []
            for info in archive.infolist():
                name = tensor_of.get(info.filename)
                if name is None:
                    template.append((info.filename, archive.read(info.filename)))
                    continue
                tensor = overrides.get(name, live.get(name))
                if (tensor is None or not tensor.is_contiguous() or tensor.storage_offset() != 0
                        or tensor.untyped_storage().nbytes() != tensor.numel() * tensor.element_size()
                        or info.file_size != tensor.numel() * tensor.element_size()):
                    return None
                template.append((info.filename, name))
        return template

    def _write_from_template(self, path, overrides):
        """The program's archive again, each tensor entry holding the current (or overriding) bytes."""
        live = self._live_tensors()
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
            for entry, content in self._archive_template:
                if isinstance(content, str):
                    tensor = overrides.get(content, live[content]).detach().cpu()
                    content = tensor.reshape(-1).view(torch.uint8).numpy().tobytes()
                archive.writestr(entry, content)

    def _write_in_place(self, target, live, overrides, save):
        """Copies the live (or overriding) values into `target`'s tensors where they differ, runs
        `save`, and puts every value it changed back, bit for bit (see _save_module)."""
        with torch.no_grad():
            writes = []
            for name, dst in target.items():
                src = overrides.get(name, live.get(name))
                if src is None or (name not in overrides and _same_values_in_place(dst, src)):
                    continue
                writes.append((dst, src))
            backups = [(dst, dst.detach().clone()) for dst, _ in writes]
            try:
                for dst, src in writes:
                    dst.copy_(src)
                save()
            finally:
                for dst, original in reversed(backups):
                    dst.copy_(original)

    def _save_module(self, step, module, overrides, path):
        """Saves `module` (scripted or traced: it shares its tensors with the live model) holding
        `overrides` in place of the live values, and puts every value it changed back, bit for bit.

        Every tensor a write touches is copied before the first write: a tied weight (GPT-2's
        lm_head.weight is wte.weight) or a view of another parameter appears under several names
        of the state_dict, and a copy taken after the first of them was written would restore the
        old value into the live model."""
        # The form's second line: why it is not an exported program, and how a trace was made.
        notes = [note for note in (self.why_not_exported(), None if module is self.scripted else self.trace_note) if note]
        self._write_form(step, SCRIPTED if module is self.scripted else TRACED, "; ".join(notes) or None)
        live = self.model.state_dict(keep_vars=True)
        target = module.state_dict(keep_vars=True)

        def save():
            module.train(self.model.training)
            _save_atomically(module.save, path)
        self._write_in_place(target, live, overrides, save)

    def _write_form(self, step, kind, why=None):
        self.kind = kind
        text = checkpoint_form_text(kind, why)
        _save_atomically(lambda p: _write_text(p, text), os.path.join(self.directory, form_file_name(step)))


def _save_program(program, path):
    """torch.export.save into `path` (step_N.pt2.partial) through an open file: given the name, torch
    warns on the user's console that it does not end in .pt2."""
    with open(path, "wb") as f:
        torch.export.save(program, f)


def _same_values_in_place(a, b):
    """True when `a` and `b` are the same memory (the same tensor, or views with equal layout)."""
    return (a is b) or (a.device == b.device and a.data_ptr() == b.data_ptr() and a.shape == b.shape
                        and a.stride() == b.stride() and a.dtype == b.dtype)


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


def save_batch(directory, step, inputs, targets=None, loss_name=None, call=None):
    """Writes batches/step_N.pt: {"inputs", "targets", "loss", "step"} as the contract lists them,
    and "call" when the loss came from a method of the model other than forward (Lightning's
    training_step), which eager replay then calls with the inputs."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, step_file_name(step))
    batch = {"inputs": _cpu(inputs), "step": int(step)}
    if targets is not None:
        batch["targets"] = _cpu(targets)
    if loss_name:
        batch["loss"] = loss_name
    if call:
        batch["call"] = call
    _save_atomically(lambda p: torch.save(batch, p), path)
    return path

"""The run directory contract's shared names (docs/run-format.md), from the one table both recorders
read: run_format.json beside this file, which the C++ build compiles in (cmake/RunFormatTable.cmake).
tests/python/test_run_format_table.py fails where the two recorders write different names."""
import json
import numbers
import os
import re

_TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "run_format.json")

with open(_TABLE, encoding="utf-8") as _file:
    TABLE = {k: v for k, v in json.load(_file).items() if not k.startswith("_")}

STEP_FILE_PREFIX = TABLE["step_file_prefix"]
STEP_FILE_DIGITS = int(TABLE["step_file_digits"])
# A step file the recorder wrote, finished or not: step_00000042.pt, .safetensors, .form (+ .partial).
STEP_FILE = re.compile(r"%s\d{%d,}\.(pt|pt2|safetensors|form)(\.partial)?" % (re.escape(STEP_FILE_PREFIX), STEP_FILE_DIGITS))

COLUMNS = {table: tuple(columns) for table, columns in TABLE["columns"].items()}
EVENT_KINDS = tuple(TABLE["event_kinds"])
# The /scalars columns both recorders compute, first and in this order (the learning rate and the
# user's scalars follow).
RECORDER_SCALARS = tuple(TABLE["recorder_scalars"])
OPTIMIZER_SCALARS = tuple(TABLE["optimizer_scalars"])
RECORDER_DEFAULTS = dict(TABLE["recorder_defaults"])
# The first word of a checkpoint's form file (step_N.form): scripted, traced, state_dict.
CHECKPOINT_FORMS = tuple(TABLE["checkpoint_forms"])
# What the native replay of an exported program runs: ops of these namespaces, and these
# higher-order ops (torch.ops.higher_order.<name>); the recorder exports nothing else.
EXPORT_REPLAY_OP_NAMESPACES = frozenset(TABLE["exported_program_replay"]["op_namespaces"])
EXPORT_REPLAY_HIGHER_ORDER_OPS = frozenset(TABLE["exported_program_replay"]["higher_order_ops"])
# The /events messages both recorders write, with {field}s to fill (event_text).
EVENT_TEXTS = dict(TABLE["event_texts"])
_FIELD = re.compile(r"\{(\w+)\}")


def step_file_stem(step):
    """"step_00000042" for step 42: the stem of a checkpoint or batch file."""
    return "%s%0*d" % (STEP_FILE_PREFIX, STEP_FILE_DIGITS, step)


def event_kind(kind):
    """kind, checked against the table: an event kind the readers do not know is a bug here."""
    if kind not in EVENT_KINDS:
        raise ValueError("%r is not an event kind of the run format (run_format.json)" % kind)
    return kind


def checkpoint_form_text(kind, why=None):
    """The text of a checkpoint's form file, as core/run/CheckpointForm reads it and the C++ Guard
    writes it (tests/data/checkpoint_form_cases.json holds both writers to the same bytes): the
    kind's word, then the reason on one line when there is one."""
    if kind not in CHECKPOINT_FORMS:
        raise ValueError("%r is not a checkpoint form of the run format (run_format.json)" % kind)
    reason = (why or "").replace("\n", " ").replace("\r", " ").replace("\t", " ").strip(" ")
    return kind + "\n" + (reason + "\n" if reason else "")


def _field_text(value):
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral):
        return "%g" % value
    if isinstance(value, tuple) and len(value) == 2:
        return "%s -> %s" % (_field_text(value[0]), _field_text(value[1]))
    if isinstance(value, list):
        return ", ".join(_field_text(item) for item in value)
    return str(value)


def event_text(name, **fields):
    """The /events message `name` of the table (run_format.json, "event_texts") with its fields
    filled in as the C++ Guard fills them (core/record/EventText.cpp): floats as %g, lists joined
    by ", ", a (before, after) pair as "before -> after". A field the template does not name, or a
    name without a field, is a bug here."""
    template = EVENT_TEXTS[name]
    names = set(_FIELD.findall(template))
    if names != set(fields):
        raise ValueError("event text %r takes the fields %s, not %s" % (name, sorted(names), sorted(fields)))
    return _FIELD.sub(lambda match: _field_text(fields[match.group(1)]), template)


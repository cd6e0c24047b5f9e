"""run.h5 in SWMR write mode: the tables of the run directory contract (docs/run-format.md).

SWMR allows no new groups or datasets once a reader may be following the file, so the whole
schema is fixed when the file is created; rows are then appended by resize + write and flushed
after each step, which is what lets a killed training process leave every flushed row readable.
"""
import datetime
import os

import h5py
from h5py import h5s
import numpy as np

from .host_stats import BUFFER_FIELDS, LOGGED_RANGE_FIELDS, buffers_row, ranges_row
from .run_format import COLUMNS

FORMAT_NAME = "training-run"
FORMAT_VERSION = 1
LOG_FILE_NAME = "run.h5"

# 128 rows x 32 columns of float32 (16 KiB): reading one column's series and reading one step's
# row both touch few chunks. The same shape as the C++ RunWriter uses.
ROW_CHUNK = 128
COLUMN_CHUNK = 32
SERIES_CHUNK = 1024
EVENT_CHUNK = 64

STRING = h5py.string_dtype()

# The columns of each table, from the table the C++ recorder compiles in (run_format.json).
ACTIVATION_COLUMNS = COLUMNS["activations"]
INPUT_COLUMNS = COLUMNS["inputs"]
BUFFER_COLUMNS = COLUMNS["buffers"]
LAYER_COLUMNS = COLUMNS["layers"]
if not (ACTIVATION_COLUMNS == INPUT_COLUMNS == LOGGED_RANGE_FIELDS and BUFFER_COLUMNS == BUFFER_FIELDS):
    raise ImportError("run_format.json's /activations, /inputs and /buffers columns (%s, %s, %s) are not the figures "
                      "host_stats computes (%s, %s)" % (ACTIVATION_COLUMNS, INPUT_COLUMNS, BUFFER_COLUMNS,
                                                        LOGGED_RANGE_FIELDS, BUFFER_FIELDS))


def check_schema(scalars):
    if "loss" not in scalars:
        raise ValueError("the scalars must include 'loss'")


class _Table:
    """One group: a `steps` dataset and datasets sharing its row axis."""

    def __init__(self, group, columns, width, dtype):
        self.rows = 0
        self.width = width
        # fletcher32: a checksum per chunk, so that a damaged file is reported as damaged by nanscope
        # instead of plotted as training behaviour.
        self.steps = group.create_dataset("steps", shape=(0,), maxshape=(None,), dtype=np.int64,
                                          chunks=(SERIES_CHUNK,), fletcher32=True)
        self.columns = {}
        for name in columns:
            if width is None:
                shape, maxshape, chunks = (0,), (None,), (SERIES_CHUNK,)
            else:
                shape, maxshape = (0, width), (None, width)
                chunks = (ROW_CHUNK, max(1, min(width, COLUMN_CHUNK)))
            self.columns[name] = group.create_dataset(name, shape=shape, maxshape=maxshape, dtype=dtype,
                                                      chunks=chunks, fletcher32=True)
        self.dtype = dtype
        self._row_space = h5s.create_simple((1,) if width is None else (1, width))
        self._step_space = h5s.create_simple((1,))

    def append(self, step, values):
        """values: column name -> scalar (series table) or 1-D array of `width` (matrix table)."""
        # h5py's low-level calls: the high-level resize + __setitem__ costs ~8x more per row.
        n = self.rows + 1
        for name, dset in self.columns.items():
            row = np.ascontiguousarray(values[name], dtype=self.dtype)
            if self.width is None:
                _write_row(dset.id, (n,), (self.rows,), (1,), self._row_space, row.reshape(1))
            else:
                _write_row(dset.id, (n, self.width), (self.rows, 0), (1, self.width), self._row_space,
                           row.reshape(1, self.width))
        # steps last: a reader that sees the step also sees its values.
        _write_row(self.steps.id, (n,), (self.rows,), (1,), self._step_space, np.array([step], dtype=np.int64))
        self.rows = n

    def append_ranges(self, step, parts_per_label):
        """/activations and /inputs: each label's range vectors (its calls), merged into its row."""
        self.append(step, ranges_row(parts_per_label))

    def append_buffers(self, step, parts_per_layer):
        """/buffers: each layer's buffer figures."""
        self.append(step, buffers_row(parts_per_layer))


def _write_row(dataset_id, extent, start, count, memory_space, data):
    dataset_id.set_extent(extent)
    file_space = dataset_id.get_space()
    file_space.select_hyperslab(start, count)
    dataset_id.write(memory_space, file_space, data)


class RunFile:
    """Writes run.h5. `schema` fixes every table before SWMR mode starts:
    scalars: list of names (must hold "loss"); layers, activations (with kinds), buffers,
    inputs: lists of column names, empty or None for no table; events: bool; layer_columns: /layers
    datasets beyond LAYER_COLUMNS (a distributed rank's local_grad_norm)."""

    def __init__(self, path, attributes, scalars, layers=None, activations=None, activation_kinds=None,
                 buffers=None, inputs=None, events=True, layer_columns=()):
        check_schema(scalars)
        self.path = path
        # The file format of HDF5 1.10, whatever HDF5 h5py brings: "latest" under h5py 3.16's HDF5 2.0
        # writes object headers that HDF5 1.10 (Debian 12's, which nanscope reads with) refuses
        # ("bad version number for layout message"). 1.10's format has everything SWMR needs.
        self._file = h5py.File(path, "w", libver=("v110", "v110"))
        f = self._file
        f.attrs["format"] = FORMAT_NAME
        f.attrs["format_version"] = np.int64(FORMAT_VERSION)
        f.attrs["created_utc"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        for key, value in attributes.items():
            if value is not None:
                f.attrs[key] = str(value)

        self.scalars = _Table(f.create_group("scalars"), list(scalars), None, np.float64)
        self.layers = self._matrix("layers", layers, LAYER_COLUMNS + tuple(layer_columns))
        self.activations = self._matrix("activations", activations, ACTIVATION_COLUMNS, kinds=activation_kinds)
        self.buffers = self._matrix("buffers", buffers, BUFFER_COLUMNS)
        self.inputs = self._matrix("inputs", inputs, INPUT_COLUMNS)
        self.events = None
        if events:
            group = f.create_group("events")
            self.events = _Table(group, [], None, None)
            kind, message = COLUMNS["events"]
            self._event_kind = group.create_dataset(kind, shape=(0,), maxshape=(None,), dtype=STRING,
                                                    chunks=(EVENT_CHUNK,))
            self._event_message = group.create_dataset(message, shape=(0,), maxshape=(None,), dtype=STRING,
                                                       chunks=(EVENT_CHUNK,))
        f.swmr_mode = True
        f.flush()

    def _matrix(self, name, labels, columns, kinds=None):
        if not labels:
            return None
        group = self._file.create_group(name)
        group.create_dataset("names", data=list(labels), dtype=STRING)
        if kinds is not None:
            group.create_dataset("kinds", data=list(kinds), dtype=STRING)
        return _Table(group, columns, len(labels), np.float32)

    def append_event(self, step, kind, message):
        n = self.events.rows + 1
        for dset, value in ((self._event_kind, kind), (self._event_message, message)):
            dset.resize((n,))
            dset[n - 1] = value
        self.events.steps.resize((n,))
        self.events.steps[n - 1] = step
        self.events.rows = n

    def flush(self):
        self._file.flush()

    def sync(self):
        """Everything appended so far is in the file (run_file_child's interface; here a flush)."""
        self._file.flush()

    def close(self):
        if self._file is not None and self._file.id.valid:
            self._file.flush()
            self._file.close()
        self._file = None


def log_path(run_dir):
    return os.path.join(run_dir, LOG_FILE_NAME)

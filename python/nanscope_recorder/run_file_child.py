"""run.h5 written by a child process: the Python recorder's counterpart of the C++ Guard's writer
thread (core/run/RunWriterThread).

Why a process: run.h5's appends and the flush after each step cost the recorder about 1 ms of a
30 ms step (bench_guard's MLP), a third of its overhead. A writer thread does not help: h5py holds
the GIL through each call, so the training thread waits for it all the same (bench/bench_guard.cpp
records that trial). Here the training process hands each step's rows to a child in one pipe write
(pickled, a few tens of microseconds); the child appends them with RunFile, the one codec of
run.h5, and flushes after each step as the contract says.

What the training loop can count on:

- Order: rows and events reach run.h5 in the order they were given.
- Bounded memory: a pipe holds 64 KiB; when the disk is slow, the training step waits for the
  child rather than queueing rows without end.
- sync() returns once everything given so far is in run.h5 and flushed (the recorder calls it at a
  non-finite or captured step, at note() and at Recorder.flush()).
- A training process killed mid-run: the child reads to the end of the pipe, writes every row it
  was given and closes run.h5 (an in-process writer leaves the rows of its last flush).
- A failed write (a full disk): raised as OSError, naming run.h5, by a later call (within 16
  steps, or the next sync or close); nothing after it is written.
- The child runs in a session of its own, so a Ctrl-C in the terminal stops training but not the
  child, which then writes what it was given and exits at close. A Ctrl-C (or a signal handler
  that raises) while a full pipe makes a write wait is raised once the step's message is out
  whole; the child never reads half a message.
- close() tells the child to finish rather than waiting for the end of the pipe, which a process
  forked later (a DataLoader's workers) holds open too; such a forked copy cannot write.
- The child imports h5py and numpy, never torch, and none of the training script's modules.
- The range statistics of CPU tensors (inputs, module outputs) and the normalisation layers'
  running statistics are computed by the child: the training process copies the values into
  16 MiB of shared memory (value_ring) and the child, on another core, measures them with the
  same code the training process would (host_stats). When the ring has no room the training
  process measures them itself; the figures are the same either way.

Where no child can start (an interpreter that is not a plain python, a frozen application), the
recorder writes in process (RunFile) and says so once.
"""
import json
import os
import pickle
import select
import struct
import subprocess
import sys

import numpy as np

from .host_stats import buffers_row, flat_buffer_figures, range_figures, ranges_row
from .run_file import (ACTIVATION_COLUMNS, BUFFER_COLUMNS, INPUT_COLUMNS, LAYER_COLUMNS, RunFile,
                       check_schema)
from .value_ring import Staged, StagedBuffers, ValueRing, ValueRingReader

_HEADER = struct.Struct("<Q")
# flush() looks for the child's error replies every this many calls (each look is a system call;
# sync() and close() always look).
_REPLY_CHECK_EVERY = 16
# The buffer a step's message is copied into before it is written (see _write_whole); a larger
# message (a model of tens of thousands of layers) is written straight through, and a signal in
# the middle of it can still cut it.
_PIPE_BUFFER = 1 << 20
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
# The child's first lines: load this package's run_file without its __init__ (which imports torch),
# whatever else sys.path holds, then serve the pipe.
_BOOT = """
import sys, types
package = types.ModuleType("nanscope_recorder")
package.__path__ = [sys.argv[1]]
sys.modules["nanscope_recorder"] = package
try:
    from nanscope_recorder.run_file_child import serve
except Exception as error:
    import json
    sys.stdout.write(json.dumps({"unavailable": "%s: %s" % (type(error).__name__, error)}) + "\\n")
    sys.stdout.flush()
    sys.exit(3)
serve()
"""


class ChildUnavailable(RuntimeError):
    """No writer child could start here; the caller writes in process."""


def _interpreter():
    """The Python interpreter to start, or why there is none: a frozen application's executable is
    itself, and an embedding program's may be anything."""
    executable = sys.executable or ""
    if getattr(sys, "frozen", False) or not os.path.basename(executable).startswith("python"):
        return None, "sys.executable (%r) is not a Python interpreter" % executable
    return executable, None


class _QueuedTable:
    """A table's rows, packed as one array of its columns in RunFile's order: a pickled dict of
    per-column arrays costs 30x more (46 us a step on bench_guard's MLP against 1.5 us)."""

    def __init__(self, owner, name, columns, dtype):
        self._owner = owner
        self._name = name
        self._columns = columns
        self._dtype = dtype

    def append(self, step, values):
        """As RunFile's tables: values maps each column to a scalar or a row."""
        packed = np.array([values[c] for c in self._columns], dtype=self._dtype)
        self._owner._queue(("append", self._name, int(step), packed.tobytes()))

    def append_ranges(self, step, parts_per_label):
        """As RunFile's tables; the child measures the parts staged in the value ring."""
        if not any(isinstance(p, Staged) for parts in parts_per_label for p in parts):
            self.append(step, ranges_row(parts_per_label))
            return
        staged = []
        parts = [[_message_part(p, staged) for p in label_parts] for label_parts in parts_per_label]
        self._owner._queue(("ranges", self._name, int(step), parts, staged))

    def append_buffers(self, step, parts_per_layer):
        """As RunFile's tables, or the running statistics staged in the value ring as one array
        (value_ring.StagedBuffers), which the child measures."""
        if isinstance(parts_per_layer, StagedBuffers):
            self._owner._queue(("buffers", self._name, int(step), parts_per_layer.staged.where,
                                parts_per_layer.sizes))
            return
        self.append(step, buffers_row(parts_per_layer))


def _message_part(part, staged):
    """A row part as the step's message carries it: figures as a tuple of floats, values staged in
    the ring as an index into `staged`, the list of their places the message carries beside."""
    if isinstance(part, Staged):
        staged.append(part.where)
        return len(staged) - 1
    return tuple(float(v) for v in part)


class ChildRunFile:
    """RunFile's interface (tables with append, append_event, flush, close) plus sync(); the writing
    is done by a child process. Raises ChildUnavailable when the child cannot start, and RunFile's
    own error (as OSError) when the child cannot create run.h5."""

    def __init__(self, path, attributes, scalars, layers=None, activations=None, activation_kinds=None,
                 buffers=None, inputs=None, events=True, layer_columns=()):
        check_schema(scalars)
        interpreter, why_not = _interpreter()
        if interpreter is None:
            raise ChildUnavailable(why_not)
        self.path = path
        self._owner_pid = os.getpid()
        self._pending = []
        self._replies = b""
        self._error = None
        self._unavailable = None
        self._flushes = 0
        self._syncs_sent = self._syncs_answered = 0
        self._ring_refused = None
        self._committed = 0  # the ring position whose values are all in queued rows (commit_staged)
        # The values whose range statistics the child computes (stage); None: measured in process.
        self._ring = ValueRing.create() if activations or inputs or buffers else None
        try:
            self._proc = subprocess.Popen([interpreter, "-c", _BOOT, _PACKAGE_DIR], stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, start_new_session=True, bufsize=_PIPE_BUFFER,
                                          pass_fds=(self._ring.fd,) if self._ring else ())
        except OSError as error:
            self._close_ring()
            raise ChildUnavailable("%s could not start (%s)" % (interpreter, error)) from error
        ring = None
        if self._ring is not None:
            ring = (self._ring.fd, self._ring.capacity)
            self._ring.close_fd()  # the child has its own copy of the descriptor
        schema = dict(layers=layers, activations=activations, activation_kinds=activation_kinds, buffers=buffers,
                      inputs=inputs, events=events, layer_columns=tuple(layer_columns))
        self._queue(("create", path, dict(attributes), list(scalars), schema, ring))
        try:
            first = self._send_and_wait()
        except BaseException:
            self._proc.kill()  # a Ctrl-C while it starts: no child is left behind
            self._end_child()
            raise
        if first is None or "unavailable" in first:
            status = self._end_child()
            why = first["unavailable"] if first else "it exited with status %s" % status
            raise ChildUnavailable("%s -c (the run.h5 writer) could not start: %s" % (interpreter, why))
        if "error" in first:
            self._end_child()
            raise OSError("nanscope: creating %s failed: %s" % (path, first["error"]))
        if self._ring_refused is not None:
            self._close_ring()  # the child could not map it: every figure is measured in process
        self.scalars = _QueuedTable(self, "scalars", list(scalars), np.float64)
        matrix = lambda name, labels, columns: _QueuedTable(self, name, columns, np.float32) if labels else None  # noqa: E731
        self.layers = matrix("layers", layers, LAYER_COLUMNS + tuple(layer_columns))
        self.activations = matrix("activations", activations, ACTIVATION_COLUMNS)
        self.buffers = matrix("buffers", buffers, BUFFER_COLUMNS)
        self.inputs = matrix("inputs", inputs, INPUT_COLUMNS)
        self.events = True if events else None

    @property
    def writer_pid(self):
        return self._proc.pid

    def stage(self, values):
        """Copies a numpy array of a tensor's values for the child to measure (append_ranges): its
        value_ring.Staged note, or None when the ring has no room (the caller measures it)."""
        ring = self._ring
        return ring.put(values) if ring is not None else None

    def commit_staged(self):
        """Every value staged so far is in a queued row, or in none (a dropped row): from the next
        flush on the child may release their room. Called once a step's rows are all queued; a
        flush in the middle of a step (a checkpoint's, a note's) releases only what was committed
        before, not the step's values still waiting for their row."""
        if self._ring is not None:
            self._committed = self._ring.head

    def append_event(self, step, kind, message):
        self._queue(("event", int(step), kind, message))

    def flush(self):
        """Hands everything given so far to the child, which writes and flushes it; does not wait."""
        self._raise_if_failed()
        self._queue_flush()
        self._send()
        self._flushes += 1
        if self._flushes % _REPLY_CHECK_EVERY == 0:
            self._read_replies(block=False)
            self._raise_if_failed()

    def sync(self):
        """Returns once everything given so far is in run.h5 and flushed."""
        self._raise_if_failed()
        self._queue_flush()
        reply = self._send_and_wait()
        if reply is None:
            self._fail("the run.h5 writer (pid %d) exited with status %s"
                       % (self._proc.pid, self._proc.poll()))
        elif "error" in reply:
            self._fail(reply["error"])
        self._raise_if_failed()

    def close(self):
        """Writes what is left, closes run.h5 and waits for the child."""
        if os.getpid() != self._owner_pid:
            return  # a forked copy (a DataLoader worker): the file is its parent's
        if self._proc.stdin.closed:
            return
        # An explicit close, not the end of the pipe: a process forked from this one after the
        # child started (a DataLoader's workers) holds the pipe open too, and the child would wait.
        self._queue_flush()
        self._queue(("close",))
        status = self._end_child()
        if status != 0 and self._error is None:
            self._error = "the run.h5 writer (pid %d) exited with status %d" % (self._proc.pid, status)
        self._raise_if_failed()

    def _end_child(self):
        """Sends what is queued, closes the pipe, reads the child's last replies and waits for its
        exit; returns its status."""
        proc = self._proc
        try:
            self._send()
        finally:
            try:
                proc.stdin.close()
            except OSError:
                pass  # unsent bytes of a child that is gone: its replies and status say why
            self._read_replies(block=True)
            proc.stdout.close()
            status = proc.wait()  # reaped even when a Ctrl-C is on its way out of _send
            self._close_ring()
        return status

    def _close_ring(self):
        if self._ring is not None:
            self._ring.close()
            self._ring = None

    # ------------------------------------------------------------------------------------- pipe

    def _queue(self, op):
        self._pending.append(op)

    def _queue_flush(self):
        """A flush, with the committed ring position: once the child has handled everything before
        it, the values staged before that position (measured, or left unused by a dropped row) may
        be overwritten."""
        self._queue(("flush", self._committed))

    def _send(self):
        if not self._pending:
            return
        if os.getpid() != self._owner_pid:
            raise RuntimeError("nanscope: the run.h5 writer belongs to process %d; a process forked from it (a "
                               "DataLoader worker) cannot write to it" % self._owner_pid)
        payload = pickle.dumps(self._pending, protocol=pickle.HIGHEST_PROTOCOL)
        self._syncs_sent += sum(1 for op in self._pending if op[0] == "sync")
        self._pending = []
        try:
            self._write_whole(_HEADER.pack(len(payload)) + payload)
        except BrokenPipeError:
            # The child is gone; its last reply or its exit status says why.
            self._read_replies(block=True)
            self._fail("the run.h5 writer (pid %d) exited with status %s" % (self._proc.pid, self._proc.wait()))

    def _write_whole(self, data):
        """Writes all of `data` even when a signal handler raises meanwhile (a Ctrl-C while a full
        pipe makes the write wait): half a message would leave the child reading the middle of
        one as the next one's length, a message written twice would write its rows twice. The
        message is copied into the pipe's buffer (sized for it, so whole or not at all), and the
        buffer's flush counts what reached the pipe in C, before any handler runs: flushing again
        after an interrupt sends exactly the rest. The handler's exception is raised after."""
        stdin = self._proc.stdin
        stdin.write(data)
        interrupted = None
        while True:
            try:
                stdin.flush()
                break
            except BrokenPipeError:
                raise
            except BaseException as error:  # noqa: B902 - re-raised below, after the message
                interrupted = interrupted or error
        if interrupted is not None:
            raise interrupted

    def _send_and_wait(self):
        """Sends the queue and a sync; returns once the child has answered every sync sent so far
        (one left unanswered by an interrupted wait included): {"synced": True}, {"error": ...} or
        {"unavailable": ...}, or None when the child exited first."""
        self._queue(("sync",))
        self._send()
        while self._unavailable is None and self._syncs_answered < self._syncs_sent:
            line = self._next_line(block=True)
            if line is None:
                break
            self._note(line)
        if self._unavailable is not None:
            return {"unavailable": self._unavailable}
        if self._syncs_answered < self._syncs_sent:
            return None
        return {"error": self._error} if self._error else {"synced": True}

    def _read_replies(self, block):
        while True:
            line = self._next_line(block)
            if line is None:
                return
            self._note(line)

    def _note(self, line):
        try:
            reply = json.loads(line)
        except ValueError:
            return {}  # not a reply: something printed to stdout before the child moved it aside
        if not isinstance(reply, dict):
            return {}
        if "synced" in reply:
            self._syncs_answered += 1
        if "error" in reply and self._error is None:
            self._error = reply["error"]
        if "unavailable" in reply:
            self._unavailable = reply["unavailable"]
        if "no_ring" in reply:
            self._ring_refused = reply["no_ring"]
        return reply

    def _next_line(self, block):
        """The child's next reply line, or None (nothing yet when not blocking; the child's exit)."""
        fd = self._proc.stdout.fileno()
        while b"\n" not in self._replies:
            if not block and not select.select([fd], [], [], 0)[0]:
                return None
            chunk = os.read(fd, 4096)
            if not chunk:
                return None
            self._replies += chunk
        line, self._replies = self._replies.split(b"\n", 1)
        return line.decode("utf-8", "replace")

    def _fail(self, message):
        if self._error is None:
            self._error = message

    def _raise_if_failed(self):
        if self._error is not None:
            raise OSError("nanscope: writing %s failed: %s" % (self.path, self._error))


# ----------------------------------------------------------------------------------- the child


def _read_exact(stream, n):
    data = stream.read(n)
    return data if len(data) == n else None


def serve(stream=None, out=None):
    """The child's loop: applies each batch of operations to a RunFile until a close, or the end of
    the pipe (the training process died), then closes run.h5."""
    stream = stream or sys.stdin.buffer
    if out is None:
        # Replies go to the pipe that was stdout; anything else printed in this process (a library's
        # warning) goes to stderr, where it cannot break the replies.
        out = os.fdopen(os.dup(1), "w")
        os.dup2(2, 1)

    def reply(**fields):
        out.write(json.dumps(fields) + "\n")
        out.flush()

    run = None
    ring = None
    failed = False

    def measured(parts, staged):
        """A message's row parts with each staged one (an index into `staged`) measured."""
        return [range_figures(ring.values(staged[p])) if isinstance(p, int) else p for p in parts]

    def apply(op):
        """Carries out one operation; False (and the error replied) when it failed."""
        nonlocal run, ring
        kind = op[0]
        try:
            if kind == "append":
                table = getattr(run, op[1])
                packed = np.frombuffer(op[3], dtype=table.dtype).reshape(len(table.columns), -1)
                table.append(op[2], dict(zip(table.columns, packed if table.width else packed[:, 0])))
            elif kind == "ranges":
                getattr(run, op[1]).append_ranges(op[2], [measured(parts, op[4]) for parts in op[3]])
            elif kind == "buffers":
                getattr(run, op[1]).append_buffers(op[2], flat_buffer_figures(ring.values(op[3]), op[4]))
            elif kind == "event":
                run.append_event(op[1], op[2], op[3])
            elif kind == "flush":
                run.flush()
            elif kind == "create":
                path, attributes, scalars, schema, ring_spec = op[1:]
                if ring_spec is not None:
                    try:
                        ring = ValueRingReader(*ring_spec)
                    except (OSError, ValueError) as error:
                        reply(no_ring="%s: %s" % (type(error).__name__, error))
                run = RunFile(path, attributes, scalars, **schema)
        except Exception as error:  # noqa: BLE001 - reported to the training process
            reply(error="%s: %s" % (type(error).__name__, error))
            return False
        return True

    try:
        while True:
            header = _read_exact(stream, _HEADER.size)
            if header is None:
                break
            payload = _read_exact(stream, _HEADER.unpack(header)[0])
            if payload is None:
                break  # the training process died mid-write: that batch is incomplete
            for op in pickle.loads(payload):
                kind = op[0]
                if kind == "sync":
                    reply(synced=True)
                    continue
                if kind == "close":
                    return  # the finally below closes run.h5
                if not failed:  # nothing after a failed write: the rows would have a gap
                    failed = not apply(op)
                if kind == "flush" and ring is not None:
                    # Every op before this flush is handled (or skipped after a failure), so the
                    # values staged before it have been read: their room may be reused. After the
                    # flush's system calls, so those reads are done before this write is seen.
                    ring.release(op[1])
    finally:
        if run is not None:
            try:
                run.close()
            except Exception as error:  # noqa: BLE001
                if not failed:
                    reply(error="closing: %s: %s" % (type(error).__name__, error))
        if ring is not None:
            ring.close()

"""run.h5 is written by a child process of the training process (run_file_child.py): the file is the
one the in-process writer writes, value for value; an incident's rows are on disk when end_step
returns; Recorder.flush() makes every row readable; a Ctrl-C that stops training does not stop the
writer before it has written what it was given; a writer that dies is an error naming run.h5; and
where no child can start, the recorder writes in process and says so."""
import os
import signal
import sys
import tempfile
import unittest
import warnings
from unittest import mock

import h5py
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import recorder_fixtures as fx
from nanscope_recorder import Recorder, run_file_child, value_ring

# Attributes and columns that differ between two recordings of the same training by nature.
_CLOCK = {"created_utc"}
_CLOCK_COLUMNS = {"scalars/wall_time"}


def _contents(path):
    """{dataset path: values} and {attribute: value} of an HDF5 file."""
    datasets = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, obj: datasets.__setitem__(name, obj[()]) if isinstance(obj, h5py.Dataset) else None)
        attributes = {k: v for k, v in f.attrs.items() if k not in _CLOCK}
    return datasets, attributes


def _step(rec, model, opt, step, nan=False):
    x, y = fx.batch(step)
    if nan:
        x[2, 1] = float("nan")
    rec.begin_step(step, inputs=x, targets=y)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    applied = rec.end_step(loss, lr=0.1)
    if applied:
        opt.step()
    return applied


def _rows(run_dir, table="scalars"):
    with fx.open_run(run_dir) as f:
        return f[table + "/steps"].shape[0]


class _Transpose(nn.Module):
    def forward(self, x):
        return x.t()  # a strided view of its input


class _Shapes(nn.Module):
    """Logged outputs of the shapes real models have: a strided view (a transpose), a module
    called twice, and eleven more, about 7 KiB a step in all."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(8)])
        self.shared = nn.Linear(8, 8)
        self.flip = _Transpose()
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        for layer in self.layers:
            x = torch.tanh(layer(x))
        x = self.shared(self.shared(x))
        return self.head(self.flip(self.flip(x)))


def _train_shapes(run_dir, in_process):
    model = _Shapes()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with Recorder(run_dir, model, checkpoint_every=2, activations_every=1, write_in_process=in_process) as rec:
        for step in range(10):
            g = torch.Generator().manual_seed(step)
            x = torch.randn(8, 16, generator=g).t()  # the batch itself a strided view
            y = torch.randint(0, 3, (16,), generator=g)
            rec.begin_step(step, inputs=x, targets=y)
            if step % 3 == 1:
                rec.note("a note in the middle of step %d" % step)  # a sync before the forward
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            if rec.end_step(loss, lr=0.1):
                opt.step()


class WriterChild(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def _recorded_training(self, activations_every):
        """(run folder, recorder, model, optimizer) of a small BatchNorm MLP, no checkpoints."""
        run_dir = os.path.join(self.tmp, "run")
        model = fx.bn_mlp()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        return run_dir, Recorder(run_dir, model, checkpoint_every=0, activations_every=activations_every), model, opt

    def test_the_child_writes_what_the_training_process_would_value_for_value(self):
        """The child measures the CPU inputs and outputs handed to it through the value ring; with
        a ring too small for most of them the training process measures the rest. Either way the
        file is the in-process writer's, value for value."""
        expected, _ = self._recording(in_process=True)
        for capacity, label in ((None, "the default ring"), (2048, "a ring too small for most values")):
            with mock.patch.object(value_ring, "DEFAULT_CAPACITY", capacity or value_ring.DEFAULT_CAPACITY):
                got, puts = self._recording(in_process=False)
            self.assertGreater(puts["staged"], 0, label + ": no value went through the ring")
            if capacity:
                self.assertGreater(puts["refused"], 0, label + ": every value fitted")
                # The child releases the ring at each step's flush: values still go through it
                # at the end of the run, long after the first steps filled it.
                self.assertIn(True, puts["outcomes"][-len(puts["outcomes"]) // 4:], label + ": the ring was never released")
            else:
                self.assertEqual(puts["refused"], 0, label)
            self.assert_same_file(got, expected, label)
        with mock.patch.object(value_ring.ValueRing, "create", classmethod(lambda cls, capacity=None: None)):
            got, puts = self._recording(in_process=False)
        self.assertEqual(puts["staged"] + puts["refused"], 0)
        self.assert_same_file(got, expected, "no shared memory: every value measured in process")

    def _recording(self, in_process):
        """(run.h5's contents, the value ring's puts: {"staged": n, "refused": n, "outcomes": [staged?]})."""
        puts = {"staged": 0, "refused": 0, "outcomes": []}
        put = value_ring.ValueRing.put

        def counted_put(ring, values):
            staged = put(ring, values)
            puts["staged" if staged is not None else "refused"] += 1
            puts["outcomes"].append(staged is not None)
            return staged

        run_dir = os.path.join(self.tmp, "in_process" if in_process else "child%d" % len(os.listdir(self.tmp)))
        with mock.patch.object(value_ring.ValueRing, "put", counted_put):
            # Step 7's NaN makes incident events, a capture and a skipped row.
            fx.train(run_dir, fx.bn_mlp(), 12, nan_at=7, write_in_process=in_process, activations_every=1)
        return _contents(os.path.join(run_dir, "run.h5")), puts

    def assert_same_file(self, got, expected, label):
        (child, child_attrs), (in_process, in_process_attrs) = got, expected
        self.assertEqual(child_attrs.keys(), in_process_attrs.keys(), label)
        self.assertEqual(sorted(child), sorted(in_process), label)
        for name in ("scalars/loss", "layers/grad_norm", "activations/max", "inputs/std", "buffers/running_var_max",
                     "events/kind"):
            self.assertIn(name, child)
        for name, values in child.items():
            if name in _CLOCK_COLUMNS:
                self.assertEqual(values.shape, in_process[name].shape, name)
            else:
                np.testing.assert_array_equal(values, in_process[name], err_msg="%s (%s)" % (name, label))
        self.assertEqual(child["scalars/skipped"].tolist().count(1.0), 1)
        self.assertEqual(int(np.isnan(child["inputs/nan"]).sum()), 0)
        self.assertEqual(child["inputs/nan"][7, 0], 1.0, "step 7's NaN in x, counted (%s)" % label)

    def test_strided_outputs_modules_called_twice_and_flushes_mid_step_through_a_small_ring(self):
        """A ring that fills within each step, flushes in the middle of steps (a checkpoint's in
        begin_step, a note's), outputs that are strided views and a module called twice: the
        child's file is still the in-process writer's, value for value. A mid-step flush must not
        free the step's staged inputs before their row is sent, and a strided view's figures must
        not depend on which side measures it."""
        files, puts = {}, {"staged": 0, "refused": 0}
        put = value_ring.ValueRing.put

        def counted_put(ring, values):
            staged = put(ring, values)
            puts["staged" if staged is not None else "refused"] += 1
            return staged

        for in_process in (True, False):
            run_dir = os.path.join(self.tmp, "in_process" if in_process else "child")
            with mock.patch.object(value_ring, "DEFAULT_CAPACITY", 4096), \
                    mock.patch.object(value_ring.ValueRing, "put", counted_put):
                _train_shapes(run_dir, in_process)
            files[in_process] = _contents(os.path.join(run_dir, "run.h5"))
        self.assertGreater(puts["staged"], 0)
        self.assertGreater(puts["refused"], 0, "the ring never filled: the test would not see an early release")
        (child, _), (in_process, _) = files[False], files[True]
        self.assertEqual(sorted(child), sorted(in_process))
        self.assertIn("activations/mean", child)
        for name, values in child.items():
            if name not in _CLOCK_COLUMNS:
                np.testing.assert_array_equal(values, in_process[name], err_msg=name)

    def test_an_incident_is_on_disk_when_end_step_returns(self):
        run_dir, rec, model, opt = self._recorded_training(activations_every=0)
        try:
            for step in range(5):
                self.assertTrue(_step(rec, model, opt, step))
            self.assertFalse(_step(rec, model, opt, 5, nan=True))
            # No flush(): the recorder waits for the writer at a non-finite step.
            with fx.open_run(run_dir) as f:
                rows = f["scalars/steps"].shape[0]
                self.assertEqual(rows, 6)
                self.assertEqual(f["scalars/skipped"][5], 1.0)
                self.assertIn(b"nonfinite_loss", f["events/kind"][:].tolist())
        finally:
            rec.close()

    def test_flush_makes_every_row_readable_while_training_goes_on(self):
        run_dir, rec, model, opt = self._recorded_training(activations_every=1)
        try:
            for step in range(9):
                _step(rec, model, opt, step)
            rec.flush()
            status, info = fx.nanscope_info(run_dir)
            self.assertEqual(status, 0, info)
            for table in ("scalars", "layers", "buffers", "inputs", "activations"):
                self.assertEqual(info["groups"][table]["rows"], 9, table)
        finally:
            rec.close()

    def test_a_writer_that_dies_is_an_error_naming_run_h5(self):
        run_dir, rec, model, opt = self._recorded_training(activations_every=0)
        _step(rec, model, opt, 0)
        os.kill(rec._file.writer_pid, signal.SIGKILL)
        with self.assertRaises(OSError) as raised:
            for step in range(1, 40):  # flush() looks every 16 steps; flush() below always does
                _step(rec, model, opt, step)
            rec.flush()
        self.assertIn(os.path.join(run_dir, "run.h5"), str(raised.exception))
        self.assertIn("writer", str(raised.exception))
        with self.assertRaises(OSError):
            rec.close()

    def test_a_ctrl_c_as_a_write_ends_neither_loses_nor_repeats_a_row(self):
        # A signal handler runs in the main thread between two bytecodes: right after the write
        # returned is as likely as during it. The message must reach the child once, whole.
        run_dir, rec, model, opt = self._recorded_training(activations_every=1)
        _step(rec, model, opt, 0)
        pipe = rec._file._proc.stdin

        class InterruptedOnce:
            def __init__(self):
                self.interrupted = False

            def write(self, data):
                return pipe.write(data)

            def flush(self):
                pipe.flush()
                if not self.interrupted:
                    self.interrupted = True
                    raise KeyboardInterrupt  # the signal, handled once the bytes were out

            def __getattr__(self, name):
                return getattr(pipe, name)

        rec._file._proc.stdin = InterruptedOnce()
        try:
            with self.assertRaises(KeyboardInterrupt):
                _step(rec, model, opt, 1)
        finally:
            rec._file._proc.stdin = pipe
        rec.close()  # as the `with` block of an interrupted training loop does
        with h5py.File(os.path.join(run_dir, "run.h5"), "r") as f:
            self.assertEqual(f["scalars/steps"][:].tolist(), [0, 1])
            self.assertEqual(f["activations/steps"][:].tolist(), [0, 1])

    def test_run_h5_that_cannot_be_created_is_an_error_naming_it(self):
        run_dir = os.path.join(self.tmp, "run")
        os.makedirs(run_dir)
        os.symlink(os.path.join(self.tmp, "no such folder", "run.h5"), os.path.join(run_dir, "run.h5"))
        with self.assertRaises(OSError) as raised:
            fx.train(run_dir, fx.bn_mlp(), 2)
        self.assertIn(os.path.join(run_dir, "run.h5"), str(raised.exception))

    def test_close_does_not_wait_for_processes_forked_after_the_writer_started(self):
        # A DataLoader's workers are forked from the training process and hold its pipe to the
        # writer open; close() must not wait for them to exit.
        run_dir, rec, model, opt = self._recorded_training(activations_every=0)
        _step(rec, model, opt, 0)
        worker = os.fork()
        if worker == 0:
            signal.pause()  # holds every inherited descriptor until killed
            os._exit(0)
        try:
            _step(rec, model, opt, 1)
            rec.close()  # would hang here if the writer waited for the end of the pipe
            self.assertEqual(_rows(run_dir), 2)
        finally:
            os.kill(worker, signal.SIGKILL)
            os.waitpid(worker, 0)

    def test_ctrl_c_stops_training_and_the_writer_still_writes_every_row(self):
        # Ctrl-C in a terminal signals the whole foreground process group: the trainer and,
        # were it in that group, the writer. The trainer's `with` block closes the recorder.
        run_dir = os.path.join(self.tmp, "interrupted")
        proc = fx.start_training_until_stopped(run_dir, dict(checkpoint_every=0, activations_every=1),
                                               start_new_session=True)
        last, seen = -1, ""
        try:
            while last < 10:
                line = proc.stdout.readline()
                if not line:
                    break
                seen += line
                last = int(line)
            os.killpg(proc.pid, signal.SIGINT)
            # The rest through the same reader: lines it has read ahead are in its buffer, which
            # communicate() (reading the descriptors) would skip.
            out = seen + proc.stdout.read()
            _, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        self.assertGreaterEqual(last, 10, err)
        self.assertIn("interrupted", out, err)
        self.assertEqual(proc.returncode, 0, err)
        self.assertNotIn("failed", err)
        printed = [int(s) for s in out.split() if s.isdigit()]
        # close() waited for the writer: every step that ended is in run.h5, and at most the one
        # the signal cut after it.
        with h5py.File(os.path.join(run_dir, "run.h5"), "r") as f:
            steps = f["scalars/steps"][:].tolist()
            self.assertEqual(steps[:len(printed)], printed)
            self.assertLessEqual(len(steps), len(printed) + 1)  # the step the signal cut may have ended
            # A step the signal cut inside end_step may have some of its tables' rows, not all.
            self.assertEqual(f["activations/steps"][:len(printed)].tolist(), printed)

    def test_where_no_child_starts_the_recorder_writes_in_process_and_says_so(self):
        boot, executable = run_file_child._BOOT, sys.executable
        # A library missing where the child starts: its message, with no quote in it, comes after
        # a line a sitecustomize printed.
        missing = ("print('hello from sitecustomize'); import json, sys; "
                   "print(json.dumps({'unavailable': 'ImportError: libhdf5_serial.so.103: cannot open shared object "
                   "file'})); sys.exit(3)")
        package = run_file_child._PACKAGE_DIR
        empty = os.path.join(self.tmp, "not the package")
        os.makedirs(empty)
        cases = {"a child that exits at once": ("exits", "import sys; sys.exit(5)", "status 5"),
                 "a child without h5py": ("missing", missing, "libhdf5_serial.so.103"),
                 "a child that cannot import the writer": ("package", boot, "ModuleNotFoundError"),
                 "an embedding program's executable": ("executable", None, "not a Python interpreter")}
        for label, (broken, boot_code, reason) in cases.items():
            run_dir = os.path.join(self.tmp, broken)
            if boot_code is not None:
                run_file_child._BOOT = boot_code
            else:
                sys.executable = "/usr/bin/env"
            if broken == "package":
                run_file_child._PACKAGE_DIR = empty
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    fx.train(run_dir, fx.bn_mlp(), 4)
            finally:
                run_file_child._BOOT, sys.executable, run_file_child._PACKAGE_DIR = boot, executable, package
            said = [str(w.message) for w in caught if "in the training process" in str(w.message)]
            self.assertEqual(len(said), 1, (label, [str(w.message) for w in caught]))
            self.assertIn(reason, said[0], label)
            self.assertEqual(_rows(run_dir), 4, label)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)

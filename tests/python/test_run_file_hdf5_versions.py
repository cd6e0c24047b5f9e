"""Runs recorded anywhere open anywhere (issue 56, item 3), with the pinned PyPI h5py, whose bundled
HDF5 (2.0 for h5py 3.16) is newer than the libhdf5 nanscope links (Debian 12's 1.10):

- the recorder writes a run.h5 that nanscope reads, whatever HDF5 h5py brings;
- a run.h5 another writer made with HDF5's latest format is refused with a message that names both
  HDF5 versions and the command that copies it into a readable one; after that copy it opens, row
  for row, and the source file is untouched."""
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import unittest

import h5py
import torch

from nanscope_recorder import Recorder
import nanscope_recorder.run_file as run_file

NANSCOPE = os.environ["NANSCOPE_BINARY"]
STEPS, NAN_STEP = 20, 14


def record(run_dir, latest_format):
    """A small run whose step NAN_STEP has a NaN input; with latest_format, run.h5 is written the way
    a writer that asks h5py for libver="latest" writes it."""
    original = h5py.File

    def file_in_latest_format(path, mode="r", **options):
        if mode == "w":
            options["libver"] = "latest"
        return original(path, mode, **options)

    if latest_format:
        run_file.h5py.File = file_in_latest_format
    try:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        with Recorder(run_dir, model, write_in_process=True, checkpoint_every=0, batch_ring=0) as recorder:
            for step in range(STEPS):
                generator = torch.Generator().manual_seed(step)
                x, y = torch.randn(16, 4, generator=generator), torch.randn(16, 1, generator=generator)
                if step == NAN_STEP:
                    x[2, 1] = float("nan")
                recorder.begin_step(step, inputs=x, targets=y)
                loss = torch.nn.functional.mse_loss(model(x), y)
                loss.backward()
                if recorder.end_step(loss):
                    optimizer.step()
                optimizer.zero_grad()
    finally:
        run_file.h5py.File = original


def nanscope(*args):
    return subprocess.run([NANSCOPE, *args], capture_output=True, text=True, timeout=120)


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class Hdf5VersionsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.recorded = os.path.join(cls.tmp.name, "recorded")
        cls.latest = os.path.join(cls.tmp.name, "latest")
        record(cls.recorded, latest_format=False)
        record(cls.latest, latest_format=True)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_h5py_brings_a_newer_hdf5_than_nanscope_links(self):
        # The premise of this test: otherwise the directions below are not tested.
        self.assertGreaterEqual(int(h5py.version.hdf5_version.split(".")[0]), 2, h5py.version.hdf5_version)

    def test_the_recorders_run_opens_under_the_older_hdf5(self):
        scan = nanscope("scan", self.recorded)
        self.assertEqual(scan.returncode, 1, scan.stderr)  # 1: incidents found
        self.assertIn("step %d" % NAN_STEP, scan.stdout)

    def test_a_latest_format_file_is_refused_naming_both_versions_and_the_fix(self):
        path = os.path.join(self.latest, "run.h5")
        before = digest(path)
        info = nanscope("info", self.latest)
        self.assertEqual(info.returncode, 2)
        message = info.stderr
        self.assertIn(path, message)
        self.assertIn("newer HDF5 file format", message)
        self.assertIn("1.10", message)  # the HDF5 nanscope has
        self.assertIn("HDF5 2.0", message)  # the one that wrote it
        self.assertIn("python -m nanscope_recorder.downgrade", message)
        self.assertNotIn("must hold numbers", message)  # the old, misleading wording
        self.assertEqual(digest(path), before)

    def test_the_downgraded_copy_opens_row_for_row(self):
        source = os.path.join(self.latest, "run.h5")
        before = digest(source)
        target_dir = os.path.join(self.tmp.name, "downgraded")
        os.makedirs(target_dir)
        target = os.path.join(target_dir, "run.h5")
        convert = subprocess.run([sys.executable, "-m", "nanscope_recorder.downgrade", source, target],
                                 capture_output=True, text=True, timeout=120)
        self.assertEqual(convert.returncode, 0, convert.stderr)
        self.assertEqual(digest(source), before)
        scan = nanscope("scan", "--json", target_dir)
        self.assertEqual(scan.returncode, 1, scan.stderr)
        reference = nanscope("scan", "--json", self.recorded)
        # The same training, recorded in two formats: the same incidents (the copy has run.h5 only,
        # so the texts that mention saved batches differ).
        def incidents(output):
            return [(i["kind"], i["severity"], i["onset_step"], i["nonfinite_step"], i["cause"])
                    for i in json.loads(output)["incidents"]]
        self.assertEqual(incidents(scan.stdout), incidents(reference.stdout))
        self.assertEqual(incidents(scan.stdout)[0][:3], ("bad_input", "critical", NAN_STEP))
        with h5py.File(source, "r") as a, h5py.File(target, "r") as b:
            for table in ("scalars", "layers", "inputs"):
                for name in a[table]:
                    old, new = a[table][name][()], b[table][name][()]
                    if old.dtype.kind == "O":  # strings
                        self.assertEqual(old.tolist(), new.tolist(), table + "/" + name)
                    else:  # bit for bit, NaN included
                        self.assertEqual(old.tobytes(), new.tobytes(), table + "/" + name)
        again = subprocess.run([sys.executable, "-m", "nanscope_recorder.downgrade", source, target],
                               capture_output=True, text=True, timeout=120)
        self.assertEqual(again.returncode, 2)
        self.assertIn("already exists", again.stderr)


if __name__ == "__main__":
    unittest.main()

"""Values no training can produce (a negative norm) read as damage to the file, in the run.h5 of an
older recorder that wrote no chunk checksums. Today's recorders checksum every chunk, so damage
fails the read instead, and the scan no longer reads those datasets whole a second time to look for
impossible numbers (40% of its time on bench_scan's run). This checks both halves on files
written by the recorders: the demo run (the C++ Guard) and a copy of it rewritten without
checksums, as the older recorders wrote it, with a few norms damaged."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import h5py
import numpy as np

RUNS = os.environ.get("NANSCOPE_TEST_RUNS")
BINARY = os.environ.get("NANSCOPE_BINARY")
DEMO = "healthy"


def copy_without_checksums(source, target):
    """run.h5 rewritten dataset by dataset with the same chunks and attributes, no Fletcher-32."""
    with h5py.File(source, "r") as src, h5py.File(target, "w") as dst:
        for key, value in src.attrs.items():
            dst.attrs[key] = value

        def copy(name, item):
            if isinstance(item, h5py.Group):
                group = dst.require_group(name)
                for key, value in item.attrs.items():
                    group.attrs[key] = value
            else:
                data = item[()]
                maxshape = tuple(None if i == 0 else n for i, n in enumerate(item.shape)) if item.ndim else None
                out = dst.create_dataset(name, data=data, chunks=item.chunks, maxshape=maxshape if item.chunks else None,
                                         dtype=item.dtype)
                for key, value in item.attrs.items():
                    out.attrs[key] = value

        src.visititems(copy)


def scan(run_dir):
    result = subprocess.run([BINARY, "scan", "--json", run_dir], capture_output=True, text=True, timeout=300)
    if result.returncode not in (0, 1):
        raise AssertionError(f"nanscope scan {run_dir} exited {result.returncode}: {result.stderr}")
    return json.loads(result.stdout)


@unittest.skipUnless(RUNS and BINARY, "NANSCOPE_TEST_RUNS and NANSCOPE_BINARY not set")
class DamagedValues(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.source = os.path.join(RUNS, DEMO)

    def tearDown(self):
        self.tmp.cleanup()

    def test_the_recorders_checksum_every_value_dataset(self):
        with h5py.File(os.path.join(self.source, "run.h5"), "r") as f:
            unchecked = []

            def visit(name, item):
                # Numbers only: /events holds strings, which no rule reads as values.
                if isinstance(item, h5py.Dataset) and item.dtype.kind in "fiu" and item.chunks and not item.fletcher32:
                    unchecked.append(name)

            f.visititems(visit)
        self.assertEqual(unchecked, [], "datasets a damaged byte could turn into numbers unnoticed")

    def test_impossible_norms_in_a_file_without_checksums_are_damage(self):
        run = os.path.join(self.tmp.name, "older-recorder")
        shutil.copytree(self.source, run, ignore=shutil.ignore_patterns("run.h5"))
        copy_without_checksums(os.path.join(self.source, "run.h5"), os.path.join(run, "run.h5"))
        # The copy reads as the original: no incident from the rewrite itself.
        before = [i["kind"] for i in scan(run)["incidents"]]
        self.assertNotIn("damaged_data", before)
        with h5py.File(os.path.join(run, "run.h5"), "r+") as f:
            norms = f["layers/param_norm"]
            steps = f["layers/steps"][()]
            damaged = norms[()]
            damaged[10:13, 0] = -3e38
            norms[...] = damaged
        report = scan(run)
        found = [i for i in report["incidents"] if i["kind"] == "damaged_data"]
        self.assertEqual(len(found), 1, report["incidents"])
        self.assertEqual(found[0]["onset_step"], int(steps[10]))
        self.assertIn("layers/param_norm", found[0]["cause"])
        self.assertNotIn("damaged_data", [i["kind"] for i in scan(self.source)["incidents"]])


if __name__ == "__main__":
    unittest.main()

"""python/examples/train_mlp_with_recorder.py keeps working: its run opens in nanscope and the
injected NaN step is skipped, with its checkpoint and batch saved."""
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

import recorder_fixtures as fx

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python", "examples",
                       "train_mlp_with_recorder.py")


class Example(unittest.TestCase):
    def test_example_with_an_injected_nan(self):
        with tempfile.TemporaryDirectory() as tmp:
            run_dir = os.path.join(tmp, "mlp")
            proc = subprocess.run([sys.executable, EXAMPLE, run_dir, "--steps", "60", "--inject-nan-at", "33"],
                                  capture_output=True, text=True, timeout=300)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertIn("1 step(s) skipped", proc.stdout)
            status, info = fx.nanscope_info(run_dir)
            self.assertEqual(status, 0, info)
            self.assertEqual(info["checkpoints"], [0, 33, 50])
            self.assertEqual(info["batches"], [33])
            with fx.open_run(run_dir) as f:
                self.assertEqual(np.flatnonzero(f["scalars/skipped"][:]).tolist(), [33])


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)

"""python/examples/train_mlp_with_recorder.py keeps working: its run opens in nanscope and the
injected NaN step is skipped, with its checkpoint and batch saved and the batches before it
captured; three NaN steps in a row roll the run back."""
import math
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
            # Incident capture: the 8 batches up to 33 start after the state kept at step 24.
            self.assertEqual(info["checkpoints"], [0, 24, 33, 50])
            self.assertEqual(info["batches"], list(range(24, 34)))
            with fx.open_run(run_dir) as f:
                self.assertEqual(np.flatnonzero(f["scalars/skipped"][:]).tolist(), [33])
                kinds = fx.strings(f["events/kind"])
            self.assertIn("incident_capture", kinds)
            self.assertIn("buffers_restored", kinds)
            self.assertNotIn("rollback", kinds)

    def test_example_rolls_back_after_three_nan_steps(self):
        with tempfile.TemporaryDirectory() as tmp:
            run_dir = os.path.join(tmp, "mlp")
            proc = subprocess.run([sys.executable, EXAMPLE, run_dir, "--steps", "60", "--inject-nan-at", "33",
                                   "--nan-steps", "3"], capture_output=True, text=True, timeout=300)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertIn("3 step(s) skipped, learning rate scaled by 0.5", proc.stdout)
            with fx.open_run(run_dir) as f:
                rollbacks = [(int(s), m) for s, k, m in zip(f["events/steps"][:], fx.strings(f["events/kind"]),
                                                           fx.strings(f["events/message"])) if k == "rollback"]
                lr = f["scalars/lr"][:]
                loss = f["scalars/loss"][:]
            self.assertEqual(len(rollbacks), 1)
            self.assertEqual(rollbacks[0][0], 35)
            self.assertIn("state of step 30", rollbacks[0][1])
            self.assertTrue(np.isfinite(loss[36:]).all())
            # The loop's own cosine schedule (base lr 0.05) goes on at half its value.
            cosine = 0.05 * 0.5 * (1 + math.cos(math.pi * 40 / 60))
            self.assertAlmostEqual(lr[40], 0.5 * cosine)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)

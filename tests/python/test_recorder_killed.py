"""nanscope reads a run while it is being written, and a training process killed with SIGKILL
mid-run leaves a run.h5 with every step that ended: its writer (a child process of the trainer,
run_file_child.py) writes what it was given, flushed after each step, and closes the file."""
import os
import signal
import sys
import tempfile
import time
import unittest

import numpy as np

import recorder_fixtures as fx

MIN_STEPS = 15
# The writer follows the training loop by microseconds; this only bounds a hung one.
WRITER_DEADLINE_S = 60


def rows_once_written(run_dir, at_least):
    """`nanscope info` of the run once its scalars hold `at_least` rows (or the deadline passed)."""
    deadline = time.monotonic() + WRITER_DEADLINE_S
    while True:
        status, info = fx.nanscope_info(run_dir)
        if (status == 0 and info["groups"]["scalars"]["rows"] >= at_least) or time.monotonic() > deadline:
            return status, info
        time.sleep(0.05)


class KilledTraining(unittest.TestCase):
    def test_rows_flushed_before_sigkill_are_readable(self):
        with tempfile.TemporaryDirectory() as tmp:
            run_dir = os.path.join(tmp, "killed")
            proc = fx.start_training_until_stopped(
                run_dir, dict(loss_name="cross_entropy", checkpoint_every=4, activations_every=3))
            try:
                last = -1
                deadline = time.monotonic() + 120
                while last < MIN_STEPS and time.monotonic() < deadline:
                    line = proc.stdout.readline()
                    if not line:
                        break
                    last = int(line)
                # nanscope reads the run while it is being written.
                status, live = rows_once_written(run_dir, last + 1)
                self.assertEqual(status, 0, live)
                self.assertGreaterEqual(live["groups"]["scalars"]["rows"], last + 1)
            finally:
                proc.send_signal(signal.SIGKILL)
                _, err = proc.communicate(timeout=60)
            self.assertGreaterEqual(last, MIN_STEPS, err)
            self.assertEqual(proc.returncode, -signal.SIGKILL)

            status, info = rows_once_written(run_dir, last + 1)
            self.assertEqual(status, 0, info)
            groups = info["groups"]
            # Every step printed was written; a few more may have been before the kill landed.
            for table in ("scalars", "layers", "buffers", "inputs"):
                self.assertGreaterEqual(groups[table]["rows"], last + 1, table)
            self.assertGreaterEqual(groups["activations"]["rows"], last // 3 + 1)
            self.assertIn(12, info["checkpoints"])

            with fx.open_run(run_dir) as f:
                rows = groups["scalars"]["rows"]
                steps = f["scalars/steps"][:rows]
                self.assertEqual(steps.tolist(), list(range(rows)))
                self.assertTrue(np.isfinite(f["scalars/loss"][:rows]).all())
                self.assertTrue(np.isfinite(f["layers/grad_norm"][:groups["layers"]["rows"]]).all())


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)

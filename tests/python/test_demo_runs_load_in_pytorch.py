"""The demo's batches and checkpoints must be what PyTorch itself writes and reads: a torch.save
dict and a TorchScript archive whose forward reproduces the logged failure."""
import glob
import os
import sys
import unittest

import h5py
import numpy as np
import torch

RUNS = os.environ["NANSCOPE_TEST_RUNS"]


class DemoRunsLoadInPyTorch(unittest.TestCase):
    def test_batch_is_a_torch_save_dict(self):
        batch = torch.load(os.path.join(RUNS, "division-by-zero/batches/step_00000180.pt"))
        self.assertEqual(set(batch), {"inputs", "targets", "loss", "step"})
        self.assertEqual(batch["step"], 180)
        self.assertEqual(batch["loss"], "cross_entropy")
        self.assertEqual(tuple(batch["inputs"].shape), (32, 16))

    def test_checkpoint_replays_the_division_by_zero_on_one_sample(self):
        batch = torch.load(os.path.join(RUNS, "division-by-zero/batches/step_00000180.pt"))
        model = torch.jit.load(os.path.join(RUNS, "division-by-zero/checkpoints/step_00000180.pt"))
        out = model(batch["inputs"])
        bad_rows = torch.isnan(out).any(dim=1).nonzero().flatten().tolist()
        self.assertEqual(bad_rows, [5])
        names = [n for n, _ in model.named_modules()]
        self.assertIn("norm", names)

    def test_checkpoint_holds_batchnorm_buffers(self):
        model = torch.jit.load(os.path.join(RUNS, "batchnorm-poisoned/checkpoints/step_00000250.pt"))
        buffers = dict(model.named_buffers())
        self.assertTrue(torch.isnan(buffers["bn1.running_mean"]).all())
        before = torch.jit.load(os.path.join(RUNS, "batchnorm-poisoned/checkpoints/step_00000200.pt"))
        self.assertTrue(torch.isfinite(dict(before.named_buffers())["bn1.running_var"]).all())

    def test_run_log_reads_in_h5py_with_swmr(self):
        with h5py.File(os.path.join(RUNS, "healthy/run.h5"), "r", libver="latest", swmr=True) as f:
            self.assertEqual(f.attrs["format"], "training-run")
            self.assertEqual(int(f.attrs["format_version"]), 1)
            names = [n.decode() if isinstance(n, bytes) else n for n in f["layers/names"][:]]
            self.assertIn("fc1.weight", names)
            self.assertEqual(f["layers/grad_norm"].shape, (len(f["layers/steps"]), len(names)))
            self.assertTrue(np.all(np.diff(f["scalars/steps"][:]) > 0))


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)

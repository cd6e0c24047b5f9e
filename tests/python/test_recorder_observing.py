"""The recorder as the framework callbacks use it (issue 56): observing a loop that decides for
itself what it skips. skipped_steps="none": every update is applied, a NaN step is logged as
non-finite, not skipped. skipped_steps="nonfinite_gradients": a loss scaler (torch.amp.GradScaler,
here on the CPU with float16 autocast) skips the steps whose gradients overflowed; the recorder
logs those as skipped, logs the loss scale, and divides the scale out of the gradient norms it
reads before the scaler unscales them."""
import os
import tempfile
import unittest

import h5py
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from nanscope_recorder import Recorder

STEPS, BAD_STEP = 12, 7


def model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))


def batch(step, scale=1.0):
    generator = torch.Generator().manual_seed(step)
    x = torch.randn(8, 16, generator=generator)
    if step == BAD_STEP:
        x = x * scale
    return x, torch.randint(0, 4, (8,), generator=generator)


def table(run_dir, name):
    with h5py.File(os.path.join(run_dir, "run.h5"), "r") as f:
        return np.asarray(f["scalars"][name][()])


def event_kinds(run_dir):
    with h5py.File(os.path.join(run_dir, "run.h5"), "r") as f:
        return [(int(s), k.decode()) for s, k in zip(f["events/steps"][()], f["events/kind"][()])]


class Observing(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def test_a_loop_that_applies_every_update_is_observed_not_skipped(self):
        recorded, plain = model(), model()
        run_dir = os.path.join(self.tmp.name, "run")
        with Recorder(run_dir, recorded, skipped_steps="none", checkpoint_every=0) as rec:
            for net, record in ((recorded, True), (plain, False)):
                optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
                for step in range(STEPS):
                    x, y = batch(step, scale=float("nan"))
                    if record:
                        rec.begin_step(step, inputs=x, targets=y)
                    loss = F.cross_entropy(net(x), y)
                    loss.backward()
                    if record:
                        # False from the NaN step on: the loop applied its NaN update.
                        self.assertEqual(rec.end_step(loss), step < BAD_STEP)
                    optimizer.step()  # the loop's own rule: always
                    optimizer.zero_grad()
        self.assertEqual(table(run_dir, "skipped").sum(), 0)
        self.assertTrue(np.isnan(table(run_dir, "loss")[BAD_STEP]))
        kinds = event_kinds(run_dir)
        self.assertIn((BAD_STEP, "nonfinite_loss"), kinds)
        self.assertNotIn("skipped_step", [k for _, k in kinds])
        for a, b in zip(recorded.state_dict().values(), plain.state_dict().values()):
            self.assertTrue(torch.equal(torch.nan_to_num(a), torch.nan_to_num(b)) and
                            torch.equal(torch.isnan(a), torch.isnan(b)))

    def test_a_loss_scalers_skips_are_logged_and_its_scale_divided_out(self):
        net = model()
        optimizer = torch.optim.SGD(net.parameters(), lr=0.01)
        scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 12)
        run_dir = os.path.join(self.tmp.name, "run")
        unscaled_norms = {}
        with Recorder(run_dir, net, skipped_steps="nonfinite_gradients", checkpoint_every=0, amp_dtype="float16") as rec:
            for step in range(STEPS):
                x, y = batch(step, scale=1e6)  # float16 overflows in the first Linear
                rec.begin_step(step, inputs=x, targets=y)
                with torch.autocast("cpu", dtype=torch.float16):
                    loss = F.cross_entropy(net(x).float(), y)
                scaler.scale(loss).backward()
                scale = scaler.get_scale()
                rec.end_step(loss, loss_scale=scale, gradient_scale=scale)
                scaler.unscale_(optimizer)
                unscaled_norms[step] = torch.linalg.vector_norm(
                    torch.stack([torch.linalg.vector_norm(p.grad) for p in net.parameters()])).item()
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad()
        skipped = table(run_dir, "skipped")
        self.assertEqual(np.flatnonzero(skipped).tolist(), [BAD_STEP])
        self.assertIn((BAD_STEP, "skipped_step"), event_kinds(run_dir))
        scales = table(run_dir, "loss_scale")
        self.assertEqual(scales[BAD_STEP + 1], scales[BAD_STEP] / 2)  # the scaler halved it after the skip
        grad_norms = table(run_dir, "grad_norm")
        for step in (0, 3, BAD_STEP + 2):
            self.assertAlmostEqual(grad_norms[step], unscaled_norms[step], delta=1e-3 * unscaled_norms[step])

    def test_defences_that_change_training_are_refused_when_observing(self):
        with self.assertRaises(ValueError) as refused:
            Recorder(os.path.join(self.tmp.name, "run"), model(), skipped_steps="none", rollback_after=3,
                     optimizer=torch.optim.SGD(model().parameters(), lr=0.1))
        self.assertIn("change training", str(refused.exception))


if __name__ == "__main__":
    unittest.main()

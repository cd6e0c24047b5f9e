"""Per-layer tables on an interval (layers_every): the first step whose loss or gradients are not
finite is written whatever the interval, so that its row shows the first bad parameter before the
NaN spreads through the updates to every parameter (the scan cannot name a layer otherwise)."""
import math
import os
import sys
import tempfile
import unittest

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import recorder_fixtures as fx
from nanscope_recorder import Recorder


class LayerInterval(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.run_dir = os.path.join(self._tmp.name, "run")

    def tearDown(self):
        self._tmp.cleanup()

    def test_the_first_nonfinite_step_is_written_whatever_the_interval(self):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(fx.FEATURES, 16), nn.ReLU(), nn.Linear(16, fx.CLASSES))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        # The loop applies every step (no skip), as a loop that ignores end_step's verdict does: the
        # NaN written into the last layer's bias before step 13 is everywhere a step later.
        with Recorder(self.run_dir, model, loss_name="cross_entropy", checkpoint_every=0, activations_every=0,
                      batch_ring=0, layers_every=10, warn_after_skipped=0) as rec:
            for step in range(30):
                if step == 13:
                    with torch.no_grad():
                        model[2].bias[0] = float("nan")
                x, y = fx.batch(step)
                rec.begin_step(step, inputs=x, targets=y)
                loss = F.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                rec.end_step(loss, lr=0.1)
                opt.step()
        with fx.open_run(self.run_dir) as f:
            scalar_steps = list(f["scalars/steps"][:])
            layer_steps = list(f["layers/steps"][:])
            names = fx.strings(f["layers/names"])
            param_norm = f["layers/param_norm"][:]
        self.assertEqual(scalar_steps, list(range(30)), "the scalars keep every step")
        self.assertEqual(layer_steps, [0, 10, 13, 20], "every 10 steps, and the first non-finite step")
        row = param_norm[layer_steps.index(13)]
        bad = [n for n, v in zip(names, row) if not math.isfinite(v)]
        self.assertEqual(bad, ["2.bias"], "that row shows the parameter where the NaN began")
        self.assertFalse(np.isfinite(param_norm[layer_steps.index(20)]).any(), "by the next row it is everywhere")


if __name__ == "__main__":
    unittest.main(verbosity=2)

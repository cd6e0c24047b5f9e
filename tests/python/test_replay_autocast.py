"""Replay at the precision the run trained in (issue 57): a run recorded under torch.autocast
(float16 on the CPU here) replays under the same autocast, so the overflow it hit is found again;
--dtype float32 stays the what-if, without it. Both checkpoint forms: an exported program (the
recorder's default) and TorchScript."""
import json
import os
import subprocess
import tempfile
import unittest

import torch
import torch.nn.functional as F

from nanscope_recorder import Recorder

NANSCOPE = os.environ["NANSCOPE_BINARY"]
STEP = 2


class Amplifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = torch.nn.Linear(4, 8)
        self.out = torch.nn.Linear(8, 2)

    def forward(self, x):
        return self.out(torch.relu(self.inner(x)))


def record(run_dir, checkpoint_form):
    """Three steps under float16 autocast; step 2's batch drives `inner` past 65504 in float16
    (about 1e5 in float32: finite there)."""
    torch.manual_seed(0)
    model = Amplifier()
    with torch.no_grad():
        model.inner.weight.fill_(250.0)
        model.inner.bias.zero_()
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    nonfinite = []
    with Recorder(run_dir, model, amp_dtype="float16", loss_name="mse", checkpoint_every=1,
                  checkpoint_form=checkpoint_form) as rec:
        for step in range(3):
            x = torch.full((4, 4), 1.0 if step != STEP else 100.0)
            y = torch.zeros(4, 2)
            rec.begin_step(step, inputs=x, targets=y)
            with torch.autocast("cpu", dtype=torch.float16):
                out = model(x)
            loss = F.mse_loss(out.float(), y)
            opt.zero_grad()
            loss.backward()
            nonfinite.append(not bool(torch.isfinite(loss)))
            if rec.end_step(loss):
                opt.step()
    return nonfinite


class ReplayUnderTheRunsAutocast(unittest.TestCase):
    def replay(self, run_dir, *extra):
        out = subprocess.run([NANSCOPE, "replay", run_dir, "--step", str(STEP), "--json", *extra],
                             capture_output=True, text=True, timeout=300)
        self.assertEqual(out.returncode, 0, out.stderr)
        return json.loads(out.stdout)

    def check(self, checkpoint_form, expected_form):
        with tempfile.TemporaryDirectory() as tmp:
            run_dir = os.path.join(tmp, "run")
            self.assertEqual(record(run_dir, checkpoint_form), [False, False, True], "float16 overflows in training")
            with open(os.path.join(run_dir, "checkpoints", "step_%08d.form" % STEP)) as f:
                self.assertEqual(f.readline().strip(), expected_form)
            as_trained = self.replay(run_dir)
            culprit = as_trained["forward"]["first_nonfinite"]
            self.assertIsNotNone(culprit, "the replay under the run's autocast overflows as training did")
            self.assertEqual(culprit["module"], "inner")
            self.assertTrue(any("float16 autocast" in note for note in as_trained["notes"]), as_trained["notes"])
            what_if = self.replay(run_dir, "--dtype", "float32")
            self.assertIsNone(what_if["forward"]["first_nonfinite"], "float32 holds 1e5")
            self.assertFalse(any("autocast" in note for note in what_if["notes"]))

    def test_an_exported_program_replays_under_the_runs_autocast(self):
        self.check(None, "exported")

    def test_torchscript_replays_under_the_runs_autocast(self):
        self.check("torchscript", "scripted")


if __name__ == "__main__":
    unittest.main()

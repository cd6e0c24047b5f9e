"""Incident capture: the recorder keeps the last K batches in memory and writes them, with the
model's state from before them, when a step's loss turns non-finite or spikes; nanscope replays
and triages what it wrote."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import torch
import torch.nn.functional as F

import recorder_fixtures as fx
from nanscope_recorder import Recorder


def stepped(folder, suffix=".pt"):
    if not os.path.isdir(folder):
        return []
    return sorted(int(name[5:-len(suffix)]) for name in os.listdir(folder) if name.endswith(suffix))


def events(run_dir, kind):
    with fx.open_run(run_dir) as f:
        return [(int(s), m) for s, k, m in zip(f["events/steps"][:], fx.strings(f["events/kind"]),
                                               fx.strings(f["events/message"])) if k == kind]


def nanscope(*args):
    return subprocess.run([os.environ["NANSCOPE_BINARY"], *args], capture_output=True, text=True, timeout=600)


def train(run_dir, steps, spoil=None, **options):
    """SGD on bn_mlp; spoil(step, x, y) may change a batch. Returns the state each step started from."""
    model = fx.bn_mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    started = {}
    with Recorder(run_dir, model, loss_name="cross_entropy", checkpoint_every=0, **options) as rec:
        for step in range(steps):
            x, y = fx.batch(step)
            if spoil:
                spoil(step, x, y)
            rec.begin_step(step, inputs=x, targets=y)
            started[step] = {k: v.clone() for k, v in model.state_dict().items()}
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            if rec.end_step(loss):
                opt.step()
    return started


class IncidentCapture(unittest.TestCase):
    def test_nonfinite_loss_writes_the_last_batches_and_the_state_before_them(self):
        with tempfile.TemporaryDirectory() as tmp:
            run = os.path.join(tmp, "run")

            def nan_at_10(step, x, y):
                if step == 10:
                    x[2, 1] = float("nan")
            started = train(run, 14, nan_at_10, batch_ring=4, spike_mads=None)

            # Anchors every 4 steps (0, 4, 8): the last 4 batches before the NaN (7..10) start
            # after anchor 4, so batches 4..10 and checkpoint 4 are written, and checkpoint 10.
            batches = stepped(os.path.join(run, "batches"))
            self.assertEqual(batches, list(range(4, 11)))
            self.assertEqual(stepped(os.path.join(run, "checkpoints"), ".form"), [4, 10])
            for step in batches:
                saved = torch.load(os.path.join(run, "batches", "step_%08d.pt" % step))
                x, y = fx.batch(step)
                if step == 10:
                    x[2, 1] = float("nan")
                self.assertTrue(torch.equal(saved["inputs"], x) or step == 10)
                self.assertTrue(torch.equal(saved["targets"], y))
                self.assertEqual(saved["loss"], "cross_entropy")
            self.assertTrue(torch.isnan(torch.load(os.path.join(run, "batches", "step_00000010.pt"))["inputs"]).any())
            checkpoint = torch.export.load(os.path.join(run, "checkpoints", "step_00000004.pt2"))
            for name, value in checkpoint.state_dict.items():
                self.assertTrue(torch.equal(value, started[4][name]), name)
            captures = events(run, "incident_capture")
            self.assertEqual(len(captures), 1)
            self.assertEqual(captures[0][0], 10)
            self.assertIn("batches 4..10", captures[0][1])
            self.assertIn("checkpoint 4", captures[0][1])

            replay = nanscope("replay", run, "--step", "4", "--json")
            self.assertEqual(replay.returncode, 0, replay.stderr)
            self.assertIsNone(json.loads(replay.stdout)["forward"]["first_nonfinite"])

            triage = nanscope("triage", run, "--step", "10", "--json")
            self.assertEqual(triage.returncode, 0, triage.stderr)
            report = json.loads(triage.stdout)
            self.assertTrue(all(r["ran"] for r in report["replays"]), report["replays"])
            earlier = next(r for r in report["replays"] if r["role"] == "earlier_checkpoint")
            self.assertEqual(earlier["checkpoint_step"], 4)
            # The NaN is in batch 10 alone: on the earlier state too, and no other batch has it.
            self.assertEqual(report["label"], "data")

    def test_loss_spike_is_captured_once(self):
        with tempfile.TemporaryDirectory() as tmp:
            run = os.path.join(tmp, "run")

            def spike_at_35(step, x, y):
                if step == 35:
                    y.copy_((y + 1) % fx.CLASSES)  # every label wrong
            train(run, 40, spike_at_35, batch_ring=4, spike_mads=10, spike_window=30)
            captures = events(run, "incident_capture")
            self.assertEqual([s for s, _ in captures], [35])
            self.assertIn("loss spike", captures[0][1])
            self.assertEqual(events(run, "skipped_step"), [])
            batches = stepped(os.path.join(run, "batches"))
            self.assertEqual(batches[-4:], [32, 33, 34, 35])
            # The state before the batches, and step 35's own (the weights its forward used).
            self.assertEqual(stepped(os.path.join(run, "checkpoints"), ".form"), [batches[0], 35])

    def test_a_capture_without_a_healthy_batch_saves_the_last_healthy_one(self):
        """Step 12's capture comes 2 steps after step 10's, so the ring writes no batches for it;
        the batch of step 11, healthy, is saved beside it so triage has one to compare with (a
        batch of another incident is no evidence about the state)."""
        with tempfile.TemporaryDirectory() as tmp:
            run = os.path.join(tmp, "run")

            def nan_at_10_and_12(step, x, y):
                if step in (10, 12):
                    x[2, 1] = float("nan")
            train(run, 14, nan_at_10_and_12, batch_ring=4, spike_mads=None)
            batches = stepped(os.path.join(run, "batches"))
            self.assertIn(11, batches)
            self.assertNotIn(13, batches)
            saved = torch.load(os.path.join(run, "batches", "step_00000011.pt"))
            x, y = fx.batch(11)
            self.assertTrue(torch.equal(saved["inputs"], x))
            self.assertTrue(torch.equal(saved["targets"], y))
            captures = dict(events(run, "incident_capture"))
            self.assertIn("batch 11, the last healthy step's", captures[12])
            self.assertNotIn("last healthy", captures[10], "the ring already wrote healthy batches 4..9")

    def test_without_the_ring_only_the_failing_step_is_saved(self):
        with tempfile.TemporaryDirectory() as tmp:
            run = os.path.join(tmp, "run")

            def nan_at_10(step, x, y):
                if step == 10:
                    x[2, 1] = float("nan")
            train(run, 12, nan_at_10, batch_ring=0)
            self.assertEqual(stepped(os.path.join(run, "batches")), [10])
            self.assertEqual(stepped(os.path.join(run, "checkpoints"), ".form"), [10])
            # Every capture says so, the ring or not (issue 24).
            self.assertEqual([s for s, _ in events(run, "incident_capture")], [10])
            self.assertIn("the run's first non-finite step", events(run, "incident_capture")[0][1])


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)

"""Models that do not script: the recorder traces them on the step's own batch, and nanscope
replays a traced checkpoint like a scripted one, down to the user's source line. A model that
neither scripts nor traces gets a state_dict, and nanscope says why it cannot replay and what
would make it replayable."""
import inspect
import json
import os
import subprocess
import sys
import tempfile
import unittest

import torch
import torch.nn as nn
import torch.nn.functional as F

import recorder_fixtures as fx
from nanscope_recorder import Recorder


class LogFeatures(nn.Module):
    def forward(self, x, **options):  # **options: TorchScript refuses it, a trace does not care
        return torch.log(x)  # log(0) is -inf


LOG_LINE = inspect.getsourcelines(LogFeatures.forward)[1] + 1


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.logf = LogFeatures()
        self.fc = nn.Linear(fx.FEATURES, fx.CLASSES)

    def forward(self, x, **options):
        return self.fc(self.logf(x) * x)


class Output:
    """A result object, as some model libraries return: a trace only returns tensors."""

    def __init__(self, logits):
        self.logits = logits


class ReturnsAnObject(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(fx.FEATURES, fx.CLASSES)

    def forward(self, x, **options):
        return Output(self.fc(x))


def train(run_dir, model, zero_at, steps=6, logits=lambda out: out, **options):
    torch.manual_seed(0)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    options.setdefault("checkpoint_form", "torchscript")  # the traced path; the recorder exports first
    with Recorder(run_dir, model, loss_name="cross_entropy", checkpoint_every=3, activations_every=2,
                  batch_ring=0, **options) as rec:
        for step in range(steps):
            x, y = fx.batch(step)
            x = x.abs() + 0.5
            if step == zero_at:
                x[5, 3] = 0.0
            rec.begin_step(step, inputs=x, targets=y)
            loss = F.cross_entropy(logits(model(x)), y)
            opt.zero_grad()
            loss.backward()
            if rec.end_step(loss):
                opt.step()


def nanscope(*args):
    return subprocess.run([os.environ["NANSCOPE_BINARY"], *args], capture_output=True, text=True, timeout=300)


def form(run_dir, step):
    with open(os.path.join(run_dir, "checkpoints", "step_%08d.form" % step)) as f:
        return f.read().splitlines()


class TracedCheckpoints(unittest.TestCase):
    def test_traced_checkpoint_replays_to_the_user_source_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            run = os.path.join(tmp, "run")
            model = Model()
            with self.assertRaises(Exception):
                torch.jit.script(model)
            train(run, model, zero_at=4)
            self.assertEqual(form(run, 0), ["traced"])
            self.assertEqual(form(run, 4), ["traced"])
            out = nanscope("replay", run, "--step", "4", "--json")
            self.assertEqual(out.returncode, 0, out.stderr)
            report = json.loads(out.stdout)
            culprit = report["forward"]["first_nonfinite"]
            self.assertEqual(culprit["op"], "aten::log")
            self.assertEqual(culprit["module"], "logf")
            self.assertTrue(culprit["source"].endswith("test_recorder_traced_replay.py:%d" % LOG_LINE),
                            culprit["source"])
            self.assertEqual(culprit["output"]["neginf"], 1)
            status, info = fx.nanscope_info(run)
            self.assertEqual(status, 0, info)
            self.assertEqual(info["checkpoint_forms"], {"0": "traced", "3": "traced", "4": "traced"})
            self.assertEqual(info["replayable_steps"], [4])

    def test_tracing_leaves_training_as_it_would_have_been(self):
        class DropoutBn(nn.Module):
            def __init__(self):
                super().__init__()
                self.bn = nn.BatchNorm1d(fx.FEATURES)
                self.drop = nn.Dropout(0.3)
                self.fc = nn.Linear(fx.FEATURES, fx.CLASSES)

            def forward(self, x, **options):
                return self.fc(self.drop(self.bn(x)))

        def final_state(recorded):
            torch.manual_seed(1)
            model = DropoutBn()
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            with tempfile.TemporaryDirectory() as tmp:
                rec = (Recorder(os.path.join(tmp, "run"), model, checkpoint_every=2, checkpoint_form="torchscript")
                       if recorded else None)
                for step in range(5):
                    x, y = fx.batch(step)
                    if rec:
                        rec.begin_step(step, inputs=x, targets=y)
                    loss = F.cross_entropy(model(x), y)
                    opt.zero_grad()
                    loss.backward()
                    if not rec or rec.end_step(loss):
                        opt.step()
                if rec:
                    rec.close()
                    self.assertEqual(form(os.path.join(tmp, "run"), 4), ["traced"])
            return model.state_dict()

        plain, recorded = final_state(False), final_state(True)
        for name, value in plain.items():
            self.assertTrue(torch.equal(value, recorded[name]), name)

    def test_model_that_neither_scripts_nor_traces_says_why_it_cannot_replay(self):
        with tempfile.TemporaryDirectory() as tmp:
            run = os.path.join(tmp, "run")
            # A lambda is no factory eager replay can import: nothing replays this run.
            train(run, ReturnsAnObject(), zero_at=None, steps=4, logits=lambda out: out.logits,
                  model_factory=lambda: ReturnsAnObject())
            # The loss is finite: save batch 3 by hand, as a user could, beside checkpoint 3.
            x, y = fx.batch(3)
            os.makedirs(os.path.join(run, "batches"), exist_ok=True)
            torch.save({"inputs": x, "targets": y, "step": 3}, os.path.join(run, "batches", "step_00000003.pt"))
            lines = form(run, 3)
            self.assertEqual(lines[0], "state_dict")
            self.assertIn("could not be scripted", lines[1])
            self.assertIn("nor traced", lines[1])
            self.assertEqual(set(torch.load(os.path.join(run, "checkpoints", "step_00000003.pt"))),
                             {"fc.weight", "fc.bias"})

            out = nanscope("replay", run, "--step", "3")
            self.assertNotEqual(out.returncode, 0)
            self.assertIn("cannot be replayed", out.stderr)
            self.assertIn("state_dict", out.stderr)
            self.assertIn("torch.jit.trace(model, inputs)", out.stderr)

            status, info = fx.nanscope_info(run)
            self.assertEqual(status, 0, info)
            self.assertEqual(info["replayable_steps"], [])
            self.assertEqual([entry["step"] for entry in info["not_replayable"]], [3])
            self.assertIn("nor traced", info["not_replayable"][0]["why"])
            self.assertTrue(any("replay is unavailable" in lack and "nor traced" in lack
                                for lack in info["source"]["lacks"]), info["source"]["lacks"])
            text = nanscope("info", run)
            self.assertEqual(text.returncode, 0, text.stderr)
            # By default the recorder names the model's class (its constructor takes no argument),
            # and the same checkpoint replays eagerly, its result object read for its tensor.
            eager_run = os.path.join(tmp, "eager")
            train(eager_run, ReturnsAnObject(), zero_at=None, steps=4, logits=lambda out: out.logits)
            os.makedirs(os.path.join(eager_run, "batches"), exist_ok=True)
            torch.save({"inputs": x, "targets": y, "step": 3}, os.path.join(eager_run, "batches", "step_00000003.pt"))
            eager = nanscope("replay", eager_run, "--step", "3", "--json")
            self.assertEqual(eager.returncode, 0, eager.stderr)
            report = json.loads(eager.stdout)
            self.assertEqual(report["loss_convention"], "named_loss")
            self.assertIsNone(report["forward"]["first_nonfinite"])
            self.assertEqual({op["module"] for op in report["forward"]["ops"]}, {"fc"})
            status, info = fx.nanscope_info(eager_run)
            self.assertEqual(info["replayable_steps"], [3])
            self.assertIn("not replayable: step 3", text.stdout)
            # Every checkpoint with its batch has the same reason: said once in full, the other
            # steps listed after it, not the reason again for each.
            steps = sorted({int(name[5:13]) for name in os.listdir(os.path.join(run, "checkpoints"))
                            if name.startswith("step_") and name.endswith(".pt")})
            self.assertGreater(len(steps), 1, steps)
            for step in steps:
                x, y = fx.batch(step)
                torch.save({"inputs": x, "targets": y, "step": step},
                           os.path.join(run, "batches", "step_%08d.pt" % step))
            text = nanscope("info", run)
            self.assertEqual(text.returncode, 0, text.stderr)
            lines = [line for line in text.stdout.splitlines() if line.startswith("not replayable:")]
            self.assertEqual(len(lines), 2, lines)
            self.assertTrue(lines[0].startswith("not replayable: step %d: checkpoint %d is a state_dict"
                                                % (steps[0], steps[0])), lines[0])
            self.assertIn("nor traced", lines[0])
            self.assertEqual(lines[1], "not replayable: step%s %s: the same, each for its own checkpoint"
                             % ("s" if len(steps) > 2 else "", ", ".join(str(s) for s in steps[1:])))


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)

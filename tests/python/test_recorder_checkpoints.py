"""The recorder's checkpoints: TorchScript that replays a NaN step, untouched by the recorder's
hooks, and a state_dict for models that do not script."""
import json
import os
import subprocess
import sys
import tempfile
import unittest
import warnings

import torch
import torch.nn.functional as F

from nanscope_recorder import Recorder

import recorder_fixtures as fx

NAN_AT = 6


class FinfoMask(torch.nn.Module):
    """Fails to script inside forward's body (torch.finfo, as Hugging Face masks do), and its trace
    cannot be saved (a Python autograd Function)."""

    def __init__(self, features=fx.FEATURES):  # an argument: no class to rebuild it from
        super().__init__()
        self.fc = torch.nn.Linear(features, fx.CLASSES)

    def forward(self, x):
        floor = torch.finfo(x.dtype).min
        return fx._PythonScale.apply(self.fc(x)).clamp(min=floor)


def checkpoint(run_dir, step):
    return os.path.join(run_dir, "checkpoints/step_%08d.pt" % step)


class ScriptedCheckpoints(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.run_dir = os.path.join(cls.tmp.name, "run")
        # Activations every step: the hooks are on the model in every step that saves a checkpoint.
        # TorchScript asked for: by default the recorder saves exported programs (ExportedCheckpoints).
        cls.applied, cls.model = fx.train(cls.run_dir, fx.bn_mlp(), 10, nan_at=NAN_AT,
                                          checkpoint_every=3, activations_every=1, checkpoint_form="torchscript")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_checkpoints_are_torchscript_despite_the_hooks(self):
        for step in (0, 3, NAN_AT, 9):
            model = torch.jit.load(checkpoint(self.run_dir, step))
            self.assertIsInstance(model, torch.jit.ScriptModule)
        with fx.open_run(self.run_dir) as f:
            self.assertEqual(f["activations/steps"][:].tolist(), list(range(10)))

    def test_the_model_keeps_no_recorder_hooks_and_still_scripts(self):
        for module in self.model.modules():
            self.assertEqual(len(module._forward_hooks), 0)
        torch.jit.script(self.model)

    def test_checkpoint_of_the_nan_step_replays_the_nan(self):
        model = torch.jit.load(checkpoint(self.run_dir, NAN_AT))
        batch = torch.load(os.path.join(self.run_dir, "batches/step_%08d.pt" % NAN_AT))
        out = model(batch["inputs"])
        # In training mode BatchNorm spreads the one NaN input through its batch statistics.
        self.assertTrue(torch.isnan(out).any())
        self.assertTrue(torch.isnan(F.cross_entropy(out, batch["targets"])))

    def test_checkpoint_holds_weights_and_buffers_before_the_step(self):
        model = torch.jit.load(checkpoint(self.run_dir, NAN_AT))
        buffers = dict(model.named_buffers())
        # The live model's running stats were poisoned by the NaN forward; the checkpoint's are not.
        self.assertFalse(torch.isfinite(self.model[1].running_mean).all())
        self.assertTrue(torch.isfinite(buffers["1.running_mean"]).all())
        self.assertTrue(torch.isfinite(buffers["1.running_var"]).all())
        self.assertEqual(int(buffers["1.num_batches_tracked"]), NAN_AT)
        # Checkpoint N holds the weights step N's forward used; the NaN step's update was skipped.
        with fx.open_run(self.run_dir) as f:
            norms = f["layers/param_norm"][:]
        for step in (NAN_AT, 9):
            saved = torch.jit.load(checkpoint(self.run_dir, step))
            for i, (name, p) in enumerate(saved.named_parameters()):
                self.assertAlmostEqual(p.norm().item(), float(norms[step, i]), places=4, msg=name)
        self.assertTrue((norms[NAN_AT] == norms[NAN_AT + 1]).all())
        self.assertFalse((norms[NAN_AT - 1] == norms[NAN_AT]).all())

    def test_replaying_a_regular_checkpoint_gives_the_logged_loss(self):
        model = torch.jit.load(checkpoint(self.run_dir, 3))
        x, y = fx.batch(3)
        with fx.open_run(self.run_dir) as f:
            logged = f["scalars/loss"][3]
        self.assertAlmostEqual(F.cross_entropy(model(x), y).item(), logged, places=5)


class StateDictFallback(unittest.TestCase):
    def test_model_that_neither_scripts_nor_traces_gets_state_dict_checkpoints(self):
        with tempfile.TemporaryDirectory() as tmp:
            run_dir = os.path.join(tmp, "run")
            model = fx.Untraceable()
            with self.assertRaises(Exception):
                torch.jit.script(model)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                # A lambda names no importable factory: no eager replay either.
                applied, _ = fx.train(run_dir, model, 6, nan_at=4, checkpoint_every=2,
                                      model_factory=lambda: fx.Untraceable(), checkpoint_form="torchscript")
            # Said at training time, once, with the reason and the fix (issue 24).
            said = [str(w.message) for w in caught if "cannot be replayed" in str(w.message)]
            self.assertEqual(len(said), 1, [str(w.message) for w in caught])
            self.assertIn("torch.jit.script", said[0])
            self.assertIn("a lambda", said[0])
            self.assertEqual([s for s, ok in applied.items() if not ok], [4])
            state = torch.load(checkpoint(run_dir, 4))
            self.assertEqual(set(state), set(model.state_dict()))
            # Pre-forward BatchNorm statistics, while the live ones hold the NaN.
            self.assertTrue(torch.isfinite(state["bn.running_mean"]).all())
            self.assertFalse(torch.isfinite(model.bn.running_mean).all())
            status, info = fx.nanscope_info(run_dir)
            self.assertEqual(status, 0, info)
            self.assertEqual(info["checkpoints"], [0, 2, 4])
            with fx.open_run(run_dir) as f:
                notes = [m for k, m in zip(fx.strings(f["events/kind"]), fx.strings(f["events/message"]))
                         if k == "note"]
            self.assertTrue(any("could not be scripted" in m and "nor traced" in m for m in notes), notes)

    def test_the_form_names_the_real_reason_after_the_user_tried_to_script(self):
        """A user who tried torch.jit.script(model) first (it failed) left the class half compiled;
        TorchScript's second answer is "Can't redefine method: forward", which says nothing. The
        form file and the warning name the first error, aten::finfo."""
        with tempfile.TemporaryDirectory() as tmp:
            run_dir = os.path.join(tmp, "run")
            model = FinfoMask()
            with self.assertRaises(RuntimeError) as first:
                torch.jit.script(model)
            self.assertIn("finfo", str(first.exception))
            with self.assertRaises(RuntimeError) as second:
                torch.jit.script(model)
            self.assertIn("redefine", str(second.exception), "what TorchScript says a second time")
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                fx.train(run_dir, model, 3, checkpoint_every=2, checkpoint_form="torchscript")
            with open(os.path.join(run_dir, "checkpoints", "step_00000000.form")) as f:
                form = f.read()
            self.assertTrue(form.startswith("state_dict\n"), form)
            self.assertIn("aten::finfo", form)
            self.assertNotIn("redefine", form)
            said = [str(w.message) for w in caught if "cannot be replayed" in str(w.message)]
            self.assertEqual(len(said), 1)
            self.assertIn("aten::finfo", said[0])
            self.assertEqual(type(model), FinfoMask, "the user's model keeps its class")

    def test_hooks_of_the_user_are_left_alone(self):
        with tempfile.TemporaryDirectory() as tmp:
            model = fx.bn_mlp()
            seen = []
            model[0].register_forward_hook(lambda m, i, o: seen.append(o.shape))
            rec = Recorder(os.path.join(tmp, "run"), model, checkpoint_every=1, activations_every=1,
                           checkpoint_form="torchscript")
            x, y = fx.batch(0)
            rec.begin_step(0, inputs=x, targets=y)
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            rec.end_step(loss)
            rec.close()
            # A Python hook keeps the model from scripting: the checkpoint is traced, and the
            # trace's forward pass calls the hook too. The hook stays on the model.
            with open(os.path.join(tmp, "run", "checkpoints", "step_00000000.form")) as f:
                self.assertEqual(f.readline().strip(), "traced")
            self.assertEqual(len(seen), 2)
            self.assertEqual(len(model[0]._forward_hooks), 1)


class DataDependentGate(torch.nn.Module):
    """A Python `if` on a tensor's value: torch.export cannot guard on it; TorchScript scripts it."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(fx.FEATURES, fx.CLASSES)

    def forward(self, x):
        if x.sum() > 0:
            return self.fc(x)
        return self.fc(-x)


class ExportedCheckpoints(unittest.TestCase):
    """By default checkpoints are torch.export archives (step_N.pt2), which nanscope replays
    without running code from the file; a model that does not export is TorchScript, and says why."""

    def test_checkpoints_are_exported_programs_that_replay_to_the_nan(self):
        with tempfile.TemporaryDirectory() as tmp:
            run_dir = os.path.join(tmp, "run")
            # Nothing reaches the user's console: no TorchScript deprecation warning, and no log line
            # of torch's (it warned of an archive name not ending in .pt2 while one was written).
            with warnings.catch_warnings(record=True) as caught, self.assertNoLogs("torch.export", level="WARNING"):
                warnings.simplefilter("always")
                fx.train(run_dir, fx.bn_mlp(), 7, nan_at=NAN_AT, checkpoint_every=3)
            self.assertFalse([w for w in caught if "jit" in str(w.message).lower()],
                             "no TorchScript deprecation warning reaches the user's console")
            names = sorted(os.listdir(os.path.join(run_dir, "checkpoints")))
            self.assertIn("step_%08d.pt2" % NAN_AT, names)
            self.assertFalse([n for n in names if n.endswith(".pt")], names)
            with open(os.path.join(run_dir, "checkpoints", "step_%08d.form" % NAN_AT)) as f:
                self.assertEqual(f.read(), "exported\n")
            program = torch.export.load(os.path.join(run_dir, "checkpoints", "step_%08d.pt2" % NAN_AT))
            self.assertTrue(torch.isfinite(program.state_dict["1.running_mean"]).all(),
                            "the checkpoint holds the buffers from before the step")
            out = subprocess.run([os.environ["NANSCOPE_BINARY"], "replay", run_dir, "--step", str(NAN_AT), "--json",
                                  "--bisect"], capture_output=True, text=True, timeout=300)
            self.assertEqual(out.returncode, 0, out.stderr)
            replay = json.loads(out.stdout)
            self.assertEqual(replay["forward"]["first_nonfinite"]["module"], "0")
            self.assertEqual(replay["bad_samples"], [2])

    def test_a_model_that_does_not_export_is_scripted_and_its_form_says_why(self):
        with tempfile.TemporaryDirectory() as tmp:
            run_dir = os.path.join(tmp, "run")
            fx.train(run_dir, DataDependentGate(), 3, checkpoint_every=2)
            with open(os.path.join(run_dir, "checkpoints", "step_00000000.form")) as f:
                word, why = f.read().split("\n")[:2]
            self.assertEqual(word, "scripted")
            self.assertTrue(why.startswith("not exported: torch.export failed ("), why)
            self.assertTrue(os.path.exists(os.path.join(run_dir, "checkpoints", "step_00000000.pt")))
            with fx.open_run(run_dir) as f:
                notes = [m for k, m in zip(fx.strings(f["events/kind"]), fx.strings(f["events/message"])) if k == "note"]
            self.assertTrue(any("does not export" in m for m in notes), notes)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)

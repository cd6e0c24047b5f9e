"""Eager replay (issue 25): a model that neither scripts nor traces gets state_dict checkpoints;
the recorder names how to rebuild it (model_factory), and `nanscope replay` runs the saved batch
through it in a Python child, with every module hooked and every torch call recorded, down to
the op, module (PyTorch's names) and source line that made the NaN. The same JSON as a TorchScript
replay, judged by the same code; bad factories, checkpoints and interpreters get one clear line."""
import json
import os
import stat
import subprocess
import sys
import tempfile
import textwrap
import unittest

import torch

from model_source_fixture import ModelSourceTestCase
from nanscope_recorder import Recorder

MODEL_SOURCE = textwrap.dedent('''
    import dataclasses
    from typing import Optional

    import torch
    from torch import nn
    import torch.nn.functional as F


    @dataclasses.dataclass
    class CausalLMOutput:                                  # Hugging Face's ModelOutput, in short
        loss: Optional[torch.Tensor] = None
        logits: Optional[torch.Tensor] = None


    class Attention(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.c_attn = nn.Linear(width, 3 * width)
            self.c_proj = nn.Linear(width, width)

        def forward(self, x, attention_mask):
            q, k, v = self.c_attn(x).chunk(3, dim=-1)
            t = x.shape[1]
            causal = torch.full((t, t), torch.finfo(x.dtype).min).triu(1)   # does not script
            scores = q @ k.transpose(-1, -2) / x.shape[-1] ** 0.5 + causal
            return self.c_proj(torch.softmax(scores, dim=-1) @ v)


    class Block(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.ln_1 = nn.LayerNorm(width)
            self.attn = Attention(width)

        def forward(self, x, attention_mask):
            return x + self.attn(self.ln_1(x), attention_mask)


    class TinyGPT(nn.Module):
        """Tied embeddings, a ModuleList, a dataclass output, the loss under `if labels is not None:`."""

        def __init__(self, vocab=20, width=8, depth=2):
            super().__init__()
            self.wte = nn.Embedding(vocab, width)
            self.h = nn.ModuleList([Block(width) for _ in range(depth)])
            self.lm_head = nn.Linear(width, vocab, bias=False)
            self.lm_head.weight = self.wte.weight

        def forward(self, input_ids, attention_mask=None, labels=None):
            x = self.wte(input_ids)
            for block in self.h:
                x = block(x, attention_mask)
            logits = self.lm_head(x)
            loss = None
            if labels is not None:
                per_token = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), reduction="none")
                mask = attention_mask.flatten().to(per_token.dtype)
                loss = (per_token * mask).sum() / mask.sum()              # 0/0 on a fully padded batch
            return CausalLMOutput(loss=loss, logits=logits)


    def build_tiny_gpt():
        return TinyGPT()
''')


def line_of(marker):
    return next(i for i, line in enumerate(MODEL_SOURCE.split("\n"), 1) if marker in line)


def nanscope(*args):
    return subprocess.run([os.environ["NANSCOPE_BINARY"], *args], capture_output=True, text=True, timeout=600)


class EagerReplay(ModelSourceTestCase):
    MODEL_SOURCE = MODEL_SOURCE
    MODULE_NAME = "eager_replay_models"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.run_dir = os.path.join(cls.tmp.name, "run")
        torch.manual_seed(0)
        model = cls.models.TinyGPT()
        cls.model = model
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        # Dict inputs (keyword arguments, as a Hugging Face batch) cannot be traced either.
        with Recorder(cls.run_dir, model, checkpoint_every=2, activations_every=1,
                      model_factory=cls.models.build_tiny_gpt) as rec:
            for step in range(6):
                g = torch.Generator().manual_seed(step)
                ids = torch.randint(0, 20, (2, 5), generator=g)
                mask = torch.ones(2, 5, dtype=torch.long)
                if step == 5:
                    mask.zero_()  # every token padding
                batch = {"input_ids": ids, "attention_mask": mask, "labels": ids}
                rec.begin_step(step, inputs=batch)
                out = model(**batch)
                opt.zero_grad()
                out.loss.backward()
                if rec.end_step(out.loss):
                    opt.step()

    def test_the_recorder_names_the_factory_and_saves_state_dicts(self):
        with open(os.path.join(self.run_dir, "checkpoints", "step_00000005.form")) as f:
            self.assertTrue(f.read().startswith("state_dict\n"))
        import h5py
        with h5py.File(os.path.join(self.run_dir, "run.h5"), "r") as f:
            factory = f.attrs["model_factory"]
            factory = factory.decode() if isinstance(factory, bytes) else factory
        self.assertEqual(factory, "eager_replay_models:build_tiny_gpt")

    def test_replays_down_to_the_division_inside_if_labels(self):
        out = nanscope("replay", self.run_dir, "--step", "5", "--json")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("eagerly", out.stderr, "it says it runs the model's Python code")
        report = json.loads(out.stdout)
        self.assertIsNone(report["loss"], "a NaN loss is null in the JSON")
        self.assertEqual(report["loss_convention"], "in_forward")
        culprit = report["forward"]["first_nonfinite"]
        self.assertIsNotNone(culprit)
        self.assertEqual(culprit["op"], "aten::div")
        self.assertEqual(culprit["module"], "")
        self.assertEqual(culprit["source"], "eager_replay_models.py:%d" % line_of("0/0 on a fully padded"))
        self.assertIn("mask.sum()", culprit["code"])
        modules = {op["module"] for op in report["forward"]["ops"]}
        self.assertIn("h.0.attn.c_attn", modules, "PyTorch's names, ModuleList index included")
        self.assertIn("h.1.ln_1", modules)
        self.assertTrue(any("eager replay" in note for note in report["notes"]), report["notes"])
        # The finfo.min mask is a constant: no float16 finding points at it.
        for finding in report["findings"]:
            op = report["forward"]["ops"][finding["op_index"]]
            self.assertNotIn(op["op"], ("aten::full", "aten::triu"), finding["cause"])
        text = nanscope("replay", self.run_dir, "--step", "5")
        self.assertEqual(text.returncode, 0, text.stderr)
        self.assertIn("First non-finite value: op", text.stdout)
        self.assertNotIn("The forward pass is finite", text.stdout)

    def test_a_healthy_step_replays_finite_with_the_logged_loss(self):
        out = nanscope("replay", self.run_dir, "--step", "4", "--json")
        self.assertEqual(out.returncode, 0, out.stderr)
        report = json.loads(out.stdout)
        self.assertIsNone(report["forward"]["first_nonfinite"])
        import h5py
        with h5py.File(os.path.join(self.run_dir, "run.h5"), "r") as f:
            logged = dict(zip(f["scalars/steps"][:], f["scalars/loss"][:]))[4]
        self.assertAlmostEqual(report["loss"], float(logged), places=5)
        grads = [p for p in report["backward"]["params"] if p["grad"]]
        self.assertTrue(grads, "backward ran and gave the parameters gradients")

    def test_the_layer_filter_takes_pytorch_names(self):
        out = nanscope("replay", self.run_dir, "--step", "4", "--json", "--layer", "h.1")
        self.assertEqual(out.returncode, 0, out.stderr)
        modules = {op["module"] for op in json.loads(out.stdout)["forward"]["ops"]}
        self.assertTrue(modules and all(m.startswith("h.1") for m in modules), modules)

    def test_triage_works_on_eager_checkpoints(self):
        out = nanscope("triage", self.run_dir, "--step", "5", "--json")
        self.assertEqual(out.returncode, 0, out.stderr)
        report = json.loads(out.stdout)
        self.assertTrue(any(r["ran"] for r in report["replays"]), report["replays"])

    # ---------------------------------------------------------------- bad input

    def test_a_factory_that_does_not_import_is_named(self):
        out = nanscope("replay", self.run_dir, "--step", "4", "--model-factory", "no_such_package.models:build")
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("no_such_package", out.stderr)
        self.assertNotIn("Traceback", out.stderr)

    def test_a_checkpoint_that_does_not_fit_the_model_is_named(self):
        out = nanscope("replay", self.run_dir, "--step", "4", "--model-factory", "torch.nn:Identity")
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("does not fit the model", out.stderr)
        self.assertIn("unexpected", out.stderr)

    def test_a_python_without_torch_is_named(self):
        # The real interpreter without its site-packages (-S): no torch there.
        wrapper = os.path.join(self.tmp.name, "python-without-torch")
        with open(wrapper, "w") as f:
            f.write("#!/bin/sh\nexec %s -S \"$@\"\n" % sys.executable)
        os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IEXEC)
        out = nanscope("replay", self.run_dir, "--step", "4", "--python", wrapper)
        self.assertNotEqual(out.returncode, 0)
        self.assertRegex(out.stderr, "cannot import (numpy|torch)|has no torch")
        self.assertIn("--python", out.stderr, "and what to do about it")
        missing = nanscope("replay", self.run_dir, "--step", "4", "--python", "/nonexistent/python3")
        self.assertNotEqual(missing.returncode, 0)
        self.assertIn("/nonexistent/python3", missing.stderr)


class EagerMatchesTorchScript(unittest.TestCase):
    """A check of the TorchScript replay: torchvision's ResNet-18, scripted, with a NaN pixel. The
    eager replay of the same weights and batch names the same first op and module."""

    def test_resnet18_first_nonfinite_module_agrees(self):
        torchvision = __import__("torchvision")
        torch.manual_seed(0)
        model = torchvision.models.resnet18(num_classes=10)
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "checkpoints"))
            os.makedirs(os.path.join(tmp, "batches"))
            ck = os.path.join(tmp, "checkpoints", "step_00000001.pt")
            torch.jit.script(model).save(ck)
            x = torch.randn(2, 3, 32, 32)
            x[1, 0, 5, 5] = float("nan")
            torch.save({"inputs": x, "targets": torch.tensor([1, 2]), "loss": "cross_entropy", "step": 1},
                       os.path.join(tmp, "batches", "step_00000001.pt"))
            scripted = nanscope("replay", tmp, "--step", "1", "--json")
            self.assertEqual(scripted.returncode, 0, scripted.stderr)
            eager = nanscope("replay", tmp, "--step", "1", "--json", "--eager", "--model-factory",
                             "torchvision.models:resnet18", "--python", sys.executable)
            # resnet18() builds 1000 classes: the checkpoint's fc of 10 does not fit, and it says so.
            self.assertNotEqual(eager.returncode, 0)
            self.assertIn("fc.weight", eager.stderr)
            factory_dir = os.path.join(tmp, "factory")
            os.makedirs(factory_dir)
            with open(os.path.join(factory_dir, "resnet_factory.py"), "w") as f:
                f.write("import torchvision\n\ndef build():\n    return torchvision.models.resnet18(num_classes=10)\n")
            eager = subprocess.run([os.environ["NANSCOPE_BINARY"], "replay", tmp, "--step", "1", "--json", "--eager",
                                    "--model-factory", "resnet_factory:build", "--python", sys.executable],
                                   capture_output=True, text=True,
                                   timeout=600, cwd=factory_dir,
                                   env=dict(os.environ, PYTHONPATH=factory_dir + os.pathsep + os.environ["PYTHONPATH"]))
            self.assertEqual(eager.returncode, 0, eager.stderr)
            a = json.loads(scripted.stdout)["forward"]["first_nonfinite"]
            b = json.loads(eager.stdout)["forward"]["first_nonfinite"]
            self.assertEqual(a["module"], "conv1")
            self.assertEqual(b["module"], "conv1")
            self.assertEqual(b["op"], "aten::conv2d")


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)

"""Replay sees every op the forward runs, inside `if` and loop blocks too (issue 25). A GPT-style
language model computes its loss as Hugging Face models do, under `if labels is not None:`, as a
masked mean; a fully padded batch makes it 0/0. Replay must name that division, its module and
its source line, never "the forward pass is finite" beside a NaN loss; ops of a ModuleList run
in a `for` loop are replayed too."""
import json
import os
import subprocess
import sys
import textwrap
import unittest

from model_source_fixture import ModelSourceTestCase

import torch

MODEL_SOURCE = textwrap.dedent('''
    from typing import Dict, Optional

    import torch
    from torch import nn
    import torch.nn.functional as F


    class Block(nn.Module):
        def __init__(self, width: int):
            super().__init__()
            self.ln = nn.LayerNorm(width)
            self.fc = nn.Linear(width, width)

        def forward(self, x):
            return x + torch.tanh(self.fc(self.ln(x)))


    class MaskedLoss(nn.Module):
        def forward(self, logits, labels, mask):
            per_token = F.cross_entropy(logits.transpose(1, 2), labels, reduction="none")
            total = (per_token * mask).sum()
            return total / mask.sum()                          # 0/0 on a fully padded batch


    class TinyLM(nn.Module):
        def __init__(self, vocab: int = 20, width: int = 8, depth: int = 2):
            super().__init__()
            self.wte = nn.Embedding(vocab, width)
            self.h = nn.ModuleList([Block(width) for _ in range(depth)])
            self.lm_head = nn.Linear(width, vocab, bias=False)
            self.criterion = MaskedLoss()

        def forward(self, input_ids, attention_mask, labels: Optional[torch.Tensor] = None) -> Dict[str, torch.Tensor]:
            x = self.wte(input_ids)
            for block in self.h:
                x = block(x)
            logits = self.lm_head(x)
            out = {"logits": logits}
            if labels is not None:
                out["loss"] = self.criterion(logits, labels, attention_mask.to(logits.dtype))
            return out


    class MaskedAttentionLM(nn.Module):
        """Hugging Face's causal mask: finfo.min where a token may not look (traces, does not script)."""

        def __init__(self, vocab: int = 20, width: int = 8):
            super().__init__()
            self.wte = nn.Embedding(vocab, width)
            self.qkv = nn.Linear(width, 3 * width)
            self.lm_head = nn.Linear(width, vocab)

        def forward(self, input_ids):
            x = self.wte(input_ids)
            q, k, v = self.qkv(x).chunk(3, dim=-1)
            t = input_ids.shape[1]
            mask = torch.full((t, t), torch.finfo(x.dtype).min).triu(1)
            scores = q @ k.transpose(-1, -2) / 8 ** 0.5 + mask
            return self.lm_head(torch.softmax(scores, dim=-1) @ v).flatten(0, 1)


    class Looped(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x, steps: int = 3):
            for i in range(3):
                x = torch.log(self.fc(x))                      # log of a negative, once it runs
            return x
''')


def line_of(marker):
    """The line of MODEL_SOURCE holding `marker`, as TorchScript numbers it (from 1)."""
    return next(i for i, line in enumerate(MODEL_SOURCE.split("\n"), 1) if marker in line)


class ReplayControlFlow(ModelSourceTestCase):
    MODEL_SOURCE = MODEL_SOURCE
    MODULE_NAME = "control_flow_models"

    def replay(self, module, inputs, name, targets=None, loss=None, traced=False):
        run = os.path.join(self.tmp.name, name)
        os.makedirs(os.path.join(run, "checkpoints"))
        os.makedirs(os.path.join(run, "batches"))
        saved = torch.jit.trace(module, inputs) if traced else torch.jit.script(module)
        saved.save(os.path.join(run, "checkpoints", "step_00000003.pt"))
        batch = {"inputs": inputs, "step": 3}
        if targets is not None:
            batch["targets"] = targets
            batch["loss"] = loss
        torch.save(batch, os.path.join(run, "batches", "step_00000003.pt"))
        out = subprocess.run([os.environ["NANSCOPE_BINARY"], "replay", run, "--step", "3", "--json"],
                             capture_output=True, text=True, timeout=300)
        self.assertEqual(out.returncode, 0, out.stderr)
        text = subprocess.run([os.environ["NANSCOPE_BINARY"], "replay", run, "--step", "3"],
                              capture_output=True, text=True, timeout=300)
        return json.loads(out.stdout), text.stdout

    def test_loss_under_if_labels_is_not_none(self):
        torch.manual_seed(0)
        model = self.models.TinyLM()
        ids = torch.randint(0, 20, (2, 5))
        mask = torch.zeros(2, 5, dtype=torch.long)  # every token padding
        self.assertTrue(torch.isnan(torch.jit.script(model)(ids, mask, ids)["loss"]), "PyTorch agrees: 0/0")
        report, text = self.replay(model, [ids, mask, ids], "masked")
        self.assertEqual(report["loss_convention"], "in_forward")
        culprit = report["forward"]["first_nonfinite"]
        self.assertIsNotNone(culprit, "the division inside `if labels is not None:` was not captured")
        self.assertEqual(culprit["op"], "aten::div")
        self.assertEqual(culprit["module"], "criterion")
        self.assertTrue(culprit["source"].endswith("control_flow_models.py:%d" % line_of("0/0 on a fully padded")), culprit["source"])
        self.assertIn("mask.sum()", culprit["code"])
        ops = {op["op"] for op in report["forward"]["ops"]}
        self.assertIn("aten::cross_entropy_loss", ops, "the loss ops inside the if block")
        self.assertNotIn("The forward pass is finite", text)
        # The ModuleList's blocks, run by a `for` loop that TorchScript unrolls, are replayed too,
        # under PyTorch's names.
        modules = {op["module"] for op in report["forward"]["ops"]}
        self.assertIn("h.0.fc", modules)
        self.assertIn("h.1.ln", modules)

    def test_each_loop_iteration_is_a_row(self):
        torch.manual_seed(1)
        model = self.models.Looped()
        with torch.no_grad():
            model.fc.weight.copy_(torch.eye(4))
            model.fc.bias.fill_(-2.0)  # x - 2: negative for inputs below 2, so log gives NaN
        x = torch.full((3, 4), 10.0)   # log(8) = 2.08, log(0.08) < 0, then log of a negative
        report, text = self.replay(model, x, "looped", targets=torch.zeros(3, 4), loss="mse")
        logs = [op for op in report["forward"]["ops"] if op["op"] == "aten::log"]
        self.assertEqual([op.get("iteration") for op in logs], [0, 1, 2], "one row per iteration")
        culprit = report["forward"]["first_nonfinite"]
        self.assertEqual(culprit["op"], "aten::log")
        self.assertEqual(culprit.get("iteration"), 2, "the third iteration made the NaN")
        self.assertTrue(culprit["source"].endswith("control_flow_models.py:%d" % line_of("log of a negative")), culprit["source"])
        self.assertIn("loop iteration 2", text)


class ReplayModuleNames(ModelSourceTestCase):
    """Module paths are PyTorch's named_modules() names: no 'SELF', ModuleList indices kept; and
    findings are about the data, not a finfo.min mask."""
    MODEL_SOURCE = MODEL_SOURCE
    MODULE_NAME = "control_flow_models_names"
    replay = ReplayControlFlow.replay

    def test_torchvision_resnet_names_its_modules_as_pytorch_does(self):
        try:
            import torchvision
        except ImportError:
            self.skipTest("python3-torchvision is not installed (./setup.sh installs it)")
        torch.manual_seed(0)
        model = torchvision.models.resnet18(num_classes=10)
        x = torch.randn(2, 3, 32, 32)
        x[1, 0, 3, 3] = float("inf")  # one sample's pixel
        report, text = self.replay(model, x, "resnet", targets=torch.tensor([1, 2]), loss="cross_entropy")
        modules = [op["module"] for op in report["forward"]["ops"]]
        self.assertFalse([m for m in modules if "SELF" in m], "TorchScript's method frames leaked into the names")
        names = {name for name, _ in model.named_modules()}
        self.assertFalse([m for m in modules if m and m not in names], "every module path is PyTorch's")
        self.assertIn("layer1.0.conv1", modules)
        self.assertEqual(report["forward"]["first_nonfinite"]["module"], "conv1")
        self.assertEqual(report["forward"]["first_nonfinite"]["op"], "aten::conv2d")

    def test_modulelist_blocks_keep_their_index(self):
        torch.manual_seed(0)
        model = self.models.TinyLM()
        ids = torch.randint(0, 20, (2, 5))
        report, _ = self.replay(model, [ids, torch.ones(2, 5, dtype=torch.long), ids], "blocks")
        modules = {op["module"] for op in report["forward"]["ops"]}
        self.assertIn("h.0.fc", modules)
        self.assertIn("h.1.ln", modules)
        layer = subprocess.run([os.environ["NANSCOPE_BINARY"], "replay", os.path.join(self.tmp.name, "blocks"),
                                "--step", "3", "--json", "--layer", "h.1"], capture_output=True, text=True, timeout=300)
        listed = {op["module"] for op in json.loads(layer.stdout)["forward"]["ops"]}
        self.assertTrue(listed and all(m.startswith("h.1") for m in listed), listed)

    def test_a_finfo_min_mask_raises_no_precision_finding(self):
        torch.manual_seed(0)
        model = self.models.MaskedAttentionLM()
        ids = torch.randint(0, 20, (2, 6))
        report, _ = self.replay(model, ids, "masked-attention", targets=torch.randint(0, 20, (12,)),
                                loss="cross_entropy", traced=True)
        signals = [f["signal"] for f in report["forward"].get("findings", report.get("findings", []))]
        self.assertFalse(signals, "the finfo.min mask is not a float16 or attention problem of the data")
        full = [op for op in report["forward"]["ops"] if op["op"] == "aten::full"]
        self.assertTrue(full and all(op.get("from_data") is False for op in full), full)
        # A traced op's code is its source line's text, not the trace's frame ("model.py(58): forward").
        self.assertIn("torch.full(", full[0]["code"])
        self.assertTrue(full[0]["source"].endswith(".py:%d" % line_of("torch.full((t, t)")), full[0]["source"])


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)

"""Replay signatures of instability that has not happened yet: a softmax over attention logits
that have grown (its max |input| and the entropy of its rows), the float16 headroom of the op
that made them, log Z of the final logits, each op's dynamic range, and a loss computed in low
precision. Each figure is checked against PyTorch computing the same thing here."""
import json
import math
import os
import subprocess
import sys
import textwrap
import unittest

from model_source_fixture import ModelSourceTestCase

import torch

MODEL_SOURCE = textwrap.dedent('''
    import torch
    from torch import nn


    class Attention(nn.Module):
        def __init__(self, scale: float):
            super().__init__()
            self.q = nn.Linear(8, 8)
            self.k = nn.Linear(8, 8)
            self.scale = scale

        def forward(self, x):
            scores = torch.matmul(self.q(x), self.k(x).transpose(1, 2)) * self.scale   # line 14
            weights = torch.softmax(scores, dim=-1)
            return torch.matmul(weights, x)


    class Model(nn.Module):
        def __init__(self, scale: float):
            super().__init__()
            self.attn = Attention(scale)
            self.head = nn.Linear(8, 5)

        def forward(self, x):
            return self.head(self.attn(x).mean(1))


    class KnownValues(nn.Module):
        def forward(self, x):
            return x * 2.0


    class LossInForward(nn.Module):
        def __init__(self, cast: bool):
            super().__init__()
            self.head = nn.Linear(8, 5)
            self.cast = cast

        def forward(self, x, labels):
            logits = self.head(x)
            if self.cast:
                logits = logits.float()
            return torch.nn.functional.cross_entropy(logits, labels)
''')

FLOAT16_MAX = 65504.0


class ReplaySignatures(ModelSourceTestCase):
    MODEL_SOURCE = MODEL_SOURCE
    MODULE_NAME = "signature_models"

    def replay(self, name, model, batch, extra=()):
        run = os.path.join(self.tmp.name, name)
        os.makedirs(os.path.join(run, "checkpoints"))
        os.makedirs(os.path.join(run, "batches"))
        torch.jit.script(model).save(os.path.join(run, "checkpoints", "step_00000002.pt"))
        torch.save(dict(batch, step=2), os.path.join(run, "batches", "step_00000002.pt"))
        out = subprocess.run([os.environ["NANSCOPE_BINARY"], "replay", run, "--step", "2", "--json", *extra],
                             capture_output=True, text=True, timeout=300)
        self.assertEqual(out.returncode, 0, out.stderr)
        return json.loads(out.stdout)

    def attention_replay(self, name, scale):
        torch.manual_seed(1)
        model = self.models.Model(scale)
        x = torch.randn(4, 6, 8)
        targets = torch.randint(0, 5, (4,))
        report = self.replay(name, model, {"inputs": x, "targets": targets, "loss": "cross_entropy"})
        ops = report["forward"]["ops"]
        softmax = next(op for op in ops if op["op"] == "aten::softmax")
        scaled = next(op for op in ops if op["op"] == "aten::mul" and op["module"] == "attn")
        with torch.no_grad():
            scores = torch.matmul(model.attn.q(x), model.attn.k(x).transpose(1, 2)) * scale
            logits = model(x)
        return report, softmax, scaled, scores, logits

    def test_grown_attention_logits_show_in_the_softmax_and_the_headroom_before_it(self):
        report, softmax, scaled, scores, logits = self.attention_replay("grown", 3000.0)
        absmax = float(scores.abs().max())
        self.assertGreater(absmax, 4096, "the fixture needs logits within 4 bits of float16's limit")
        # The softmax: its max |input| and the entropy of its rows, as PyTorch computes them.
        self.assertAlmostEqual(softmax["softmax"]["input_absmax"], absmax, delta=1e-4 * absmax)
        p = torch.softmax(scores.double(), dim=-1)
        entropy = float(-(torch.where(p > 0, p * p.log(), torch.zeros_like(p))).sum(-1).mean())
        self.assertAlmostEqual(softmax["softmax"]["entropy"], entropy, delta=1e-3)
        self.assertLess(softmax["softmax"]["entropy"], 0.2 * math.log(6), "rows near one-hot")
        self.assertAlmostEqual(softmax["softmax"]["uniform_entropy"], math.log(6), places=9)
        # The op before it, in float16 terms: within a few bits of 65504 though nothing overflowed yet.
        self.assertEqual(scaled["index"], softmax["index"] - 1)
        self.assertAlmostEqual(scaled["headroom"]["float16_bits"], math.log2(FLOAT16_MAX / absmax), delta=1e-3)
        self.assertLess(scaled["headroom"]["float16_bits"], 4)
        self.assertGreater(scaled["headroom"]["bfloat16_bits"], 100)
        self.assertIsNone(report["forward"]["first_nonfinite"], "no overflow has happened yet")
        findings = {f["signal"]: f for f in report["findings"]}
        self.assertIn("attention_logits", findings)
        self.assertEqual(findings["attention_logits"]["op_index"], softmax["index"])
        self.assertIn("QK normalisation", findings["attention_logits"]["suggestion"])
        self.assertIn("z-loss", findings["attention_logits"]["suggestion"])
        self.assertIn("float16_headroom", findings)
        self.assertLessEqual(findings["float16_headroom"]["op_index"], scaled["index"])
        # log Z of the final logits, against torch.logsumexp.
        log_z = torch.logsumexp(logits.double(), dim=-1)
        self.assertEqual(report["logits"]["rows"], 4)
        self.assertAlmostEqual(report["logits"]["log_z_mean"], float(log_z.mean()), delta=1e-4)
        self.assertAlmostEqual(report["logits"]["log_z_max"], float(log_z.max()), delta=1e-4)
        self.assertAlmostEqual(report["logits"]["log_z_min"], float(log_z.min()), delta=1e-4)

    def test_scaled_attention_raises_no_finding(self):
        report, softmax, scaled, _, _ = self.attention_replay("healthy", 8 ** -0.5)
        self.assertGreater(softmax["softmax"]["entropy"], 0.5 * math.log(6))
        self.assertGreater(scaled["headroom"]["float16_bits"], 10)
        self.assertEqual(report["findings"], [])

    def test_dynamic_range_of_a_known_tensor(self):
        x = torch.tensor([[0.0, 1e-3, -0.5, 256.0], [3.0, 0.0, -7.0, 2e-2]])
        report = self.replay("known", self.models.KnownValues(), {"inputs": x})
        doubled = next(op for op in report["forward"]["ops"] if op["op"] == "aten::mul")
        y = x * 2.0
        nonzero = y[y != 0].abs()
        self.assertAlmostEqual(doubled["output"]["nonzero_absmin"], float(nonzero.min()), places=9)
        self.assertAlmostEqual(doubled["headroom"]["dynamic_range_bits"], math.log2(512.0 / float(nonzero.min())), places=6)
        self.assertAlmostEqual(doubled["headroom"]["float16_bits"], math.log2(FLOAT16_MAX / 512.0), places=9)

    def test_loss_computed_in_low_precision(self):
        torch.manual_seed(2)
        batch = {"inputs": [torch.randn(6, 8), torch.randint(0, 5, (6,))]}
        report = self.replay("low-precision-loss", self.models.LossInForward(False), batch, ["--dtype", "bfloat16"])
        self.assertEqual(report["loss_convention"], "in_forward")
        self.assertEqual(report["loss_op"]["op"], "aten::cross_entropy_loss")
        findings = {f["signal"]: f for f in report["findings"]}
        self.assertIn("loss_in_low_precision", findings)
        self.assertIn("float32", findings["loss_in_low_precision"]["suggestion"])
        # The same model casting its logits to float32 before the loss: no finding.
        cast = self.replay("float32-loss", self.models.LossInForward(True), batch, ["--dtype", "bfloat16"])
        self.assertNotIn("loss_in_low_precision", {f["signal"] for f in cast["findings"]})


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)

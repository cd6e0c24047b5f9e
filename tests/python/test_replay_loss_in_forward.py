"""Replay of models that compute their loss in forward (the Hugging Face convention: forward(x, labels)
returns the loss, and the saved batch holds the inputs [x, y] and no targets). The log(0) inside the
loss is found as the op, its module, its source line and the sample, whether forward returns the
scalar, a dict or a tuple; a loss whose forward is finite and whose backward is not (sqrt(0)) is
traced in backward; a forward that returns no loss gets a clear note."""
import json
import os
import subprocess
import sys
import textwrap
import unittest

from model_source_fixture import ModelSourceTestCase

import torch

MODEL_SOURCE = textwrap.dedent('''
    from typing import Dict, NamedTuple, Tuple

    import torch
    from torch import nn


    class NegativeLogLikelihood(nn.Module):
        def forward(self, logits, labels):
            probs = torch.softmax(logits, dim=-1)
            picked = probs.gather(1, labels.unsqueeze(1)).squeeze(1)
            return -torch.log(picked).mean()          # line 12: log(0) where a probability underflowed


    class RootLikelihood(nn.Module):
        def forward(self, logits, labels):
            probs = torch.softmax(logits, dim=-1)
            picked = probs.gather(1, labels.unsqueeze(1)).squeeze(1)
            root = torch.sqrt(picked)                 # line 19: sqrt(0) is 0, its derivative is not finite
            return -root.mean()


    class Output(NamedTuple):
        loss: torch.Tensor
        logits: torch.Tensor


    class ScalarModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(6, 4)
            self.criterion = NegativeLogLikelihood()

        def forward(self, x, labels):
            return self.criterion(self.body(x), labels)


    class DictModel(nn.Module):
        def __init__(self, root: bool = False):
            super().__init__()
            self.body = nn.Linear(6, 4)
            self.criterion = RootLikelihood() if root else NegativeLogLikelihood()

        def forward(self, x, labels) -> Dict[str, torch.Tensor]:
            logits = self.body(x)
            return {"logits": logits, "loss": self.criterion(logits, labels)}


    class TupleModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(6, 4)
            self.criterion = NegativeLogLikelihood()

        def forward(self, x, labels) -> Tuple[torch.Tensor, torch.Tensor]:
            logits = self.body(x)
            return self.criterion(logits, labels), logits


    class NamedTupleModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(6, 4)
            self.criterion = NegativeLogLikelihood()

        def forward(self, x, labels) -> Output:
            logits = self.body(x)
            return Output(logits=logits, loss=self.criterion(logits, labels))


    class LogitsOnlyModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(6, 4)

        def forward(self, x, labels):
            return self.body(x)
''')

BAD_SAMPLE = 5


class ReplayLossInForward(ModelSourceTestCase):
    MODEL_SOURCE = MODEL_SOURCE
    MODULE_NAME = "hf_style_models"

    def batch_for(self, model):
        """Inputs where one sample's logits are so far apart that the probability of its label
        underflows to exactly 0 in float32. The logits are linear in the input, so the extreme
        sample is scaled until its gap passes float32's ~104 (exp(-104) is below the smallest
        denormal): whatever the layer's initial weights, the fixture has its underflow."""
        torch.manual_seed(0)
        x = torch.rand(8, 6)
        extreme = torch.tensor([400.0, -300.0, 250.0, -500.0, 350.0, -200.0])
        for scale in (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0):
            x[BAD_SAMPLE] = extreme * scale
            with torch.no_grad():
                probs = torch.softmax(model.body(x), dim=-1)
            labels = torch.argmax(probs, dim=-1)
            labels[BAD_SAMPLE] = int(torch.argmin(probs[BAD_SAMPLE]))
            if float(probs[BAD_SAMPLE, labels[BAD_SAMPLE]]) == 0.0:
                break
        self.assertEqual(float(probs[BAD_SAMPLE, labels[BAD_SAMPLE]]), 0.0, "the fixture needs an underflow")
        self.assertTrue(torch.isfinite(probs).all(), "only the one probability underflows, nothing overflows")
        return x, labels

    def replay(self, model, name, extra=()):
        run = os.path.join(self.tmp.name, name)
        os.makedirs(os.path.join(run, "checkpoints"))
        os.makedirs(os.path.join(run, "batches"))
        scripted = torch.jit.script(model)
        scripted.save(os.path.join(run, "checkpoints", "step_00000007.pt"))
        x, labels = self.batch_for(model)
        # The Hugging Face way: the labels are an input of forward, and there are no targets.
        torch.save({"inputs": [x, labels], "step": 7}, os.path.join(run, "batches", "step_00000007.pt"))
        out = subprocess.run([os.environ["NANSCOPE_BINARY"], "replay", run, "--step", "7", "--json", *extra],
                             capture_output=True, text=True, timeout=300)
        self.assertEqual(out.returncode, 0, out.stderr)
        return json.loads(out.stdout), scripted, x, labels

    def assert_log_zero_found(self, report):
        self.assertEqual(report["loss_convention"], "in_forward")
        self.assertIsNone(report["loss"], "the loss is -log(0) = inf, written as null")
        culprit = report["forward"]["first_nonfinite"]
        self.assertEqual(culprit["op"], "aten::log")
        self.assertEqual(culprit["module"], "criterion")
        self.assertTrue(culprit["source"].endswith("hf_style_models.py:12"), culprit["source"])
        self.assertEqual(culprit["inputs"][0]["min"], 0.0, "the probability that underflowed")
        self.assertEqual(culprit["output"]["neginf"], 1, "one sample's log(0)")
        self.assertEqual(report["bad_samples"], [BAD_SAMPLE])
        # Backward ran from that loss: the parameters have gradients, and they are not finite.
        body = next(p for p in report["backward"]["params"] if p["name"] == "body.weight")
        self.assertTrue(body["grad"], "backward reached the model's parameters")
        self.assertGreater(body["grad"]["nan"] + body["grad"]["inf"], 0)

    def test_scalar_loss(self):
        report, scripted, x, labels = self.replay(self.models.ScalarModel(), "scalar", ["--bisect"])
        self.assert_log_zero_found(report)
        self.assertEqual(report["loss_from"], "forward(x, labels)")
        self.assertTrue(torch.isinf(scripted(x, labels)), "PyTorch agrees: the loss is inf")

    def test_dict_with_a_loss_entry(self):
        report, _, x, _ = self.replay(self.models.DictModel(), "dict", ["--bisect"])
        self.assert_log_zero_found(report)
        self.assertEqual(report["loss_from"], "forward(x, labels)['loss']")
        # log Z of the logits the model returned.
        self.assertEqual(report["logits"]["from"], "forward's output['logits']")

    def test_tuple_with_the_loss_first(self):
        report, _, _, _ = self.replay(self.models.TupleModel(), "tuple", ["--bisect"])
        self.assert_log_zero_found(report)
        self.assertEqual(report["loss_from"], "forward(x, labels)[0]")

    def test_named_tuple_with_a_loss_field(self):
        report, _, _, _ = self.replay(self.models.NamedTupleModel(), "namedtuple", ["--bisect"])
        self.assert_log_zero_found(report)
        self.assertEqual(report["loss_from"], "forward(x, labels).loss")

    def test_zero_whose_derivative_only_backward_sees(self):
        report, scripted, x, labels = self.replay(self.models.DictModel(root=True), "root", ["--bisect"])
        self.assertEqual(report["loss_convention"], "in_forward")
        self.assertIsNone(report["forward"]["first_nonfinite"], "sqrt(0) = 0: the forward is finite")
        self.assertIsNotNone(report["loss"])
        culprit = report["backward"]["culprit"]
        self.assertEqual(culprit["op"], "aten::sqrt", "d sqrt(p)/dp = 1/(2 sqrt(p)) where p underflowed")
        self.assertEqual(culprit["module"], "criterion")
        self.assertTrue(culprit["source"].endswith("hf_style_models.py:19"), culprit["source"])
        self.assertEqual(report["bad_samples"], [BAD_SAMPLE], "bisection checks the gradients too")
        # Cross-check with PyTorch itself: finite loss, NaN gradient.
        loss = scripted(x, labels)["loss"]
        loss.backward()
        self.assertTrue(torch.isfinite(loss))
        self.assertTrue(torch.isnan(scripted.body.weight.grad).any())

    def test_forward_that_returns_no_loss(self):
        report, _, _, _ = self.replay(self.models.LogitsOnlyModel(), "logits-only")
        self.assertEqual(report["loss_convention"], "none")
        notes = " ".join(report["notes"])
        self.assertIn("returned float32 [8, 4], not a loss", notes)
        self.assertIn("backward skipped", notes)
        self.assertEqual(report["backward"]["params"], [])


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)

"""Replay of a model scripted in Python: ops carry the user's own file:line and nested module
paths, and bisection finds the sample whose log(0) poisons the batch."""
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

import torch

MODEL_SOURCE = textwrap.dedent('''
    import torch
    from torch import nn


    class LogFeatures(nn.Module):
        def forward(self, x):
            return torch.log(x)          # line 8: log(0) is -inf, and 0 * -inf is NaN


    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.logf = LogFeatures()
            self.linear = nn.Linear(6, 6)

        def forward(self, x):
            return self.linear(self.logf(x) * x)


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(Block(), nn.ReLU())
            self.bn = nn.BatchNorm1d(6)
            self.head = nn.Linear(6, 3)

        def forward(self, x):
            return self.head(self.bn(self.body(x)))
''')


class ReplayPythonModel(unittest.TestCase):
    def test_replay_reports_user_source_lines_modules_and_samples(self):
        with tempfile.TemporaryDirectory() as tmp:
            module_path = os.path.join(tmp, "user_model.py")
            with open(module_path, "w") as f:
                f.write(MODEL_SOURCE)
            sys.path.insert(0, tmp)
            import user_model  # noqa: E402

            torch.manual_seed(0)
            model = torch.jit.script(user_model.Model())
            run = os.path.join(tmp, "run")
            os.makedirs(os.path.join(run, "checkpoints"))
            os.makedirs(os.path.join(run, "batches"))
            model.save(os.path.join(run, "checkpoints", "step_00000003.pt"))
            x = torch.rand(8, 6) + 0.5
            x[6, 2] = 0.0
            torch.save({"inputs": x, "targets": torch.randint(0, 3, (8,)), "loss": "cross_entropy", "step": 3},
                       os.path.join(run, "batches", "step_00000003.pt"))

            out = subprocess.run([os.environ["NANSCOPE_BINARY"], "replay", run, "--step", "3", "--bisect", "--json"],
                                 capture_output=True, text=True, timeout=300)
            self.assertEqual(out.returncode, 0, out.stderr)
            report = json.loads(out.stdout)
            # log(0) = -inf is the first non-finite value made from finite inputs.
            culprit = report["forward"]["first_nonfinite"]
            self.assertEqual(culprit["op"], "aten::log")
            self.assertEqual(culprit["module"], "body.0.logf")
            self.assertTrue(culprit["source"].endswith("user_model.py:8"), culprit["source"])
            self.assertTrue(culprit["code"].startswith("return torch.log(x)"), culprit["code"])
            self.assertEqual(culprit["output"]["neginf"], 1)
            self.assertEqual(culprit["inputs"][0]["min"], 0.0)
            # 0 * -inf then makes the NaN, in the caller's line.
            mul = next(op for op in report["forward"]["ops"] if op["op"] == "aten::mul")
            self.assertEqual(mul["module"], "body.0")
            self.assertTrue(mul["source"].endswith("user_model.py:18"), mul["source"])
            self.assertEqual(mul["code"], "return self.linear(self.logf(x) * x)")
            self.assertEqual(mul["output"]["nan"], 1)
            self.assertEqual(report["bad_samples"], [6])
            # Cross-check the forward with PyTorch itself.
            self.assertTrue(torch.isnan(model(x)).any())


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)

"""Replay on models nobody here wrote (issue 25): torchvision's ResNet-18 and MobileNetV3, scripted
and traced as a user saves them. Replay names the op and the module by PyTorch's named_modules()
names, and the sample, for a NaN pixel in one sample and for a BatchNorm buffer gone bad deep
inside the network (a negative running variance: sqrt of a negative in evaluation mode)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import torch
import torchvision


def nanscope(*args):
    return subprocess.run([os.environ["NANSCOPE_BINARY"], *args], capture_output=True, text=True, timeout=900)


def saved_run(tmp, module, x, y):
    os.makedirs(os.path.join(tmp, "checkpoints"))
    os.makedirs(os.path.join(tmp, "batches"))
    module.save(os.path.join(tmp, "checkpoints", "step_00000001.pt"))
    torch.save({"inputs": x, "targets": y, "loss": "cross_entropy", "step": 1},
               os.path.join(tmp, "batches", "step_00000001.pt"))
    return tmp


def replayed(run, *options):
    out = nanscope("replay", run, "--step", "1", "--json", *options)
    if out.returncode != 0:
        raise AssertionError(out.stderr)
    return json.loads(out.stdout)


class TorchvisionReplay(unittest.TestCase):
    def batch(self, nan_sample=None):
        torch.manual_seed(1)
        x = torch.randn(4, 3, 32, 32)
        if nan_sample is not None:
            x[nan_sample, 1, 7, 7] = float("nan")
        return x, torch.tensor([0, 1, 2, 3])

    def check_nan_pixel(self, model, first_module, traced=False):
        x, y = self.batch(nan_sample=2)
        saved = torch.jit.trace(model, x[:2]) if traced else torch.jit.script(model)
        with tempfile.TemporaryDirectory() as tmp:
            report = replayed(saved_run(tmp, saved, x, y), "--bisect")
        culprit = report["forward"]["first_nonfinite"]
        self.assertIsNotNone(culprit)
        self.assertEqual(culprit["module"], first_module)
        self.assertIn("conv", culprit["op"])
        self.assertEqual(report["bad_samples"], [2])
        names = {name for name, _ in model.named_modules()}
        modules = {op["module"] for op in report["forward"]["ops"]} - {""}
        self.assertTrue(modules <= names, sorted(modules - names)[:5])

    def test_resnet18_scripted_nan_pixel(self):
        torch.manual_seed(0)
        self.check_nan_pixel(torchvision.models.resnet18(num_classes=4), "conv1")

    def test_resnet18_traced_nan_pixel(self):
        torch.manual_seed(0)
        self.check_nan_pixel(torchvision.models.resnet18(num_classes=4), "conv1", traced=True)

    def test_mobilenet_v3_small_scripted_nan_pixel(self):
        torch.manual_seed(0)
        self.check_nan_pixel(torchvision.models.mobilenet_v3_small(num_classes=4), "features.0.0")

    def test_resnet18_bad_running_variance_deep_inside(self):
        torch.manual_seed(0)
        model = torchvision.models.resnet18(num_classes=4)
        with torch.no_grad():
            model.layer2[1].bn1.running_var[3] = -1.0
        model.eval()
        x, y = self.batch()
        with tempfile.TemporaryDirectory() as tmp:
            report = replayed(saved_run(tmp, torch.jit.script(model), x, y), "--eval")
        culprit = report["forward"]["first_nonfinite"]
        self.assertIsNotNone(culprit)
        self.assertEqual(culprit["module"], "layer2.1.bn1")
        self.assertEqual(culprit["op"], "aten::batch_norm")


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)

"""Small models and training loops shared by the recorder tests (not a test itself)."""
import json
import os
import subprocess

import h5py
import torch
import torch.nn as nn
import torch.nn.functional as F

from nanscope_recorder import Recorder

FEATURES, CLASSES, BATCH = 8, 3, 16


def bn_mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(FEATURES, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, CLASSES))


class Unscriptable(nn.Module):
    """forward takes **kwargs, which TorchScript refuses."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(FEATURES, CLASSES)
        self.bn = nn.BatchNorm1d(FEATURES)

    def forward(self, x, **options):
        return self.fc(self.bn(x))


class _PythonScale(torch.autograd.Function):
    """A Python autograd Function: a trace records it, but TorchScript cannot save it."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


class Untraceable(Unscriptable):
    """Neither scripts (**kwargs) nor saves as a trace (a Python autograd Function)."""

    def forward(self, x, **options):
        return self.fc(_PythonScale.apply(self.bn(x)))


def batch(step):
    g = torch.Generator().manual_seed(step)
    y = torch.randint(0, CLASSES, (BATCH,), generator=g)
    x = torch.randn(BATCH, FEATURES, generator=g) + y[:, None].float()
    return x, y


def train(run_dir, model, steps, nan_at=None, **recorder_options):
    """Trains with SGD; returns (recorder results per step, the model). nan_at: a step, or a
    collection of steps, whose batch gets a NaN."""
    options = dict(loss_name="cross_entropy", checkpoint_every=5, activations_every=2)
    options.update(recorder_options)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    applied = {}
    with Recorder(run_dir, model, **options) as rec:
        for step in range(steps):
            x, y = batch(step)
            if step == nan_at or (isinstance(nan_at, (set, frozenset, range, list, tuple)) and step in nan_at):
                x[2, 1] = float("nan")
            rec.begin_step(step, inputs=x, targets=y)
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            applied[step] = rec.end_step(loss, lr=0.1)
            if applied[step]:
                opt.step()
    return applied, model


def nanscope_info(run_dir):
    """`nanscope info RUN_DIR --json`: (exit status, parsed JSON or the message)."""
    proc = subprocess.run([os.environ["NANSCOPE_BINARY"], "info", run_dir, "--json"],
                          capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        return proc.returncode, proc.stderr + proc.stdout
    return 0, json.loads(proc.stdout)


def open_run(run_dir):
    return h5py.File(os.path.join(run_dir, "run.h5"), "r", libver="latest", swmr=True)


def strings(dataset):
    return [s.decode() if isinstance(s, bytes) else s for s in dataset[:]]

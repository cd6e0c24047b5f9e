"""Small models and training loops shared by the recorder tests (not a test itself)."""
import json
import os
import subprocess
import sys
import textwrap

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


def recorded_step(rec, model, opt, step, x, y, lr=0.1):
    """One step of the loop the README shows, cross-entropy on (x, y); the optimizer steps only
    when end_step says the step is applied. Returns what end_step returned."""
    rec.begin_step(step, inputs=x, targets=y)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    applied = rec.end_step(loss, lr=lr)
    if applied:
        opt.step()
    return applied


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
            applied[step] = recorded_step(rec, model, opt, step, x, y)
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


# A training script that trains until it is stopped (SIGKILL, Ctrl-C) and writes each step to
# stdout once end_step has handed its rows to run.h5's writer: one unbuffered write a line, which
# a signal cannot cut in two. A Ctrl-C ends the `with` block, which closes the recorder.
_TRAIN_UNTIL_STOPPED = textwrap.dedent("""
    import json, os, sys
    import torch
    from nanscope_recorder import Recorder
    import recorder_fixtures as fx

    model = fx.bn_mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    try:
        with Recorder(sys.argv[1], model, **json.loads(sys.argv[2])) as rec:
            step = 0
            while True:
                fx.recorded_step(rec, model, opt, step, *fx.batch(step))
                os.write(1, b"%d\\n" % step)
                step += 1
    except KeyboardInterrupt:
        os.write(1, b"interrupted\\n")
""")


def start_training_until_stopped(run_dir, recorder_options, **popen_options):
    """The script above in a child process (stdout and stderr piped, text), recording into run_dir."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.abspath(__file__)), env.get("PYTHONPATH", "")])
    return subprocess.Popen([sys.executable, "-c", _TRAIN_UNTIL_STOPPED, run_dir, json.dumps(recorder_options)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True, **popen_options)

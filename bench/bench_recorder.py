"""What recording costs a training step: the Python recorder against the same loop without it.

    PYTHONPATH=python .venv/bin/python bench/bench_recorder.py [--model resnet|mlp] [--pairs 20]

Trains a mid-size model on the CPU: a CIFAR-style ResNet-18 (11.2 M parameters, 20 BatchNorm
layers, 32x32 images) by default, or an MLP with BatchNorm (10.5 M parameters). Plain and
recorded steps (every table every step, activations every 10 steps) alternate, so both run under
the same machine load, and their ratio is printed. On a shared machine one step's time varies by
tens of percent, more than the recorder costs, so the figure to trust is the recorder's own time,
measured directly: time inside begin_step and end_step, what the activation hooks add to a
forward pass (on one step in 10), and a TorchScript checkpoint spread over 50 steps. Prints
figures; asserts nothing.

Note for Debian's python3-torch: it multiplies matrices with the reference BLAS (BLAS_INFO=generic),
an order of magnitude slower than MKL or OpenBLAS, which inflates the MLP's step time and so
flatters its ratio. Convolutions go through oneDNN and run at a normal speed, which is why the
ResNet is the default.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from nanscope_recorder import Recorder  # noqa: E402
from nanscope_recorder.checkpoints import Checkpointer  # noqa: E402

CLASSES = 10


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + self.shortcut(x))


def resnet18(widths=(64, 128, 256, 512)):
    layers = [nn.Conv2d(3, widths[0], 3, 1, 1, bias=False), nn.BatchNorm2d(widths[0]), nn.ReLU(inplace=True)]
    cin = widths[0]
    for i, width in enumerate(widths):
        layers += [BasicBlock(cin, width, 1 if i == 0 else 2), BasicBlock(width, width, 1)]
        cin = width
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, CLASSES)]
    return nn.Sequential(*layers)


def mlp(features=1024, hidden=2048):
    return nn.Sequential(
        nn.Linear(features, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
        nn.Linear(hidden, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
        nn.Linear(hidden, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
        nn.Linear(hidden, CLASSES))


def make(kind, batch, image):
    torch.manual_seed(0)
    if kind == "resnet":
        model = resnet18()
        batches = [torch.randn(batch, 3, image, image) for _ in range(4)]
    else:
        model = mlp()
        batches = [torch.randn(batch, 1024) for _ in range(4)]
    return model, [(x, torch.randint(0, CLASSES, (batch,))) for x in batches]


def measure(model, opt, batches, pairs, recorder):
    """Alternates plain and recorded steps (the machine's load changes from second to second, so
    the two must interleave finely). Returns per-step seconds of each and, for the recorded steps,
    the seconds spent inside begin_step/end_step; then the seconds inside them at the recorder's
    first step, which is not among the pairs: it starts run.h5's writer and takes the first ring
    anchor, once a run."""
    plain, recorded, inside = [], [], []
    first = None
    for i in range(pairs + 1):
        x, y = batches[i % len(batches)]
        for rec in (None, recorder):
            spent = 0.0
            start = time.perf_counter()
            if rec is not None:
                rec.begin_step(i, inputs=x, targets=y)
                spent += time.perf_counter() - start
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            ok = True
            if rec is not None:
                t = time.perf_counter()
                ok = rec.end_step(loss, lr=0.01)
                spent += time.perf_counter() - t
            if ok:
                opt.step()
            if i == 0:
                first = spent if rec is not None else first
                continue
            (recorded if rec is not None else plain).append(time.perf_counter() - start)
            if rec is not None:
                inside.append(spent)
    return plain, recorded, inside, first


def hook_cost(model, recorder, x, repeats):
    """Extra seconds the activation hooks add to a forward pass (interleaved, median)."""
    extra = []
    with torch.no_grad():
        for _ in range(repeats):
            t = time.perf_counter()
            model(x)
            bare = time.perf_counter() - t
            hooks = recorder._activations  # armed as a logged step arms them (activations.py)
            hooks.arm()
            t = time.perf_counter()
            model(x)
            hooked = time.perf_counter() - t
            hooks.stop()
            hooks.take_calls()
            hooks.disarm()
            extra.append(hooked - bare)
    return statistics.median(extra)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=("resnet", "mlp"), default="resnet")
    parser.add_argument("--pairs", type=int, default=20, help="plain/recorded step pairs (a multiple of 10 "
                                                              "keeps the share of activation steps exact)")
    parser.add_argument("--batch", type=int, default=None, help="default: 16 (resnet), 128 (mlp)")
    parser.add_argument("--image", type=int, default=32, help="resnet input size")
    args = parser.parse_args()
    batch = args.batch or (16 if args.model == "resnet" else 128)

    model, batches = make(args.model, batch, args.image)
    params = sum(p.numel() for p in model.parameters())
    norms = sum(1 for m in model.modules() if isinstance(m, nn.modules.batchnorm._NormBase))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    print("model: %s, %.1f M parameters, %d BatchNorm layers; batch %d; torch %s, %d thread(s)"
          % (args.model, params / 1e6, norms, batch, torch.__version__, torch.get_num_threads()))
    print("%d pairs of one plain and one recorded step; activations every 10 steps\n" % args.pairs)

    for _ in range(2):  # warm-up: allocator, kernels
        x, y = batches[0]
        F.cross_entropy(model(x), y).backward()
    opt.zero_grad()

    with tempfile.TemporaryDirectory() as tmp:
        with Recorder(os.path.join(tmp, "run"), model, checkpoint_every=0, activations_every=10) as rec:
            plain, recorded, inside, first = measure(model, opt, batches, args.pairs, rec)
            hooks = hook_cost(model, rec, batches[0][0], 3)
        step = statistics.median(plain)
        ratios = [r / p for p, r in zip(plain, recorded)]
        print("plain step, median                      %8.1f ms" % (step * 1e3))
        print("recorded step, median                   %8.1f ms" % (statistics.median(recorded) * 1e3))
        print("timed overhead: median of pair ratios   %+7.1f %%   (mean %+.1f %%; the machine's noise is"
              " %.0f %% per step)" % ((statistics.median(ratios) - 1) * 100, (statistics.mean(ratios) - 1) * 100,
                                    statistics.pstdev(plain) / statistics.mean(plain) * 100))

        in_calls = statistics.mean(inside)
        print("\nthe recorder's own time per step:")
        print("  begin_step + end_step, mean           %8.1f ms = %.2f %% of a plain step"
              % (in_calls * 1e3, in_calls / step * 100))
        print("  activation hooks, one step in 10      %8.1f ms = %.2f %%"
              % (hooks / 10 * 1e3, hooks / 10 / step * 100))

        checkpointer = Checkpointer(model, os.path.join(tmp, "checkpoints"))
        checkpointer.save(0)  # scripts the model once
        times = []
        for n in range(1, 4):
            t = time.perf_counter()
            checkpointer.save(n)
            times.append(time.perf_counter() - t)
        save = statistics.median(times)
        size = os.path.getsize(os.path.join(tmp, "checkpoints", "step_00000001.pt"))
        print("  %s checkpoint (%.0f MB) / 50   %8.1f ms = %.2f %%   (one save: %.0f ms)"
              % (checkpointer.kind, size / 1e6, save / 50 * 1e3, save / 50 / step * 100, save * 1e3))
        total = in_calls + hooks / 10 + save / 50
        print("  total                                 %8.1f ms = %.2f %% of a plain step   (budget: 5 %%)"
              % (total * 1e3, total / step * 100))
        print("  once, at the first step (run.h5's writer starts, the first ring anchor): %.0f ms" % (first * 1e3))


if __name__ == "__main__":
    main()

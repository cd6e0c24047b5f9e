"""The Python half of bench_guard: the Python recorder against a bare loop, on the same two models
as the C++ Guard's half (an MLP with BatchNorm and a small transformer block), in the same way.

    PYTHONPATH=python .venv/bin/python bench/bench_guard_python.py [--pairs 100] [--mlp-pairs N] [--json]

bench_guard runs this script itself and prints its figures in one table with the C++ ones; run
alone it prints its own lines. Bare and recorded steps alternate (each on its own copy of the
model), so both run under the same machine load; the recorder logs every table every step,
activations included, and saves no checkpoints, as the Guard's half does. Prints figures; asserts
nothing.
"""
import argparse
import json
import math
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

CLASSES = 10
# The shapes bench_guard.cpp uses; keep the two in step.
MLP_FEATURES, MLP_HIDDEN, MLP_BATCH = 256, 512, 64
TOKENS, TOKEN_FEATURES, WIDTH, HEADS, BLOCK_BATCH = 32, 64, 128, 4, 16


def mlp():
    return nn.Sequential(nn.Linear(MLP_FEATURES, MLP_HIDDEN), nn.BatchNorm1d(MLP_HIDDEN), nn.ReLU(),
                         nn.Linear(MLP_HIDDEN, MLP_HIDDEN), nn.ReLU(), nn.Linear(MLP_HIDDEN, CLASSES))


class Block(nn.Module):
    """Pre-norm attention and MLP with residuals, written out as bench_guard.cpp writes it."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(TOKEN_FEATURES, WIDTH)
        self.ln1 = nn.LayerNorm(WIDTH)
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH)
        self.proj = nn.Linear(WIDTH, WIDTH)
        self.ln2 = nn.LayerNorm(WIDTH)
        self.fc1 = nn.Linear(WIDTH, 4 * WIDTH)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(4 * WIDTH, WIDTH)
        self.head = nn.Linear(WIDTH, CLASSES)

    def forward(self, x):
        b, t, _ = x.shape
        h = self.embed(x)
        q, k, v = self.qkv(self.ln1(h)).chunk(3, dim=-1)
        split = lambda z: z.reshape(b, t, HEADS, WIDTH // HEADS).transpose(1, 2)  # noqa: E731
        q, k, v = split(q), split(k), split(v)
        attention = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(WIDTH // HEADS), dim=-1)
        h = h + self.proj((attention @ v).transpose(1, 2).reshape(b, t, WIDTH))
        h = h + self.fc2(self.act(self.fc1(self.ln2(h))))
        return self.head(h.mean(dim=1))


def batches(kind):
    if kind == "mlp":
        return [(torch.randn(MLP_BATCH, MLP_FEATURES), torch.randint(0, CLASSES, (MLP_BATCH,))) for _ in range(4)]
    return [(torch.randn(BLOCK_BATCH, TOKENS, TOKEN_FEATURES), torch.randint(0, CLASSES, (BLOCK_BATCH,)))
            for _ in range(4)]


def step(model, opt, x, y, recorder=None, index=0):
    if recorder is not None:
        recorder.begin_step(index, inputs=x, targets=y)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    ok = recorder.end_step(loss, lr=opt.param_groups[0]["lr"]) if recorder is not None else True
    if ok:
        opt.step()


def measure(kind, pairs, warmup):
    torch.manual_seed(0)
    make = mlp if kind == "mlp" else Block
    bare_model, recorded_model = make(), make()
    recorded_model.load_state_dict(bare_model.state_dict())
    bare_opt = torch.optim.SGD(bare_model.parameters(), lr=0.01, momentum=0.9)
    recorded_opt = torch.optim.SGD(recorded_model.parameters(), lr=0.01, momentum=0.9)
    data = batches(kind)
    bare, recorded = [], []
    with tempfile.TemporaryDirectory() as tmp:
        with Recorder(os.path.join(tmp, "run"), recorded_model, checkpoint_every=0, activations_every=1) as rec:
            for i in range(warmup + pairs):
                x, y = data[i % len(data)]
                t = time.perf_counter()
                step(bare_model, bare_opt, x, y)
                middle = time.perf_counter()
                step(recorded_model, recorded_opt, x, y, rec, i)
                end = time.perf_counter()
                if i >= warmup:
                    bare.append(middle - t)
                    recorded.append(end - middle)
    ratios = [r / b for b, r in zip(bare, recorded)]
    return {"model": kind, "loop": "Python recorder", "bare_ms": statistics.median(bare) * 1e3,
            "guarded_ms": statistics.median(recorded) * 1e3, "ratio": statistics.median(ratios)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=100)
    parser.add_argument("--mlp-pairs", type=int, default=None, help="the MLP's pairs (default: --pairs)")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="one JSON object per line (what bench_guard reads)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    for kind in ("mlp", "transformer"):
        row = measure(kind, args.mlp_pairs or args.pairs if kind == "mlp" else args.pairs, args.warmup)
        if args.json:
            print(json.dumps(row), flush=True)
        else:
            print("%-12s %-16s bare %7.2f ms  recorded %7.2f ms  ratio %.2fx"
                  % (kind, row["loop"], row["bare_ms"], row["guarded_ms"], row["ratio"]))


if __name__ == "__main__":
    main()

"""Trains a small MLP classifier on synthetic data and records the run for nanscope.

    PYTHONPATH=python /usr/bin/python3 python/examples/train_mlp_with_recorder.py OUT_DIR
    PYTHONPATH=python /usr/bin/python3 python/examples/train_mlp_with_recorder.py OUT_DIR --inject-nan-at 120
    build/bin/nanscope OUT_DIR

--inject-nan-at STEP puts a NaN into one input of that step's batch: the loss turns NaN, the
recorder saves checkpoint and batch STEP, logs the step as skipped, and the update is not applied.
Runs on a CPU in a few seconds.
"""
import argparse
import math
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

from nanscope_recorder import Recorder


def make_model(features, classes):
    return nn.Sequential(
        nn.Linear(features, 64), nn.BatchNorm1d(64), nn.ReLU(),
        nn.Linear(64, 64), nn.ReLU(),
        nn.Linear(64, classes))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", help="run directory to write (run.h5, checkpoints/, batches/)")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--inject-nan-at", type=int, default=None, metavar="STEP",
                        help="put a NaN into the batch of this step")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing run in OUT_DIR")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    features, classes, batch = 16, 4, 32
    centres = torch.randn(classes, features) * 0.3
    model = make_model(features, classes)
    base_lr = 0.05
    opt = torch.optim.SGD(model.parameters(), lr=base_lr, momentum=0.9)

    skipped = 0
    with Recorder(args.out_dir, model, loss_name="cross_entropy", checkpoint_every=50, activations_every=5,
                  overwrite=args.overwrite) as rec:
        for step in range(args.steps):
            y = torch.randint(0, classes, (batch,))
            x = centres[y] + torch.randn(batch, features)
            if step == args.inject_nan_at:
                x[3, 7] = float("nan")
            lr = base_lr * 0.5 * (1 + math.cos(math.pi * step / args.steps))
            for group in opt.param_groups:
                group["lr"] = lr

            rec.begin_step(step, inputs=x, targets=y)
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            if rec.end_step(loss, lr=lr):
                opt.step()
            else:
                skipped += 1
            if step % 50 == 0:
                print("step %4d  loss %.4f" % (step, loss.item()))
    print("wrote %s (%d step(s) skipped)" % (args.out_dir, skipped))
    return 0


if __name__ == "__main__":
    sys.exit(main())

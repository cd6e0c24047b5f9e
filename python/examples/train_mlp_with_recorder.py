"""Trains a small MLP classifier on synthetic data and records the run for nanscope.

    PYTHONPATH=python /usr/bin/python3 python/examples/train_mlp_with_recorder.py OUT_DIR
    PYTHONPATH=python /usr/bin/python3 python/examples/train_mlp_with_recorder.py OUT_DIR --inject-nan-at 120
    build/bin/nanscope OUT_DIR

--inject-nan-at STEP puts a NaN into one input of that step's batch: the loss turns NaN, the
recorder saves checkpoint and batch STEP, writes the last batches it kept in memory with the
checkpoint before them (incident capture), logs the step as skipped, and the update is not
applied. BatchNorm's running statistics are put back (restore_buffers_on_skip).
--nan-steps N spoils N consecutive steps from there: after 3 in a row the recorder rolls the
weights and the optimizer's momentum back to the last good state and halves the learning rate
(rollback_after=3; the loop scales its own schedule by rec.lr_scale).
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
    parser.add_argument("--nan-steps", type=int, default=1, metavar="N",
                        help="spoil N consecutive batches from --inject-nan-at on (3 or more: a rollback)")
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
    nan_steps = (set(range(args.inject_nan_at, args.inject_nan_at + args.nan_steps))
                 if args.inject_nan_at is not None else set())
    # The defences: skip non-finite steps (always), put BatchNorm statistics back on a skipped
    # step, roll back after 3 bad steps in a row. Incident capture keeps the last 8 batches.
    with Recorder(args.out_dir, model, loss_name="cross_entropy", checkpoint_every=50, activations_every=5,
                  overwrite=args.overwrite, optimizer=opt, restore_buffers_on_skip=True, rollback_after=3,
                  rollback_lr_factor=0.5, snapshot_every=10, batch_ring=8) as rec:
        for step in range(args.steps):
            y = torch.randint(0, classes, (batch,))
            x = centres[y] + torch.randn(batch, features)
            if step in nan_steps:
                x[3, 7] = float("nan")
            # The loop sets the lr itself: it keeps what rollbacks took off (rec.lr_scale).
            lr = rec.lr_scale * base_lr * 0.5 * (1 + math.cos(math.pi * step / args.steps))
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
    print("wrote %s (%d step(s) skipped, learning rate scaled by %g by rollbacks)"
          % (args.out_dir, skipped, rec.lr_scale))
    return 0


if __name__ == "__main__":
    sys.exit(main())

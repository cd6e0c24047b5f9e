"""A real torch.distributed run (gloo, 4 processes, DDP) recorded by DistributedRecorder, read back by
nanscope: one rank fed a NaN batch is named with its step, and a rank killed mid-run is named as
stopped while the others' files read back whole."""
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

import h5py
import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import recorder_fixtures as fx

WORLD = 4
STEPS = 12
POISONED_RANK, POISONED_STEP = 2, 6
KILLED_RANK, KILLED_AT = 3, 5
FEATURES, CLASSES, BATCH = 8, 3, 16


def batch(rank, step):
    g = torch.Generator().manual_seed(1000 * rank + step)
    y = torch.randint(0, CLASSES, (BATCH,), generator=g)
    x = torch.randn(BATCH, FEATURES, generator=g) + y[:, None].float()
    return x, y


def train(rank, run_dir, store_file, scenario):
    torch.set_num_threads(1)
    # The ranks meet through a file, not a TCP port: a free port found first could be taken by
    # another program before the ranks bind it.
    dist.init_process_group("gloo", init_method="file://" + store_file, rank=rank, world_size=WORLD,
                            timeout=datetime.timedelta(seconds=30))
    from nanscope_recorder.distributed import DistributedRecorder
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(FEATURES, 16), nn.ReLU(), nn.Linear(16, CLASSES)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    rec = DistributedRecorder(run_dir, model, loss_name="cross_entropy", checkpoint_every=0, activations_every=0)
    try:
        for step in range(STEPS):
            if scenario == "kill" and rank == KILLED_RANK and step == KILLED_AT:
                os._exit(17)  # no close(), no flush: as a SIGKILL leaves it
            x, y = batch(rank, step)
            if scenario == "poison" and rank == POISONED_RANK and step == POISONED_STEP:
                x[3, 1] = float("nan")
            fx.recorded_step(rec, model, opt, step, x, y)
    except RuntimeError:
        # A peer died: gloo's collective fails here. The survivor closes its run and leaves.
        assert scenario == "kill", "unexpected collective failure"
    rec.close()
    os._exit(0)  # a dead peer can leave the process group's teardown waiting


def run_world(run_dir, scenario):
    context = mp.get_context("spawn")
    with tempfile.TemporaryDirectory() as store:
        store_file = os.path.join(store, "rendezvous")
        procs = [context.Process(target=train, args=(rank, run_dir, store_file, scenario)) for rank in range(WORLD)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(120)
        for p in procs:
            if p.is_alive():
                p.kill()
        return [p.exitcode for p in procs]


def nanscope(*args):
    result = subprocess.run([os.environ["NANSCOPE_BINARY"], *args], capture_output=True, text=True, timeout=120)
    return result.returncode, result.stdout, result.stderr


def read_json(path):
    with open(path) as f:
        return json.load(f)


def rank_file(run_dir, rank):
    return os.path.join(run_dir, "rank_%05d" % rank, "run.h5")


class DistributedRun(unittest.TestCase):
    def test_poisoned_rank_and_step_are_named(self):
        with tempfile.TemporaryDirectory() as run_dir:
            self.assertEqual(run_world(run_dir, "poison"), [0] * WORLD)
            manifest = read_json(os.path.join(run_dir, "ranks.json"))
            self.assertEqual(manifest["world_size"], WORLD)
            self.assertEqual([r["directory"] for r in manifest["ranks"]], ["rank_%05d" % r for r in range(WORLD)])
            for rank in range(WORLD):
                with h5py.File(rank_file(run_dir, rank), "r") as f:
                    local = f["scalars/local_grad_norm"][:]
                    self.assertEqual(len(local), STEPS)
                    # The all-reduce spreads the NaN to every rank's applied gradient; only the
                    # poisoned rank's own gradient is NaN.
                    self.assertFalse(np.isfinite(f["scalars/grad_norm"][POISONED_STEP]))
                    self.assertEqual(np.isfinite(local[POISONED_STEP]), rank != POISONED_RANK, rank)
                    self.assertEqual(f["layers/local_grad_norm"].shape[0], STEPS)

            code, out, err = nanscope("scan", "--json", run_dir)
            self.assertIn(code, (0, 1), err)
            report = json.loads(out)
            first = [i for i in report["incidents"] if i["kind"] == "rank_nonfinite"]
            self.assertEqual(len(first), 1, out)
            self.assertEqual(first[0]["rank"], POISONED_RANK)
            self.assertEqual(first[0]["onset_step"], POISONED_STEP)
            self.assertIn("x", first[0]["evidence"]["note"])  # the input it saw first
            self.assertEqual(len(report["ranks"]), WORLD)

            # The text output says it as well.
            code, out, err = nanscope("scan", run_dir)
            self.assertIn("rank %d" % POISONED_RANK, out)

    def test_killed_rank_is_named_and_the_others_read_whole(self):
        with tempfile.TemporaryDirectory() as run_dir:
            codes = run_world(run_dir, "kill")
            self.assertEqual(codes[KILLED_RANK], 17)
            states = {}
            for rank in range(WORLD):
                status = read_json(os.path.join(run_dir, "rank_%05d" % rank, "rank.json"))
                states[rank] = status["state"]
                # The killed rank's run.h5 writer (its child) may still be writing what it was given.
                deadline = time.monotonic() + 60
                while True:
                    code, out, err = nanscope("info", "--json", os.path.join(run_dir, "rank_%05d" % rank))
                    self.assertEqual(code, 0, err)
                    rows = json.loads(out)["groups"]["scalars"]["rows"]
                    if rows >= KILLED_AT or time.monotonic() > deadline:
                        break
                    time.sleep(0.05)
                self.assertEqual(rows, KILLED_AT, rank)  # every step before the kill, on every rank
            self.assertEqual(states[KILLED_RANK], "running")
            self.assertEqual([s for r, s in states.items() if r != KILLED_RANK], ["finished"] * (WORLD - 1))

            code, out, err = nanscope("scan", "--json", run_dir)
            self.assertIn(code, (0, 1), err)
            report = json.loads(out)
            stopped = [i for i in report["incidents"] if i["kind"] == "rank_stopped"]
            self.assertEqual([i["rank"] for i in stopped], [KILLED_RANK], out)
            self.assertEqual(stopped[0]["onset_step"], KILLED_AT - 1)  # its last recorded step
            ranks = {r["rank"]: r for r in report["ranks"]}
            self.assertEqual(ranks[KILLED_RANK]["state"], "stopped")
            self.assertEqual(ranks[0]["state"], "finished")

            # The whole run opens; --rank chooses which rank's run info shows.
            code, out, err = nanscope("info", "--json", "--rank", str(KILLED_RANK), run_dir)
            self.assertEqual(code, 0, err)
            self.assertEqual(json.loads(out)["groups"]["scalars"]["rows"], KILLED_AT)


if __name__ == "__main__":
    unittest.main()

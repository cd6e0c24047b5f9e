"""Recording a torch.distributed run: one run directory per rank, and a manifest (docs/run-format.md,
"Multi-rank runs").

    from nanscope_recorder.distributed import DistributedRecorder
    dist.init_process_group("gloo")            # or nccl
    model = DDP(net)
    rec = DistributedRecorder(run_dir, model, loss_name="cross_entropy")
    for step, (x, y) in enumerate(loader):
        rec.begin_step(step, inputs=x, targets=y)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward()
        if rec.end_step(loss, lr=lr):           # the same answer on every rank
            opt.step()
    rec.close()

Rank r writes run_dir/rank_0000r/ (run.h5, checkpoints/, batches/: a complete run directory that
nanscope also opens alone) and run_dir/rank_0000r/rank.json, its own state ("running" until its
close(), then "finished" with its last step). Rank 0 writes run_dir/ranks.json at the start. A
killed rank cannot write anything, so nobody claims it finished: its rank.json stays "running" and
its run.h5 keeps every step it flushed, which nanscope compares with the other ranks'.

What "local" means here. DDP averages the gradients across ranks inside backward, so after
backward every rank's .grad holds the same all-reduced gradient, and a NaN from one rank's batch is
everywhere. Each parameter's gradient hook (Tensor.register_hook) runs when backward has computed
that rank's own gradient and before it is accumulated into .grad, which is where DDP's reducer
picks it up. The recorder takes the norm there: /layers/local_grad_norm [n, L] and
/scalars/local_grad_norm are the gradients this rank's batch produced, before the all-reduce. With
several backward passes per optimizer step (gradient accumulation, no_sync), the local norm of a
parameter is the root of the sum of the squared norms of each pass's gradient, not the norm of
their sum. /scalars/loss is the loss this rank computed on its batch; /scalars/grad_norm and
/layers/grad_norm are the all-reduced gradient the optimizer applies.
"""
import datetime
import json
import os
import socket

import numpy as np
import torch
import torch.distributed as dist

from .recorder import Recorder

MANIFEST_NAME = "ranks.json"
MANIFEST_FORMAT = "training-run-ranks"
MANIFEST_VERSION = 1
RANK_STATUS_NAME = "rank.json"
RANK_DIR_DIGITS = 5
STATE_RUNNING = "running"
STATE_FINISHED = "finished"
LOCAL_GRAD_NORM = "local_grad_norm"


def rank_dir_name(rank):
    return "rank_%0*d" % (RANK_DIR_DIGITS, rank)


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _write_json(path, value):
    """Written whole or not at all: a reader never sees half a file."""
    partial = path + ".partial"
    with open(partial, "w") as f:
        json.dump(value, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.replace(partial, path)


def _unwrap(model):
    # DDP and its relatives keep the user's model as .module; its parameter names carry no
    # "module." prefix, so every rank's layers read like a single-process run's.
    inner = getattr(model, "module", None)
    return inner if isinstance(inner, torch.nn.Module) else model


class LocalGradients:
    """Each parameter's gradient as this rank's backward produced it, before DDP's all-reduce."""

    def __init__(self, params):
        self._params = params
        self._squares = [None] * len(params)
        self._handles = [p.register_hook(self._hook(i)) for i, (_, p) in enumerate(params) if p.requires_grad]

    def _hook(self, index):
        def measure(grad):
            with torch.no_grad():
                square = torch.linalg.vector_norm(grad.detach(), dtype=torch.float32).square()
                previous = self._squares[index]
                self._squares[index] = square if previous is None else previous + square
            return None  # the gradient is left as it is
        return measure

    def reset(self):
        self._squares = [None] * len(self._params)

    def norms(self):
        """[L] float32: each parameter's local gradient norm this step (0 when it received none)."""
        present = [(i, s) for i, s in enumerate(self._squares) if s is not None]
        values = np.zeros(len(self._params), dtype=np.float32)
        if present:
            host = torch.stack([s for _, s in present]).sqrt().cpu().numpy()
            values[[i for i, _ in present]] = host
        return values

    def remove(self):
        for handle in self._handles:
            handle.remove()
        self._handles = []


class DistributedRecorder:
    """Records this process's rank of an initialised torch.distributed group into
    run_dir/rank_NNNNN. The same calls as Recorder; every Recorder option is passed on.

    agree_on_skip: end_step returns False on every rank when the step was bad on any rank (one
    small all-reduce), so that no rank applies a step the others skip and the replicas stay equal.
    """

    def __init__(self, run_dir, model, group=None, agree_on_skip=True, overwrite=False, **recorder_options):
        if not (dist.is_available() and dist.is_initialized()):
            raise RuntimeError("DistributedRecorder needs an initialised torch.distributed process group; "
                               "use Recorder for a single process")
        self.group = group
        self.rank = dist.get_rank(group)
        self.world_size = dist.get_world_size(group)
        self.run_dir = run_dir
        self.rank_dir = os.path.join(run_dir, rank_dir_name(self.rank))
        self.agree_on_skip = agree_on_skip
        self._status_path = os.path.join(self.rank_dir, RANK_STATUS_NAME)
        self._step = self._last_step = None
        self._closed = False
        # One collective at the start: every rank learns where the others run, for the manifest.
        me = {"rank": self.rank, "host": socket.gethostname(), "pid": os.getpid()}
        everyone = [None] * self.world_size
        dist.all_gather_object(everyone, me, group=group)
        os.makedirs(self.rank_dir, exist_ok=True)
        if self.rank == 0:
            manifest_path = os.path.join(run_dir, MANIFEST_NAME)
            if os.path.exists(manifest_path) and not overwrite:
                raise FileExistsError("%s already exists; pass overwrite=True to replace the run" % manifest_path)
            _write_json(manifest_path, {
                "format": MANIFEST_FORMAT,
                "format_version": MANIFEST_VERSION,
                "world_size": self.world_size,
                "backend": str(dist.get_backend(group)),
                "created_utc": _now(),
                "ranks": [dict(entry, directory=rank_dir_name(entry["rank"])) for entry in everyone],
            })
        module = _unwrap(model)
        options = dict(recorder_options)
        options.setdefault("run_name", "%s rank %d" % (
            os.path.basename(os.path.normpath(os.path.abspath(run_dir))), self.rank))
        self.recorder = Recorder(self.rank_dir, module, overwrite=overwrite, **options)
        self._local = LocalGradients(self.recorder.logged_parameters)
        if self.agree_on_skip:
            self.recorder.skip_agreement = self._any_rank_bad
        self._status = {"rank": self.rank, "world_size": self.world_size, "state": STATE_RUNNING,
                        "started_utc": _now(), "last_step": None}
        _write_json(self._status_path, self._status)

    def begin_step(self, step, inputs=None, targets=None):
        self._local.reset()
        self._step = int(step)
        self.recorder.begin_step(step, inputs=inputs, targets=targets)

    def end_step(self, loss, lr=None, loss_scale=None, **scalars):
        """After backward, before optimizer.step(). False when the step should be skipped: on this
        rank's judgement, or on any rank's with agree_on_skip."""
        local = self._local.norms()
        local_total = float(np.sqrt(np.sum(np.square(local, dtype=np.float64))))
        self.recorder.extra_layer_values = {LOCAL_GRAD_NORM: local}
        scalars[LOCAL_GRAD_NORM] = local_total
        applied = self.recorder.end_step(loss, lr=lr, loss_scale=loss_scale, **scalars)
        self._last_step = self._step
        return applied

    def _any_rank_bad(self, bad):
        """One small all-reduce (MAX) of this rank's verdict. NCCL reduces only CUDA tensors."""
        on_gpu = dist.get_backend(self.group) == "nccl"
        device = torch.device("cuda", torch.cuda.current_device()) if on_gpu else torch.device("cpu")
        flag = torch.tensor([1.0 if bad else 0.0], device=device)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX, group=self.group)
        return flag.item() > 0

    def note(self, message, step=None):
        self.recorder.note(message, step=step)

    def close(self):
        """Closes this rank's run.h5 and marks the rank finished. No collective: a rank that
        closes while another has died does not wait for it."""
        if self._closed:
            return
        self._closed = True
        self._local.remove()
        self.recorder.close()
        self._status.update(state=STATE_FINISHED, finished_utc=_now(), last_step=self._last_step)
        _write_json(self._status_path, self._status)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

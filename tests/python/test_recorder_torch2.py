"""The recorder on what torch 2.x trains with (issue 54), with the pinned torch of
python/requirements.txt: a torch.compile'd model, which the recorder watches through the module the
user wrote, and CPU autocast in float16 and bfloat16 with real half-precision kernels. Recording
never changes the training: every parameter and optimizer state is bit-identical, step by step, to
the same loop unrecorded."""
import os
import subprocess
import tempfile
import unittest

import h5py
import torch
import torch.nn as nn
import torch.nn.functional as F

from nanscope_recorder import Recorder

STEPS = 12
NAN_STEP = 8


class SmallNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.norm = nn.LayerNorm(32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(F.gelu(self.norm(self.fc1(x))))


def batch(step):
    generator = torch.Generator().manual_seed(100 + step)
    x = torch.randn(8, 16, generator=generator)
    if step == NAN_STEP:
        x[3, 5] = float("nan")  # one sample: the step is skipped with and without the recorder
    return x, torch.randint(0, 4, (8,), generator=generator)


def bits(tensor):
    return tensor.detach().contiguous().reshape(-1).view(torch.uint8).clone()


def train(run_dir=None, compile_model=False, autocast_dtype=None):
    torch.manual_seed(0)
    model = SmallNet()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    forward = torch.compile(model, backend="aot_eager") if compile_model else model
    recorder = None
    if run_dir is not None:
        recorder = Recorder(run_dir, forward, loss_name="cross_entropy", checkpoint_every=4, activations_every=1)
    after = []
    try:
        for step in range(STEPS):
            x, y = batch(step)
            if recorder is not None:
                recorder.begin_step(step, inputs=x, targets=y)
            if autocast_dtype is not None:
                with torch.autocast("cpu", dtype=autocast_dtype):
                    logits = forward(x)
                    assert logits.dtype == autocast_dtype, "autocast ran the linear layers in half precision"
            else:
                logits = forward(x)
            loss = F.cross_entropy(logits.float(), y)
            optimizer.zero_grad()
            loss.backward()
            if recorder is not None:
                apply = recorder.end_step(loss, lr=optimizer.param_groups[0]["lr"])
            else:
                apply = bool(torch.isfinite(loss)) and all(bool(torch.isfinite(p.grad).all())
                                                           for p in model.parameters() if p.grad is not None)
            if apply:
                optimizer.step()
            state = {k: bits(v) for k, v in model.state_dict().items()}
            for i, values in enumerate(optimizer.state.values()):
                state.update({"opt%d.%s" % (i, k): bits(v) for k, v in values.items() if isinstance(v, torch.Tensor)})
            after.append(state)
    finally:
        if recorder is not None:
            recorder.close()
    return after, recorder


class RecorderOnTorch2(unittest.TestCase):
    def check_identical(self, **options):
        plain, _ = train(**options)
        with tempfile.TemporaryDirectory() as tmp:
            run = os.path.join(tmp, "run")
            recorded, recorder = train(run, **options)
            with h5py.File(os.path.join(run, "run.h5"), "r") as f:
                layers = [n.decode() if isinstance(n, bytes) else n for n in f["layers/names"][:]]
                skipped = f["scalars/skipped"][:]
                steps = f["scalars/steps"][:]
            out = subprocess.run([os.environ["NANSCOPE_BINARY"], "info", run], capture_output=True,
                                               text=True, timeout=120)
            self.assertEqual(out.returncode, 0, out.stderr)
        for step, (a, b) in enumerate(zip(plain, recorded)):
            self.assertEqual(sorted(a), sorted(b))
            for name in a:
                self.assertTrue(torch.equal(a[name], b[name]), "step %d: %s differs with the recorder" % (step, name))
        self.assertEqual(list(steps), list(range(STEPS)))
        self.assertEqual([int(s) for s in skipped].index(1), NAN_STEP, "the NaN batch's step is the skipped one")
        return layers, recorder

    def test_a_compiled_model_is_recorded_through_the_module_it_wraps(self):
        layers, recorder = self.check_identical(compile_model=True)
        self.assertIsInstance(recorder.model, SmallNet, "the recorder watches the module the user wrote")
        self.assertIn("fc1.weight", layers)
        self.assertFalse([n for n in layers if "_orig_mod" in n], layers)

    def test_cpu_autocast_float16(self):
        self.check_identical(autocast_dtype=torch.float16)

    def test_cpu_autocast_bfloat16(self):
        self.check_identical(autocast_dtype=torch.bfloat16)


if __name__ == "__main__":
    unittest.main()

"""Recording never changes the training it watches: the same models, trained with and without the
recorder (checkpoints, traces, ring snapshots and incident captures forced on many steps), hold the
same parameters, buffers and optimizer state bit for bit after every step.

The models are the shapes real code has: a GPT-style language model whose lm_head is tied to its
token embedding (scripted, and one that only traces), a model that neither scripts nor traces
(a dict output with a non-tensor, **kwargs), BatchNorm and dropout (which the recorder's trace
runs forward through), under SGD with momentum and under Adam."""
import os
import sys
import tempfile
import unittest

import h5py
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from nanscope_recorder import Recorder  # noqa: E402

VOCAB, WIDTH, CONTEXT, BATCH = 50, 16, 8, 4
STEPS = 40
NAN_STEP = 28  # a batch with a NaN: a non-finite step, skipped by both loops
# Loss spikes (the loss scaled up, in both loops alike) after the spike detector's 20 steps of history.
SPIKE_STEPS = (22, 25, 31, 35, 38)


class TiedLanguageModel(nn.Module):
    """GPT-2's layout in small: lm_head.weight is wte.weight (one tensor under two names)."""

    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, WIDTH)
        self.wpe = nn.Embedding(CONTEXT, WIDTH)
        self.h = nn.ModuleList([nn.Sequential(nn.LayerNorm(WIDTH), nn.Linear(WIDTH, WIDTH), nn.GELU(),
                                              nn.Dropout(0.1)) for _ in range(2)])
        self.ln_f = nn.LayerNorm(WIDTH)
        self.lm_head = nn.Linear(WIDTH, VOCAB, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx):
        positions = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(positions)
        for block in self.h:
            x = x + block(x)
        return self.lm_head(self.ln_f(x))


class TracedOnlyLanguageModel(TiedLanguageModel):
    """**kwargs in forward: TorchScript refuses it, a trace takes it."""

    def forward(self, idx, **options):  # noqa: D102
        return super().forward(idx)


class LanguageModelOutput:
    """A plain object (no dataclass, no dict): what neither TorchScript nor a trace can return."""

    def __init__(self, logits):
        self.logits = logits


class EagerOnlyLanguageModel(TiedLanguageModel):
    """Neither scripts (**kwargs) nor traces (it returns a plain object)."""

    def forward(self, idx, **options):  # noqa: D102
        return LanguageModelOutput(super().forward(idx))


class BatchNormNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(WIDTH, 32)
        self.bn = nn.BatchNorm1d(32)
        self.drop = nn.Dropout(0.2)
        self.fc2 = nn.Linear(32, 3)

    def forward(self, x):
        return self.fc2(self.drop(F.relu(self.bn(self.fc1(x)))))


def logits_of(output):
    return output.logits if isinstance(output, LanguageModelOutput) else output


def batch(kind, step):
    generator = torch.Generator().manual_seed(1000 + step)
    if kind == "lm":
        idx = torch.randint(0, VOCAB, (BATCH, CONTEXT), generator=generator)
        return idx, torch.roll(idx, -1, dims=1)
    x = torch.randn(16, WIDTH, generator=generator)
    if step == NAN_STEP:
        x[3, 2] = float("nan")
    return x, torch.randint(0, 3, (16,), generator=generator)


def loss_of(kind, model, inputs, targets, step):
    out = logits_of(model(inputs))
    if kind == "lm":
        loss = F.cross_entropy(out.reshape(-1, VOCAB), targets.reshape(-1))
        # The language models' non-finite step: a loss made NaN outside the model.
        loss = loss * float("nan") if step == NAN_STEP else loss
    else:
        loss = F.cross_entropy(out, targets)
    return loss * 1000 if step in SPIKE_STEPS else loss


def bits(tensor):
    """The tensor's bytes: equal bits, NaN payloads included."""
    return tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8)


def state_bits(model, optimizer):
    state = {"model." + k: bits(v) for k, v in model.state_dict().items()}
    for index, (param, values) in enumerate(optimizer.state.items()):
        for key, value in values.items():
            if isinstance(value, torch.Tensor):
                state["optimizer.%d.%s" % (index, key)] = bits(value)
    return state


def train(make_model, kind, make_optimizer, run_dir=None, checkpoint_form=None):
    """Trains STEPS steps; returns the state bits after each step. With run_dir, under a Recorder
    that checkpoints every 3 steps, measures activations every step, and captures an incident at
    every spike and at the non-finite step (a ring of 2 batches)."""
    torch.manual_seed(0)
    model = make_model()
    optimizer = make_optimizer(model.parameters())
    torch.manual_seed(1)  # the dropout masks: the same sequence in both loops
    after = []
    recorder = None
    if run_dir is not None:
        recorder = Recorder(run_dir, model, loss_name="cross_entropy", checkpoint_every=3, activations_every=1,
                            batch_ring=2, spike_captures=-1, checkpoint_form=checkpoint_form)
    try:
        for step in range(STEPS):
            inputs, targets = batch(kind, step)
            if recorder is not None:
                recorder.begin_step(step, inputs=inputs, targets=targets)
            loss = loss_of(kind, model, inputs, targets, step)
            optimizer.zero_grad()
            loss.backward()
            if recorder is not None:
                apply = recorder.end_step(loss, lr=optimizer.param_groups[0]["lr"])
            else:
                grads = [p.grad for p in model.parameters() if p.grad is not None]
                apply = bool(torch.isfinite(loss)) and all(bool(torch.isfinite(g).all()) for g in grads)
            if apply:
                optimizer.step()
            after.append(state_bits(model, optimizer))
    finally:
        if recorder is not None:
            recorder.close()
    return after


def sgd(params):
    return torch.optim.SGD(params, lr=0.05, momentum=0.9)


def adam(params):
    return torch.optim.Adam(params, lr=3e-3)


class RecordingNeverChangesTraining(unittest.TestCase):
    def check(self, make_model, kind, make_optimizer, expected_form):
        plain = train(make_model, kind, make_optimizer)
        with tempfile.TemporaryDirectory() as tmp:
            run = os.path.join(tmp, "run")
            # The TorchScript paths are asked for: the recorder exports first.
            form = "torchscript" if expected_form in ("scripted", "traced") else None
            recorded = train(make_model, kind, make_optimizer, run, form)
            forms = {open(os.path.join(run, "checkpoints", name)).read().split("\n")[0]
                     for name in os.listdir(os.path.join(run, "checkpoints")) if name.endswith(".form")}
            self.assertEqual(forms, {expected_form}, "the checkpoints took the path this model is meant to test")
            with h5py.File(os.path.join(run, "run.h5"), "r") as f:
                kinds = [k.decode() if isinstance(k, bytes) else k for k in f["events/kind"][:]]
            self.assertGreaterEqual(kinds.count("incident_capture"), 5, "incident captures on many steps")
        for step, (a, b) in enumerate(zip(plain, recorded)):
            self.assertEqual(sorted(a), sorted(b))
            for name in a:
                self.assertTrue(torch.equal(a[name], b[name]),
                                "step %d: %s differs with the recorder" % (step, name))

    def test_tied_language_model_scripted_sgd(self):
        self.check(TiedLanguageModel, "lm", sgd, "scripted")

    def test_tied_language_model_scripted_adam(self):
        self.check(TiedLanguageModel, "lm", adam, "scripted")

    def test_tied_language_model_traced_adam(self):
        self.check(TracedOnlyLanguageModel, "lm", adam, "traced")

    def test_tied_language_model_exported_adam(self):
        self.check(TiedLanguageModel, "lm", adam, "exported")

    def test_batchnorm_dropout_exported_sgd(self):
        self.check(BatchNormNet, "mlp", sgd, "exported")

    def test_tied_language_model_eager_sgd(self):
        self.check(EagerOnlyLanguageModel, "lm", sgd, "state_dict")

    def test_batchnorm_dropout_scripted_sgd(self):
        self.check(BatchNormNet, "mlp", sgd, "scripted")

    def test_batchnorm_dropout_traced_adam(self):
        class Traced(BatchNormNet):
            def forward(self, x, **options):  # noqa: D102
                return super().forward(x)
        self.check(Traced, "mlp", adam, "traced")


if __name__ == "__main__":
    unittest.main()

"""Real PyTorch trainings in which a quantity inside the model drifts for hundreds of steps while the
loss stays flat, until a number overflows (issue 50), and a NaN written by an optimizer update well
after the first steps. Each comes with a healthy twin that differs only in the fix a person would
apply, so that the scan is scored on telling the two apart, not on finding drift wherever it looks.
Written with nanscope's recorder; tests/python/test_scan_drifts.py scans them against their truth.

Families:
  temperature  CLIP-style contrastive pair of encoders; logits = exp(logit_scale) * cos-similarity
               (module `logits`, float16 as under AMP); the loss is a softmax written out by hand
               (exp / sum). drift: the temperature is learned from step `event` on, with nothing to
               bound it: the largest logit climbs from ~1 for hundreds of steps until exp()
               overflows float16 (above 11.09) and the loss is NaN.
               healthy: the same, clamped at 100 as CLIP does, and the library's log-softmax in
               float32.
  adapter      a frozen base classifier with a LoRA adapter on its head (module `head.lora_b`), the
               loss a hand-written softmax computed in float16 as under AMP. The data are separable,
               the loss sits at its floor, and Adam keeps growing the adapter from step `event` on
               (its learning rate raised there) until exp() overflows float16 (above 11.09).
               healthy: the adapter has weight decay and the softmax runs in float32.
  moe          four experts behind a noisy top-1 router whose logits (module `router`) are computed
               in float16; the router is frozen until `event`, then trained: its logits climb past
               the noise while the experts it stops picking starve. drift: the gate is a
               hand-written softmax in float16, and exp() overflows (above 11.09).
               healthy: the gate's softmax runs in float32.
  variance     heteroscedastic regression: heads `mean` and `log_var` on one body, trained with a
               mean squared error, then from step `event` on with the Gaussian negative
               log-likelihood 0.5 * (log_var + (y - mean)^2 * exp(-log_var)), written out by hand in
               float16 as under AMP (the MSE warm-up, then NLL, that Seitzer et al. 2022 discuss,
               "On the Pitfalls of Heteroscedastic Uncertainty Estimation", ICLR). The targets are
               noise-free, so the likelihood rewards ever smaller variances: `log_var` falls for
               hundreds of steps while the loss keeps improving, until exp(-log_var) overflows
               float16 (above 11.09).
               healthy: torch's gaussian_nll_loss in float32, which clamps the variance at 1e-6.
  unfreeze     a residual block whose last layer starts at zero (zero-init residual) is added to
               Adam (eps=0) at step `event` (gradual unfreezing); its other parameters have exactly
               zero gradient there, and Adam's first update divides 0 by 0: NaN in the weights,
               then in the block's BatchNorm statistics and the loss.
               healthy: the same with eps=1e-8.
"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from nanscope_recorder import Recorder  # noqa: E402

import kept_runs  # noqa: E402  (beside this file)

FAMILIES = ("temperature", "adapter", "moe", "unfreeze", "variance")
VARIANTS = ("drift", "healthy")
# Decided before any tuning of the scan: seeds 0 and 1 are the tuning set, seed 2 is held out.
TUNING_SEEDS = (0, 1)
HELD_OUT_SEEDS = (2,)
BATCH, FEATURES, CLASSES = 32, 16, 4


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(FEATURES, 32)
        self.fc2 = nn.Linear(32, 16)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))


class Similarity(nn.Module):
    """CLIP's logits: a learned temperature times the cosine similarities, in float16 as under AMP."""

    def __init__(self, clamp):
        super().__init__()
        self.logit_scale = nn.Parameter(torch.tensor(0.0))
        self.clamp = clamp

    def forward(self, a, b):
        scale = self.logit_scale.exp()
        if self.clamp:
            scale = scale.clamp(max=100.0)
        return (scale * F.normalize(a, dim=-1) @ F.normalize(b, dim=-1).t()).half()


class Contrastive(nn.Module):
    def __init__(self, clamp):
        super().__init__()
        self.image = Encoder()
        self.text = Encoder()
        self.logits = Similarity(clamp)

    def forward(self, x):
        return self.logits(self.image(x[:, 0]), self.text(x[:, 1]))


class Heteroscedastic(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(FEATURES, 32), nn.Tanh())
        self.mean = nn.Linear(32, 1)
        self.log_var = nn.Linear(32, 1)

    def forward(self, x):
        h = self.body(x)
        return torch.cat([self.mean(h), self.log_var(h)], dim=-1)


def hand_gaussian_nll(out, y):
    """The Gaussian negative log-likelihood written out, in float16 as under AMP."""
    mean, log_var = out[:, 0].half(), out[:, 1].half()
    return (0.5 * (log_var + (mean - y.half()) ** 2 * torch.exp(-log_var))).float().mean()


class LoraLinear(nn.Module):
    def __init__(self, d_in, d_out, rank=4):
        super().__init__()
        self.base = nn.Linear(d_in, d_out)
        self.lora_a = nn.Linear(d_in, rank, bias=False)
        self.lora_b = nn.Linear(rank, d_out, bias=False)
        nn.init.zeros_(self.lora_b.weight)
        self.base.requires_grad_(False)

    def forward(self, x):
        return self.base(x) + self.lora_b(self.lora_a(x))


class AdapterClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(FEATURES, 32)
        self.encoder.requires_grad_(False)
        self.head = LoraLinear(32, CLASSES)

    def forward(self, x):
        return self.head(torch.tanh(self.encoder(x)))


class Router(nn.Module):
    """Router logits, computed in float16 as under AMP."""

    def __init__(self, experts):
        super().__init__()
        self.weight = nn.Parameter(0.1 * torch.randn(experts, FEATURES))

    def forward(self, x):
        return (x.half() @ self.weight.half().t())


class Expert(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(FEATURES, 32)
        self.fc2 = nn.Linear(32, CLASSES)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))


class MixtureOfExperts(nn.Module):
    def __init__(self, float32_softmax):
        super().__init__()
        self.router = Router(4)
        self.experts = nn.ModuleList(Expert() for _ in range(4))
        self.float32_softmax = float32_softmax

    def forward(self, x):
        logits = self.router(x)
        if self.training:  # noisy gating (Shazeer et al. 2017): the router keeps learning past the noise
            logits = logits + (1.5 * torch.randn(logits.shape)).half()
        if self.float32_softmax:
            gate = torch.softmax(logits.float(), dim=-1)
        else:
            e = logits.exp()  # float16: inf above 11.09, and inf / inf is NaN
            gate = (e / e.sum(-1, keepdim=True)).float()
        choice = gate.argmax(-1)
        out = torch.zeros(x.shape[0], CLASSES)
        for k, expert in enumerate(self.experts):
            picked = choice == k
            if picked.any():
                out[picked] = gate[picked, k:k + 1] * expert(x[picked])
        return out


class ResidualBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 32)
        self.bn = nn.BatchNorm1d(32)
        self.fc2 = nn.Linear(32, 32)
        nn.init.zeros_(self.fc2.weight)
        nn.init.zeros_(self.fc2.bias)

    def forward(self, x):
        return x + self.fc2(torch.tanh(self.bn(self.fc1(x))))


class Unfrozen(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Linear(FEATURES, 32)
        self.block = ResidualBlock()
        self.head = nn.Linear(32, CLASSES)

    def forward(self, x):
        return self.head(self.block(torch.tanh(self.stem(x))))


def hand_softmax_loss(logits, targets):
    """Cross-entropy through exp / sum, as custom contrastive and gating code writes it."""
    e = logits.exp()
    p = e / e.sum(-1, keepdim=True)
    return -torch.log(p.gather(1, targets[:, None]).float()).mean()


def plan(family, variant, seed):
    rng = torch.Generator().manual_seed(7919 * seed + 31 * FAMILIES.index(family) + VARIANTS.index(variant))
    event = int(torch.randint(150, 260, (1,), generator=rng))
    steps = {"temperature": 1800, "adapter": 1400, "moe": 1800, "unfreeze": 400, "variance": 2000}[family]
    log_every = (1, 2, 5)[(seed + FAMILIES.index(family)) % 3]
    return {"family": family, "variant": variant, "seed": seed, "event": event, "steps": steps,
            "log_every": log_every, "held_out": seed in HELD_OUT_SEEDS}


def batch(family, generator, prototypes):
    y = torch.randint(0, CLASSES, (BATCH,), generator=generator)
    if family == "temperature":
        z = torch.randn(BATCH, FEATURES, generator=generator)
        pair = torch.stack([z @ prototypes[0], z @ prototypes[1]], dim=1)
        return pair + 0.1 * torch.randn(pair.shape, generator=generator), torch.arange(BATCH)
    if family == "variance":  # noise-free targets of a smooth function
        x = torch.randn(BATCH, FEATURES, generator=generator)
        return x, torch.tanh(x @ prototypes[0] / 4)
    x = prototypes[0][y] + 0.5 * torch.randn(BATCH, FEATURES, generator=generator)
    return x, y


def generate(run_dir, spec):
    """Trains one run into run_dir; returns the truth: the class a person would give it, the step
    where the drift began, the module it lives in, and the first non-finite step."""
    family, variant, event = spec["family"], spec["variant"], spec["event"]
    drift = variant == "drift"
    torch.manual_seed(spec["seed"])
    data = torch.Generator().manual_seed(spec["seed"] + 4242)
    protos = torch.Generator().manual_seed(99)
    if family == "temperature":
        prototypes = (torch.randn(FEATURES, FEATURES, generator=protos), torch.randn(FEATURES, FEATURES, generator=protos))
        model = Contrastive(clamp=not drift)
        encoders = [p for n, p in model.named_parameters() if not n.startswith("logits.")]
        # OpenCLIP's betas: with beta2 = 0.98 Adam's step stays near its learning rate while the
        # gradient keeps its sign, however small it gets as the loss nears zero.
        opt = torch.optim.Adam([{"params": encoders, "lr": 1e-3},
                                {"params": [model.logits.logit_scale], "lr": 0.0, "name": "temperature"}],
                               betas=(0.9, 0.98))
        precursor = "logits"
    elif family == "adapter":
        prototypes = (3.0 * torch.randn(CLASSES, FEATURES, generator=protos),)
        model = AdapterClassifier()
        opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3, weight_decay=0.5,
                                betas=(0.9, 0.98))
        precursor = "head.lora_b"
    elif family == "moe":
        prototypes = (3.0 * torch.randn(CLASSES, FEATURES, generator=protos),)
        model = MixtureOfExperts(float32_softmax=not drift)
        opt = torch.optim.Adam([{"params": model.experts.parameters(), "lr": 1e-3},
                                {"params": [model.router.weight], "lr": 0.0, "name": "router"}], betas=(0.9, 0.98))
        precursor = "router"
    elif family == "variance":
        prototypes = (torch.randn(FEATURES, generator=protos),)
        model = Heteroscedastic()
        opt = torch.optim.Adam(model.parameters(), lr=3e-3)
        precursor = "log_var"
    else:
        prototypes = (3.0 * torch.randn(CLASSES, FEATURES, generator=protos),)
        model = Unfrozen()
        eps = 0.0 if drift else 1e-8
        opt = torch.optim.Adam(list(model.stem.parameters()) + list(model.head.parameters()), lr=1e-3, eps=eps)
        precursor = None
    # The experts a step does not route to do not run: their activation cells are empty at that step.
    rec = Recorder(run_dir, model, loss_name="loss", checkpoint_every=0, activations_every=1,
                   run_name=os.path.basename(run_dir), overwrite=True)
    truth = dict(spec)
    truth.update({"class": "gradual" if drift and precursor else ("update_nan" if drift else "healthy"),
                  "precursor": precursor if drift else None, "first_nonfinite_step": None,
                  "nan_parameter_step": None})
    for step in range(spec["steps"]):
        if truth["first_nonfinite_step"] is not None and step > truth["first_nonfinite_step"] + 30:
            break
        if step == event:
            if family == "temperature":
                opt.param_groups[1]["lr"] = 3e-3
            elif family == "adapter" and drift:  # a resumed config that lost the weight decay, at a higher rate
                opt.param_groups[0].update(lr=4e-3, weight_decay=0.0)
            elif family == "moe":
                opt.param_groups[1]["lr"] = 1.5e-3
            elif family == "unfreeze":
                opt.add_param_group({"params": list(model.block.parameters()), "lr": 1e-3, "eps": opt.defaults["eps"]})
        x, y = batch(family, data, prototypes)
        logged = step % spec["log_every"] == 0
        if logged:
            rec.begin_step(step, inputs={"x": x}, targets=y)
        model.train()
        out = model(x)
        if family == "variance" and step < event:  # the warm-up: the mean alone
            loss = F.mse_loss(out[:, 0], y)
        elif family == "variance" and drift:
            loss = hand_gaussian_nll(out, y)
        elif family == "variance":
            loss = F.gaussian_nll_loss(out[:, 0], y, out[:, 1].exp())
        elif family == "moe" or (family == "adapter" and not drift) or (family == "temperature" and not drift) \
                or family == "unfreeze":
            loss = F.cross_entropy(out.float(), y)
        elif family == "adapter":
            loss = hand_softmax_loss(out.half(), y)
        else:
            loss = 0.5 * (hand_softmax_loss(out, y) + hand_softmax_loss(out.t(), y))
        opt.zero_grad()
        loss.backward()
        if not math.isfinite(loss.item()) and truth["first_nonfinite_step"] is None:
            truth["first_nonfinite_step"] = step
        if logged:
            rec.end_step(loss, lr=opt.param_groups[0]["lr"])
        opt.step()
        if truth["nan_parameter_step"] is None and \
                not all(torch.isfinite(p).all() for p in model.parameters()):
            truth["nan_parameter_step"] = step
    rec.close()
    return truth


def all_specs(seeds=TUNING_SEEDS + HELD_OUT_SEEDS):
    return kept_runs.twin_specs(sys.modules[__name__], seeds)


run_name = kept_runs.twin_name


if __name__ == "__main__":
    kept_runs.main(sys.modules[__name__], sys.argv)

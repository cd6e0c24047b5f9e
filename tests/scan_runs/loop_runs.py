"""Real PyTorch trainings whose failure comes from the training loop rather than from one layer
(issue 50): a learning rate that keeps rising under gradient clipping, and a PPO policy whose
spread collapses until its probability ratio overflows. Each comes with a healthy twin that
differs only in the fix a person would apply. Written with nanscope's recorder;
tests/python/test_scan_loops.py scans them against their truth.

Families:
  lstm   an LSTM regressor trained with SGD and momentum, its gradients clipped to norm 1 before
         the recorder sees them (as a Trainer does), its loss computed in float16 as under AMP.
         The learning rate rises from the first step (a warm-up). drift: the warm-up never ends
         (x1.03 a step, its length set in epochs where steps were meant); the loss falls, then
         climbs once the steps are too large for the loss surface, until its float16 square
         overflows. The truth's onset is not before the step where the smoothed loss was lowest:
         nothing a person would call abnormal happens while the loss still improves.
         healthy: the warm-up stops at its peak. (`event` is drawn for every family, and not used
         by this one: its learning rate rises from the first step.)
  ppo    PPO's clipped surrogate on a contextual bandit with a Gaussian policy (mean from module
         `policy.mean`, a learned log standard deviation `policy.log_std`), four updates a rollout.
         As in CleanRL's PPO (vwxyzjn/cleanrl, cleanrl/ppo_continuous_action.py at 016ca33:
         `actor_logstd`, `ratio = logratio.exp()`, `loss = pg_loss - ent_coef * entropy_loss + ...`)
         the log standard deviation is one parameter for every state, the ratio
         exp(log p_new - log p_old) is taken before it is clipped, and the entropy bonus is
         subtracted from the loss. The log-probabilities are computed in float16, as under AMP.
         drift: from step `event` the entropy bonus has the wrong sign (a config that flipped it),
         so log_std falls step after step; the log-probabilities grow as 1/std^2 until their
         float16 squares (above 65504) or 1/std itself (above exp(11.09)) overflow, and the
         gradients are NaN. The drift lives in `policy.log_std`.
         healthy: the entropy bonus keeps its sign.
"""
import math
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from nanscope_recorder import Recorder  # noqa: E402

import kept_runs  # noqa: E402  (beside this file)

FAMILIES = ("lstm", "ppo")
VARIANTS = ("drift", "healthy")
# Decided before any tuning of the scan: seeds 0 and 1 are the tuning set, seed 2 is held out.
TUNING_SEEDS = (0, 1)
HELD_OUT_SEEDS = (2,)
BATCH = 32


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 32, batch_first=True)
        self.head = nn.Linear(32, 1)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1]).squeeze(-1)


class GaussianPolicy(nn.Module):
    def __init__(self, features, actions):
        super().__init__()
        self.body = nn.Linear(features, 32)
        self.mean = nn.Linear(32, actions)
        self.log_std = nn.Parameter(torch.zeros(actions))

    def forward(self, x):
        return self.mean(torch.tanh(self.body(x)))

    def log_prob(self, mean, actions):
        # In float16, as under AMP: 1/std overflows above exp(11.09), and z*z above 65504.
        z = (actions - mean).half() * torch.exp(-self.log_std).half()
        return (-0.5 * (z * z).float() - self.log_std - 0.5 * math.log(2 * math.pi)).sum(-1)

    def entropy(self):
        return (self.log_std + 0.5 * math.log(2 * math.pi * math.e)).sum()


class Agent(nn.Module):
    def __init__(self, features, actions):
        super().__init__()
        self.policy = GaussianPolicy(features, actions)

    def forward(self, x):
        return self.policy(x)


def plan(family, variant, seed):
    rng = torch.Generator().manual_seed(7919 * seed + 31 * FAMILIES.index(family) + VARIANTS.index(variant))
    event = int(torch.randint(150, 260, (1,), generator=rng))
    steps = {"lstm": 700, "ppo": 1800}[family]
    log_every = (1, 2, 5)[(seed + FAMILIES.index(family)) % 3]
    return {"family": family, "variant": variant, "seed": seed, "event": event, "steps": steps,
            "log_every": log_every, "held_out": seed in HELD_OUT_SEEDS}


def smoothed_minimum_step(losses, upto):
    """The step where the loss's moving median over 15 steps was lowest, before `upto`."""
    steps = sorted(s for s in losses if s < upto)
    best, best_step = float("inf"), None
    for i in range(len(steps)):
        window = sorted(losses[s] for s in steps[max(0, i - 7):i + 8])
        level = window[len(window) // 2]
        if level < best:
            best, best_step = level, steps[i]
    return best_step


def train_lstm(run_dir, spec, truth):
    drift = spec["variant"] == "drift"
    data = torch.Generator().manual_seed(spec["seed"] + 4242)
    weights = torch.randn(4, generator=torch.Generator().manual_seed(99))
    model = Regressor()
    rec = recorder(run_dir, model)
    lr0, peak = 2e-3, 2e-2
    opt = torch.optim.SGD(model.parameters(), lr=lr0, momentum=0.9)
    losses = {}
    for step in range(spec["steps"]):
        if truth["first_nonfinite_step"] is not None and step > truth["first_nonfinite_step"] + 30:
            break
        lr = lr0 * 1.03 ** step
        opt.param_groups[0]["lr"] = lr if drift else min(lr, peak)
        x = torch.randn(BATCH, 16, 4, generator=data)
        y = (x @ weights).cumsum(1)[:, -1] / 4
        logged = step % spec["log_every"] == 0
        if logged:
            rec.begin_step(step, inputs={"x": x}, targets=y)
        out = model(x)
        loss = ((out.half() - y.half()) ** 2).mean()  # float16, as under AMP
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        value = loss.item()
        if math.isfinite(value):
            losses[step] = value
        elif truth["first_nonfinite_step"] is None:
            truth["first_nonfinite_step"] = step
        if logged:
            rec.end_step(loss, lr=opt.param_groups[0]["lr"])
        opt.step()
    rec.close()
    if truth["first_nonfinite_step"] is not None:
        truth["loss_best_step"] = smoothed_minimum_step(losses, truth["first_nonfinite_step"])


def train_ppo(run_dir, spec, truth):
    drift = spec["variant"] == "drift"
    features, actions, epochs = 8, 2, 4
    data = torch.Generator().manual_seed(spec["seed"] + 4242)
    target = torch.randn(features, actions, generator=torch.Generator().manual_seed(99))
    model = Agent(features, actions)
    rec = recorder(run_dir, model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    entropy_coef = 0.01
    for step in range(spec["steps"]):
        if truth["first_nonfinite_step"] is not None and step > truth["first_nonfinite_step"] + 30:
            break
        if step == spec["event"] and drift:
            entropy_coef = -0.2  # the bonus flipped into a penalty
        if step % epochs == 0:
            # A rollout with the policy as it is (the "old" policy), then `epochs` updates on it.
            obs = torch.randn(BATCH, features, generator=data)
            with torch.no_grad():
                old_mean = model(obs)
                acts = old_mean + torch.exp(model.policy.log_std) * torch.randn(old_mean.shape, generator=data)
                old_logp = model.policy.log_prob(old_mean, acts)
                reward = -((acts - obs @ target) ** 2).sum(-1)
                advantage = (reward - reward.mean()) / (reward.std() + 1e-8)
        logged = step % spec["log_every"] == 0
        if logged:
            rec.begin_step(step, inputs={"obs": obs})
        ratio = torch.exp(model.policy.log_prob(model(obs), acts) - old_logp)
        surrogate = torch.min(ratio * advantage, ratio.clamp(0.8, 1.2) * advantage)
        loss = -surrogate.mean() - entropy_coef * model.policy.entropy()
        opt.zero_grad()
        loss.backward()
        if not math.isfinite(loss.item()) and truth["first_nonfinite_step"] is None:
            truth["first_nonfinite_step"] = step
        if logged:
            rec.end_step(loss, lr=opt.param_groups[0]["lr"])
        opt.step()
    rec.close()


def recorder(run_dir, model):
    return Recorder(run_dir, model, loss_name="loss", checkpoint_every=0, activations_every=1,
                    run_name=os.path.basename(run_dir), overwrite=True)


def generate(run_dir, spec):
    """Trains one run into run_dir; returns the truth: the class a person would give it, the first
    non-finite step, and where the drift lives."""
    drift = spec["variant"] == "drift"
    torch.manual_seed(spec["seed"])
    truth = dict(spec)
    truth.update({"class": "gradual" if drift else "healthy", "first_nonfinite_step": None,
                  "precursor": "policy.log_std" if drift and spec["family"] == "ppo" else None})
    {"lstm": train_lstm, "ppo": train_ppo}[spec["family"]](run_dir, spec, truth)
    return truth


def all_specs(seeds=TUNING_SEEDS + HELD_OUT_SEEDS):
    return kept_runs.twin_specs(sys.modules[__name__], seeds)


run_name = kept_runs.twin_name


if __name__ == "__main__":
    kept_runs.main(sys.modules[__name__], sys.argv)

"""The scan against the online spike rules other training tools ship (issue 50), on the families
corpora with their truth (tests/scan_runs/family_runs.py, drift_runs.py and loop_runs.py): per run, each system's
first alarm against the truth's window: hit, early, late, false alarm (a healthy run), missed.

Usage:
  bench/detection_vs_peers.py NANSCOPE_BINARY [--families DIR] [--drifts DIR] [--loops DIR] [--markdown]
DIR holds runs with their truth (<name>.truth.json, as the tests' NANSCOPE_KEEP_*_RUNS folders
keep them); a missing run is trained into it first (about 5 minutes for the three corpora, one thread).

The five rules, re-implemented from their public source (read 2026-12-06; the commit is the one read):
  lightning  Lightning's SpikeDetection (lightning 2.6.6, lightning/fabric/utilities/spike.py):
             the loss, mode "min", window 10, warmup 1, rtol 2, finite_only: a spike when the loss is
             non-finite, or rose over the last accepted loss and is >= 3x the mean of the last 10
             accepted losses (spikes are not accepted).
  foundry    llm-foundry's KillLossSpike (mosaicml/llm-foundry 8c8dd48,
             llmfoundry/callbacks/kill_loss_spike_callback.py): once 100 losses are in the window,
             the 5th consecutive loss >= 2x the window's mean (patience 4); from step 200, half the
             window above loss_cap 10. NaN compares false: it never fires on NaN.
  sigma6     OLMo-core's SkipStepOptimizer (allenai/OLMo-core fa6c501,
             src/olmo_core/optim/skip_step_optimizer.py; Levanter's skip_bad_steps is the same rule,
             stanford-crfm/levanter 9263f81, src/levanter/optim/skipstep.py): from 64 values on, a step
             whose loss or gradient norm is more than 6 standard deviations (unbiased) above the mean
             of the previous up to 128; NaN fails the comparison, so it is skipped.
  megatron   Megatron-LM's rerun state machine (NVIDIA/Megatron-LM d98e8a6,
             megatron/core/rerun_state_machine.py is_unexpectedly_large, called by pretrain_gpt.py with
             SPIKY_LOSS_FACTOR 10): after the first iteration, the first 100 losses set a maximum; from
             then on |loss| >= 10x that maximum. Megatron checks the loss for NaN separately
             (check_for_nan_in_loss_and_grad, on by default): counted as its alarm too.
  zclip      ZClip (bluorion-com/ZClip 584ce4f, zclip/zclip.py; arXiv:2504.02507): the gradient norm;
             after 25 warm-up steps, mean and population variance of them, then z = (g - mean) /
             (std + 1e-6) > 2.5 is a spike; the EMA (alpha 0.97) takes the clipped value on a spike.
             A NaN norm compares false and poisons the EMA: it never fires afterwards.
Each rule sees one value per logged row (the corpora log every 1, 2, 5 or 10 steps).

nanscope's alarm is the first incident a user reads (most severe first) among blow-ups, spikes,
non-finite bursts, BatchNorm corruption, non-finite parameters and activation growth, at its onset.
"""
import math
import os
import sys
from collections import deque

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "scan_runs"))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import kept_runs  # noqa: E402

# The incidents that are an alarm of instability (a starved expert or a vanishing layer is a finding
# of another kind, which no spike rule looks for).
ALARM_KINDS = ("blowup", "spike", "nonfinite_loss", "nonfinite_gradient", "bn_corruption", "nonfinite_parameters",
               "activation_growth")


def finite(v):
    return v is not None and math.isfinite(v)


def lightning(loss, grad):
    window, last = deque(maxlen=10), None
    for i, v in enumerate(loss):
        spike = False
        if i >= 1:
            if not finite(v):
                spike = True
            elif last is not None and v - last > 0 and window:
                mean = sum(window) / len(window)
                spike = abs(v - mean) >= abs(2.0 * mean)
        if spike:
            return i
        if finite(v):
            window.append(v)
            last = v
    return None


def foundry(loss, grad):
    window, outliers = deque(maxlen=100), 0
    for i, v in enumerate(loss):
        if len(window) == 100:
            mean = sum(window) / len(window)
            if v >= 2.0 * mean:
                outliers += 1
                if outliers > 4:
                    return i
            elif outliers > 0:
                outliers = 0
            if i >= 200 and sum(1 for w in window if w > 10.0) >= 50:
                return i
        window.append(v)
    return None


def sigma6(loss, grad):
    losses, grads = [], []
    for i, (v, g) in enumerate(zip(loss, grad)):
        losses.append(v)
        grads.append(g)
        del losses[:-129]
        del grads[:-129]
        if len(losses) < 64:
            continue

        def above(history, x):
            prev = history[:-1]
            mean = sum(prev) / len(prev)
            std = math.sqrt(sum((p - mean) ** 2 for p in prev) / (len(prev) - 1))
            return not (x - mean <= 6.0 * std)  # NaN anywhere fails the comparison: skipped

        if above(losses, v) or (g is not None and above(grads, g)):
            return i
    return None


def megatron(loss, grad):
    maximum, counted = 0.0, 0
    for i, v in enumerate(loss):
        if not finite(v):
            return i  # the NaN check
        if i == 0:
            continue  # the first iteration is not checked
        if counted < 100:
            counted += 1
            maximum = max(maximum, abs(v))
            continue
        if abs(v) >= 10.0 * maximum:
            return i
    return None


def zclip(loss, grad):
    if grad is None or not any(g is not None for g in grad):
        return None
    buffer, mean, var = [], None, None
    for i, g in enumerate(grad):
        if mean is None:
            buffer.append(g)
            if len(buffer) == 25:
                mean = sum(buffer) / 25
                var = sum((b - mean) ** 2 for b in buffer) / 25
            continue
        std = math.sqrt(var) if var is not None and var >= 0 else float("nan")
        z = (g - mean) / (std + 1e-6)
        used = g
        if z > 2.5:
            return i
        mean = 0.97 * mean + 0.03 * used
        var = 0.97 * var + 0.03 * (used - mean) ** 2
    return None


RULES = {"lightning": lightning, "foundry": foundry, "sigma6": sigma6, "megatron": megatron, "zclip": zclip}


def truth_window(truth):
    """(first, last) step of a right alarm, or None for a healthy run."""
    cls, event, every = truth["class"], truth.get("event"), truth.get("log_every", 1)
    nan = truth.get("first_nonfinite_step")
    end = nan if nan is not None else truth["steps"]
    if cls == "healthy":
        return None
    if cls in ("sudden", "lr_spike"):
        return event - every, event + every + 1
    if cls == "gradual" and truth.get("loss_best_step") is not None:  # loop_runs' clipped LSTM: not before its best
        return truth["loss_best_step"] - 10, end - 15
    if cls == "gradual" and "precursor" not in truth:
        return event - 20, end - 15
    if cls == "gradual":  # a drift inside the model (drift_runs): from where it began
        drift = end - event
        return event - max(20, drift // 10), event + max(20, 15 * drift // 100)
    if cls == "attn_growth":
        return event - 2 * every, event + max(every, (end - event) // 2)
    if cls == "param_nan":
        return event, event + every + 1
    if cls == "update_nan":
        return truth["nan_parameter_step"], truth["nan_parameter_step"] + every
    raise ValueError(cls)


def verdict(window, step):
    if window is None:
        return "right" if step is None else "false alarm"
    if step is None:
        return "missed"
    if step < window[0]:
        return "early"
    return "hit" if step <= window[1] else "late"


def read_scalars(run_dir):
    import h5py
    with h5py.File(os.path.join(run_dir, "run.h5"), "r") as f:
        steps = [int(s) for s in f["scalars/steps"][:]]
        loss = [float(v) for v in f["scalars/loss"][:]]
        grad = [float(v) for v in f["scalars/grad_norm"][:]] if "grad_norm" in f["scalars"] else None
    return steps, loss, grad


def nanscope_alarm(binary, run_dir):
    for incident in kept_runs.scan_incidents(binary, run_dir):
        if incident["kind"] in ALARM_KINDS and incident["severity"] in ("critical", "warning"):
            return incident["onset_step"]
    return None


def corpus(directory, module):
    """(name, truth, run dir) of every run of the corpus, training those not there yet."""
    os.makedirs(directory, exist_ok=True)
    out = []
    for spec in module.all_specs():
        name = module.run_name(spec)
        out.append((name, kept_runs.generate_or_reuse(module, directory, spec, True), os.path.join(directory, name)))
    return out


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    binary = argv[1]
    families_dir = argv[argv.index("--families") + 1] if "--families" in argv else "/tmp/nanscope-peers/families"
    drifts_dir = argv[argv.index("--drifts") + 1] if "--drifts" in argv else "/tmp/nanscope-peers/drifts"
    loops_dir = argv[argv.index("--loops") + 1] if "--loops" in argv else "/tmp/nanscope-peers/loops"
    import drift_runs
    import family_runs
    import loop_runs
    runs = corpus(families_dir, family_runs) + corpus(drifts_dir, drift_runs) + corpus(loops_dir, loop_runs)
    systems = ["nanscope"] + list(RULES)
    rows, tally = [], {s: {"all": [0, 0], "held": [0, 0]} for s in systems}
    misses_where_a_rule_was_right, gradual_not_first, gradual_runs = [], [], []
    for name, truth, run_dir in runs:
        steps, loss, grad = read_scalars(run_dir)
        window = truth_window(truth)
        alarms = {"nanscope": nanscope_alarm(binary, run_dir)}
        for rule, detect in RULES.items():
            row = detect(loss, grad)
            alarms[rule] = steps[row] if row is not None else None
        verdicts = {s: verdict(window, alarms[s]) for s in systems}
        right = {s: verdicts[s] in ("hit", "right") for s in systems}
        for s in systems:
            for part in ("all",) + (("held",) if truth.get("held_out") else ()):
                tally[s][part][0] += right[s]
                tally[s][part][1] += 1
        if not right["nanscope"] and any(right[r] for r in RULES):
            misses_where_a_rule_was_right.append(name)
        if truth["class"] in ("gradual", "attn_growth"):
            # Against the rules' alarms that were not false (before the window: a false alarm).
            rivals = [alarms[r] for r in RULES if alarms[r] is not None and alarms[r] >= window[0]]
            gradual_runs.append(name)
            if alarms["nanscope"] is None or verdicts["nanscope"] == "early" or \
                    (rivals and alarms["nanscope"] >= min(rivals)):
                gradual_not_first.append(name)
        cell = lambda s: verdicts[s] + ("" if alarms[s] is None else " %d" % alarms[s])  # noqa: E731
        rows.append("| %s%s | %s | %s | %s |" % (name, " (held out)" if truth.get("held_out") else "", truth["class"],
                                                 "-" if window is None else "%d-%d" % window,
                                                 " | ".join(cell(s) for s in systems)))
    print("| run | truth | window | " + " | ".join(systems) + " |")
    print("|---|---|---|" + "---|" * len(systems))
    print("\n".join(rows))
    print()
    print("| | " + " | ".join(systems) + " |")
    print("|---|" + "---|" * len(systems))
    print("| right, all runs | " + " | ".join("%d/%d" % tuple(tally[s]["all"]) for s in systems) + " |")
    print("| right, held out | " + " | ".join("%d/%d" % tuple(tally[s]["held"]) for s in systems) + " |")
    print()
    print("nanscope wrong where a rule was right: %s" % (", ".join(misses_where_a_rule_was_right) or "none"))
    print("gradual runs (%d) where nanscope's alarm was not right and earlier than every rule's that was not "
          "early: %d: %s" % (len(gradual_runs), len(gradual_not_first), ", ".join(gradual_not_first) or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

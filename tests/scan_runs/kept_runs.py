"""What the corpora of real trainings (family_runs.py, drift_runs.py) share with the tests and the
benchmark that use them: training a run or reusing a kept one, scanning it, and the command line
that trains a corpus into a folder."""
import json
import os
import subprocess
import sys
import time


def generate_or_reuse(corpus, directory, spec, keep):
    """The truth of `spec`'s run in `directory`: trained there, or, in a kept folder that already
    has the run with its truth for the same spec, reused (rescanning after a scan change then takes
    seconds, not minutes of training)."""
    import torch
    # One thread: a reduction split over more threads sums in another order, and a blow-up magnifies
    # the last bit, so the runs (and the verdicts) would depend on the machine's core count.
    torch.set_num_threads(1)
    run_dir = os.path.join(directory, corpus.run_name(spec))
    truth_file = run_dir + ".truth.json"
    if keep and os.path.exists(truth_file) and os.path.isdir(run_dir):
        with open(truth_file) as f:
            truth = json.load(f)
        if all(truth.get(k) == v for k, v in spec.items()):
            return truth
    truth = corpus.generate(run_dir, spec)
    if keep:
        with open(truth_file, "w") as f:
            json.dump(truth, f)
    return truth


def scan_incidents(binary, run_dir):
    """`nanscope scan RUN --json`'s incidents; a failed scan (not exit 0 or 1) raises."""
    done = subprocess.run([binary, "scan", run_dir, "--json"], capture_output=True, text=True, timeout=300)
    if done.returncode not in (0, 1):
        raise AssertionError("scan of %s failed (%d): %s" % (run_dir, done.returncode, done.stderr))
    return json.loads(done.stdout)["incidents"]


def main(corpus, argv):
    """`python CORPUS.py OUT [NAME_FILTER...]`: trains every run (or those whose name contains a
    filter) into OUT and prints each one's time and truth."""
    import torch
    torch.set_num_threads(1)
    out, only = argv[1], argv[2:]
    for spec in corpus.all_specs():
        name = corpus.run_name(spec)
        if only and not any(o in name for o in only):
            continue
        started = time.time()
        truth = corpus.generate(os.path.join(out, name), spec)
        print(name, "%.1fs" % (time.time() - started), json.dumps(truth), flush=True)

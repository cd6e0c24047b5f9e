"""What the corpora of real trainings (family_runs.py, drift_runs.py, loop_runs.py) share with the
tests and the benchmark that use them: training a run or reusing a kept one, scanning it, the specs
and names of a corpus of families with a drift and a healthy twin, and the command line that trains
a corpus into a folder."""
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor


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


def twin_specs(corpus, seeds):
    """Every (family, variant, seed) spec of a corpus of twins (drift_runs, loop_runs)."""
    return [corpus.plan(f, v, s) for f in corpus.FAMILIES for v in corpus.VARIANTS for s in seeds]


def twin_name(spec):
    return "%s-%s-s%d" % (spec["family"], spec["variant"], spec["seed"])


def _generate_in_worker(args):
    corpus_name, directory, spec, keep = args
    return generate_or_reuse(importlib.import_module(corpus_name), directory, spec, keep)


def trained_and_scanned(corpus, binary, keep_variable, prefix):
    """(results, temporary folder or None): every run of `corpus` trained (two at a time) into the
    folder $keep_variable names, reusing what it keeps, or into a temporary one, and scanned by
    `binary`; results are (truth, incidents) pairs, and one line a run goes to stderr."""
    keep = os.environ.get(keep_variable)
    temp = None if keep else tempfile.TemporaryDirectory(prefix=prefix)
    directory = keep or temp.name
    with ProcessPoolExecutor(max_workers=2) as pool:
        truths = list(pool.map(_generate_in_worker,
                               [(corpus.__name__, directory, spec, bool(keep)) for spec in corpus.all_specs()]))
    results = [(truth, scan_incidents(binary, os.path.join(directory, corpus.run_name(truth)))) for truth in truths]
    for truth, incidents in results:
        print("%s (event %s, NaN %s): %s" % (
            corpus.run_name(truth), truth["event"], truth["first_nonfinite_step"],
            "; ".join("%s %s@%s %s %s" % (i["kind"], i["severity"], i["onset_step"], i.get("pattern") or "",
                                          (i["layers"] or [""])[0]) for i in incidents[:3])), file=sys.stderr)
    return results, temp


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

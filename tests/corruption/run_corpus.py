#!/usr/bin/python3
"""Runs nanscope's commands on every case of the corruption corpus and counts the outcomes.

    /usr/bin/python3 tests/corruption/run_corpus.py --nanscope build/bin/nanscope --runs build/test-runs \
        --work build/corruption [--subset] [--limit N] [--timeout S] [--jobs J] [--kind PREFIX]

Each case (see make_corpus.py) is a run directory with one damaged or hostile file. The commands that
read that file run on it, each with a timeout, and each outcome is one of:
  clear    exit 2 with a message naming the damaged file (what a user can act on)
  success  exit 0 or 1 (the file was readable after all, or the damage was tolerated)
  unclear  any other non-zero exit, or exit 2 without naming the file
  crash    killed by a signal, or an exit status >= 128 (abort, sanitizer)
  hang     still running at the timeout (killed, with its children)
  changed  a file of the case was written, removed or added (nanscope must never write into a run)
Prints a table of case kinds x outcomes and lists every crash, hang, change and unclear message.
Exits 1 if any crash, hang or change happened; unclear messages are reported, not failures.

--subset runs only the cases (and commands) listed in SUBSET below: ones verified not to crash or hang
on main, few enough for the test suite (ctest corruption_corpus_subset). The full corpus is
bench/corruption_corpus.sh.
"""

import argparse
import collections
import concurrent.futures
import hashlib
import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_corpus  # noqa: E402

OUTCOMES = ("clear", "success", "unclear", "crash", "hang", "changed")
FAILURES = ("crash", "hang", "changed")

# The cases the test suite runs, each with the commands to run on it: every one verified to end
# without a crash or hang on main (2026-12-01), about 30 commands (~20 s on 2 busy cores). Cases that
# hang there today stay in the full corpus only (bench/corruption_corpus.sh): most run.h5 metadata
# byte flips and the 16-byte truncation (> 60 s each), FIFOs in place of run.h5 or a checkpoint, and
# the memoised "billion laughs" pickle (refused, but only after 2.9 GB and, on a loaded machine,
# more than 15 s).
SUBSET = {
    "h5-truncate-0": ["info", "scan"],
    "h5-truncate-4096": ["info", "window"],
    "h5-truncate-half": ["info", "scan", "replay"],
    "h5-contract-scalars-loss-string": ["scan"],
    "h5-contract-layers-3d": ["scan", "window"],
    "h5-contract-soft-link-loop": ["info"],
    "h5-contract-names-int": ["info"],
    "special-h5-directory": ["info"],
    "ckpt-truncate-1024": ["stats", "replay"],
    "ckpt-truncate-end-22": ["stats"],
    "pickle-os-system-ckpt": ["stats", "replay"],
    "pickle-builtins-eval-batch": ["replay"],
    "pickle-nested-lists-100k-ckpt": ["stats"],
    "pickle-stride0-1e12-ckpt": ["stats"],
    "pickle-size-overflow-ckpt": ["stats"],
    "pickle-zip-deflated-ckpt": ["stats"],
    "pickle-billion-laughs-dict-ckpt": ["stats"],
    "batch-inputs-rank1": ["replay"],
    "ckpt-param-float64": ["replay"],
    "st-bad-u-escape-short": ["stats"],
    "st-shape-expression": ["stats"],
    "st-header-length-huge": ["stats"],
    "st-header-deep-arrays": ["stats"],
    "st-offsets-past-end": ["stats"],
    "special-ckpt-empty": ["stats"],
}

CKPT = make_corpus.CKPT
BATCH = make_corpus.BATCH


def commands_for(case):
    """The commands that read the case's damaged file: (label, argv after the binary)."""
    run, target = case["dir"], case["target"]
    path = os.path.join(run, target)
    screenshot = ["window", [run, "--screenshot", os.path.join(case["scratch"], "window.png")]]
    if target == "run.h5":
        return [["info", ["info", run]], ["scan", ["scan", run]],
                ["replay", ["replay", run, "--step", "0"]], screenshot]
    if target == CKPT:
        # The window reads checkpoints only through `nanscope stats` children, so no screenshot here.
        return [["stats", ["stats", path]], ["replay", ["replay", run, "--step", "0"]]]
    if target == BATCH:
        return [["stats", ["stats", path]], ["replay", ["replay", run, "--step", "0"]]]
    return [["stats", ["stats", path]], ["info", ["info", run]]]


def snapshot(directory):
    """Every entry under the case: regular files by content hash, anything else by its type."""
    entries = {}
    for root, dirs, files in os.walk(directory):
        for name in dirs + files:
            path = os.path.join(root, name)
            info = os.lstat(path)
            if stat.S_ISREG(info.st_mode):
                with open(path, "rb") as f:
                    entries[path] = hashlib.sha256(f.read()).hexdigest()
            else:
                entries[path] = stat.filemode(info.st_mode) + (" -> " + os.readlink(path) if stat.S_ISLNK(info.st_mode) else "")
    return entries


def classify(returncode, output, case):
    if returncode is None:
        return "hang"
    if returncode < 0 or returncode >= 128:
        return "crash"
    if returncode in (0, 1):
        return "success"
    names = {case["target"], os.path.basename(case["target"]), os.path.join(case["dir"], case["target"])}
    if returncode == 2 and any(n in output for n in names):
        return "clear"
    return "unclear"


def run_one(binary, case, label, argv, timeout):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    start = time.monotonic()
    process = subprocess.Popen([binary] + argv, cwd=case["dir"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
        returncode = process.returncode
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        returncode = None
    text = output.decode("utf-8", "replace")
    return {"case": case["name"], "kind": case["kind"], "command": label, "returncode": returncode,
            "outcome": classify(returncode, text, case), "seconds": time.monotonic() - start,
            "message": next((line for line in text.splitlines() if line.strip()), "")[:200]}


def run_case(binary, case, timeout):
    before = snapshot(case["dir"])
    wanted = case.get("commands")
    results = [run_one(binary, case, label, argv, timeout) for label, argv in commands_for(case)
               if wanted is None or label in wanted]
    after = snapshot(case["dir"])
    if before != after:
        changed = sorted(set(before.items()) ^ set(after.items()))
        results.append({"case": case["name"], "kind": case["kind"], "command": "(files)", "returncode": None,
                        "outcome": "changed", "seconds": 0.0,
                        "message": "; ".join(os.path.relpath(p, case["dir"]) for p, _ in changed)[:200]})
    return results


def print_table(results):
    counts = collections.defaultdict(collections.Counter)
    for r in results:
        counts[r["kind"]][r["outcome"]] += 1
    width = max(len(k) for k in counts) if counts else 4
    print(f"{'kind':<{width}} " + " ".join(f"{o:>8}" for o in OUTCOMES))
    total = collections.Counter()
    for kind in sorted(counts):
        total.update(counts[kind])
        print(f"{kind:<{width}} " + " ".join(f"{counts[kind][o]:>8}" for o in OUTCOMES))
    print(f"{'total':<{width}} " + " ".join(f"{total[o]:>8}" for o in OUTCOMES))
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nanscope", required=True, help="the nanscope binary")
    parser.add_argument("--runs", required=True, help="the demo runs (nanscope demo DIR)")
    parser.add_argument("--work", required=True, help="where the corpus is written (replaced)")
    parser.add_argument("--subset", action="store_true", help="only the cases the test suite runs")
    parser.add_argument("--kind", action="append", default=[], help="only cases whose name starts with this")
    parser.add_argument("--limit", type=int, default=0, help="at most N cases (spread over the corpus)")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds per command")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json", help="also write every outcome to this file")
    args = parser.parse_args()

    start = time.monotonic()
    cases = make_corpus.generate(args.runs, args.work, only=set(SUBSET) if args.subset else None)
    if args.subset:
        missing = set(SUBSET) - {c["name"] for c in cases}
        if missing:
            sys.exit(f"run_corpus: subset cases not in the corpus: {sorted(missing)}")
        cases = [dict(c, commands=SUBSET[c["name"]]) for c in cases if c["name"] in SUBSET]
    if args.kind:
        cases = [c for c in cases if any(c["name"].startswith(k) for k in args.kind)]
    if args.limit and len(cases) > args.limit:
        cases = cases[:: -(-len(cases) // args.limit)]
    scratch = tempfile.mkdtemp(prefix="nanscope-corpus-")
    for case in cases:
        case["dir"] = os.path.abspath(os.path.join(args.work, "cases", case["name"]))
        case["scratch"] = os.path.join(scratch, case["name"])
        os.makedirs(case["scratch"])
    print(f"== {len(cases)} cases, timeout {args.timeout:g} s per command, {args.jobs} jobs", flush=True)

    results = []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for case_results in pool.map(lambda c: run_case(os.path.abspath(args.nanscope), c, args.timeout), cases):
            results.extend(case_results)

    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    total = print_table(results)
    for outcome in FAILURES + ("unclear",):
        for r in results:
            if r["outcome"] == outcome:
                print(f"{outcome:>7}: {r['case']} [{r['command']}] exit {r['returncode']}: {r['message']}")
    print(f"== {len(results)} outcomes from {len(cases)} cases in {time.monotonic() - start:.1f} s")
    failures = sum(total[o] for o in FAILURES)
    if failures:
        print(f"== FAILED: {failures} crashes, hangs or changed files")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

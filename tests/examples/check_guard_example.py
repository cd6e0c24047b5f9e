"""The example guarded LibTorch loop (docs/examples/guard_training_loop.cpp): it trains, its run opens
and scans in nanscope, and the defences left their events where the broken batches were.

    check_guard_example.py EXAMPLE NANSCOPE RUN_DIR
"""
import json
import shutil
import subprocess
import sys

import h5py

STEPS = 120
BROKEN = (STEPS // 2, STEPS // 2 + 1, STEPS // 2 + 2)  # the three NaN batches the example feeds


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def main():
    example, nanscope, run = sys.argv[1:4]
    shutil.rmtree(run, ignore_errors=True)
    trained = subprocess.run([example, run, str(STEPS)], capture_output=True, text=True, timeout=300)
    if trained.returncode != 0:
        fail("the example exited with %d: %s" % (trained.returncode, trained.stderr))
    print(trained.stdout.strip())

    with h5py.File(run + "/run.h5", "r") as f:
        kinds = [k.decode() if isinstance(k, bytes) else k for k in f["events/kind"][:]]
        steps = list(f["events/steps"][:])
        skipped = f["scalars/skipped"][:]
        lr = f["scalars/lr"][:]
    events = list(zip(steps, kinds))
    if [s for s, k in events if k == "skipped_step"] != list(BROKEN):
        fail("skipped_step events at %s, expected %s" % ([s for s, k in events if k == "skipped_step"], BROKEN))
    if [s for s, k in events if k == "rollback"] != [BROKEN[-1]]:
        fail("rollback events at %s, expected one at %d" % ([s for s, k in events if k == "rollback"], BROKEN[-1]))
    if [s for s, k in events if k == "buffers_restored"] != list(BROKEN[:2]):
        fail("buffers_restored at %s, expected at %s (the rollback step restores everything)"
             % ([s for s, k in events if k == "buffers_restored"], BROKEN[:2]))
    if list(skipped[list(BROKEN)]) != [1.0, 1.0, 1.0] or skipped.sum() != 3:
        fail("/scalars/skipped marks %s" % [i for i, v in enumerate(skipped) if v])
    if not abs(lr[-1] - lr[0] / 2) < 1e-12:
        fail("the learning rate after the rollback is %g, expected half of %g" % (lr[-1], lr[0]))

    info = subprocess.run([nanscope, "info", run, "--json"], capture_output=True, text=True, timeout=120)
    if info.returncode != 0:
        fail("nanscope info exited with %d: %s" % (info.returncode, info.stderr))
    scan = subprocess.run([nanscope, "scan", run, "--json"], capture_output=True, text=True, timeout=120)
    if scan.returncode not in (0, 1):
        fail("nanscope scan exited with %d: %s" % (scan.returncode, scan.stderr))
    incidents = json.loads(scan.stdout)["incidents"]
    if not any(i.get("onset_step") in BROKEN or i.get("nonfinite_step") in BROKEN for i in incidents):
        fail("the scan found no incident at the broken batches: %s" % json.dumps(incidents)[:2000])
    print("ok: %d incident(s); events %s" % (len(incidents), sorted(set(kinds))))


if __name__ == "__main__":
    main()

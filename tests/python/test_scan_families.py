"""The scan on real PyTorch trainings of four model families (tests/scan_runs/family_runs.py):
healthy runs, classic sudden and gradual blow-ups, attention logits growing until float16
overflows, a NaN written into the weights by the optimizer update, and one huge learning-rate step.
Per class it asserts a floor on the share of runs whose pattern, onset and first bad layer are
right (not the exact outcome of one seed), and prints the quality table of docs/scan.md.

NANSCOPE_KEEP_FAMILY_RUNS=DIR keeps the runs (and reuses them on the next run: a rescan after a scan change); NANSCOPE_FAMILY_SEEDS=0,1 limits the seeds."""
import os
import sys
import tempfile
import unittest
from concurrent.futures import ProcessPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scan_runs"))
import family_runs  # noqa: E402
import kept_runs  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from incident_story import contradictions  # noqa: E402

BINARY = os.environ.get("NANSCOPE_BINARY")
# The floor a class must reach over all its runs (tuned and held out together): three in four, except
# where measured otherwise. Measured on 2026-12-01 (docs/scan.md, "Quality by model family"):
# attention-logit growth 12/12 pattern, onset and first layer; the NaN from the optimizer update
# 12/12 pattern and onset but 6/12 first layer (the other six name none: every parameter was already
# non-finite at the first logged bad row); one huge LR step 12/12 right; gradual pattern 11/12 and
# onsets 10/12 (since the divergence rule: a finite loss that climbed x20 without NaN); the same
# again on 2026-12-03 with the runs trained on one thread each. The
# floors sit one run below what was measured (another CPU's kernels may flip one run of twelve), so
# that a regression of two fails; raise them as the scan improves.
FLOOR = 0.75
FLOORS = {("attn_growth", 0): 0.9, ("attn_growth", 1): 0.9, ("attn_growth", 2): 0.9,
          ("param_nan", 2): 0.4, ("lr_spike", 0): 0.9}


def _generate(args):
    directory, spec, keep = args
    return kept_runs.generate_or_reuse(family_runs, directory, spec, keep)


def scan(run_dir):
    return kept_runs.scan_incidents(BINARY, run_dir)


def judge(truth, incidents):
    """(pattern right, onset right, first layer right or None when the class names none, why)."""
    cls, event, every = truth["class"], truth["event"], truth["log_every"]
    blowups = [i for i in incidents if i["kind"] == "blowup"]
    critical = [i for i in incidents if i["severity"] == "critical"]
    blowup = blowups[0] if blowups else None
    if cls == "healthy":
        ok = not critical and not blowups
        return ok, ok, None, "" if ok else "critical: %s" % [i["kind"] for i in critical]
    if cls == "lr_spike":
        recovered = truth["loss_after"] < 10 * truth["loss_before"]
        if not recovered:
            ok = blowup is not None
            return ok, ok and event - every <= blowup["onset_step"] <= event + every, None, "not recovered"
        spikes = [i for i in incidents if i["kind"] in ("spike", "nonfinite_loss")
                  and event - every <= i["onset_step"] <= event + every + 1]
        pattern = not critical and bool(spikes)
        dead = sorted(truth["dead"])
        reported = sorted(spikes[0]["evidence"]["dead_after"]) if spikes else []
        return pattern, pattern, reported == dead, "spikes %s dead %s vs %s" % (
            [(i["kind"], i["onset_step"]) for i in incidents], reported, dead)
    if blowup is None:
        return False, False, False if cls in ("attn_growth", "param_nan") else None, "no blow-up"
    onset, nan = blowup["onset_step"], truth["first_nonfinite_step"]
    first = blowup["layers"][0] if blowup["layers"] else ""
    why = "%s onset %d (event %d, nan %s) first %s" % (blowup["pattern"], onset, event, nan, first)
    if cls == "sudden":
        return blowup["pattern"] == "sudden", event - every <= onset <= event + every, None, why
    if cls == "gradual":
        end = nan if nan is not None else truth["steps"]
        return blowup["pattern"] == "gradual", event - 20 <= onset <= end - 15, None, why
    if cls == "attn_growth":
        end = nan if nan is not None else truth["steps"]
        right_onset = event - 2 * every <= onset <= event + max(every, (end - event) // 2)
        return blowup["pattern"] == "gradual", right_onset, first.startswith("attn."), why
    if cls == "param_nan":
        origin = blowup["evidence"].get("nonfinite_origin")
        return (blowup["pattern"] == "sudden" and origin == "parameters",
                event <= onset <= event + every + 1, first == "aux.weight", why + " origin %s" % origin)
    raise ValueError(cls)


def table(results, held_out):
    rows = {}
    for truth, verdict in results:
        if truth["held_out"] != held_out:
            continue
        cell = rows.setdefault((truth["family"], truth["class"]), [0, 0, 0, 0, 0])
        cell[0] += 1
        cell[1] += bool(verdict[0])
        cell[2] += bool(verdict[1])
        if verdict[2] is not None:
            cell[3] += bool(verdict[2])
            cell[4] += 1
    lines = ["| family | class | runs | pattern | onset | first bad layer |", "|---|---|---|---|---|---|"]
    for (family, cls), (n, p, o, l, ln) in sorted(rows.items()):
        lines.append("| %s | %s | %d | %d/%d | %d/%d | %s |" % (family, cls, n, p, n, o, n,
                                                             "%d/%d" % (l, ln) if ln else "-"))
    return "\n".join(lines)


class ScanOnModelFamilies(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not BINARY:
            raise unittest.SkipTest("NANSCOPE_BINARY not set")
        seeds = tuple(int(s) for s in os.environ.get("NANSCOPE_FAMILY_SEEDS", "0,1,2").split(","))
        keep = os.environ.get("NANSCOPE_KEEP_FAMILY_RUNS")
        cls._temp = None if keep else tempfile.TemporaryDirectory(prefix="nanscope-families-")
        directory = keep or cls._temp.name
        specs = family_runs.all_specs(seeds=seeds)
        with ProcessPoolExecutor(max_workers=2) as pool:
            truths = list(pool.map(_generate, [(directory, spec, bool(keep)) for spec in specs]))
        cls.results = []
        for truth in truths:
            incidents = scan(os.path.join(directory, family_runs.run_name(truth)))
            cls.results.append((truth, judge(truth, incidents) + ([i["kind"] for i in incidents],
                                                                  [c for i in incidents for c in contradictions(i)])))
        for truth, verdict in cls.results:
            if not all(v is not False for v in verdict[:3]):
                print("MISS %s: %s" % (family_runs.run_name(truth), verdict[3]), file=sys.stderr)
        print("\ntuned (seeds %s, families other than %s)\n%s" % (
            family_runs.TUNING_SEEDS, family_runs.HELD_OUT_FAMILIES, table(cls.results, False)), file=sys.stderr)
        print("\nheld out\n%s" % table(cls.results, True), file=sys.stderr)

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, "_temp", None):
            cls._temp.cleanup()

    def share(self, cls, index):
        verdicts = [v[index] for t, v in self.results if t["class"] == cls and v[index] is not None]
        return sum(map(bool, verdicts)) / max(1, len(verdicts)), len(verdicts)

    def assert_floor(self, cls, index, what, floor=None):
        floor = floor if floor is not None else FLOORS.get((cls, index), FLOOR)
        share, n = self.share(cls, index)
        self.assertGreater(n, 0, "%s: no generated run of this class was judged on %s" % (cls, what))
        if n:
            self.assertGreaterEqual(share, floor, "%s: %s right on %.0f%% of %d runs" % (cls, what, 100 * share, n))

    def test_adam_epsilon_domination_is_reported_where_eps_is_too_large(self):
        # The cnn family trains with Adam eps=1e-2, the transformer with AdamW eps=1e-8.
        for truth, verdict in self.results:
            if truth["class"] != "healthy" or truth["family"] not in ("cnn", "transformer"):
                continue
            kinds = verdict[4]
            self.assertEqual("adam_epsilon" in kinds, truth["family"] == "cnn", family_runs.run_name(truth))

    def test_no_incident_text_contradicts_its_own_fields(self):
        for truth, verdict in self.results:
            self.assertEqual(verdict[5], [], family_runs.run_name(truth))

    def test_healthy_runs_have_no_critical_incident(self):
        self.assert_floor("healthy", 0, "no critical incident", floor=1.0)

    def test_classic_blowups(self):
        for cls in ("sudden", "gradual"):
            self.assert_floor(cls, 0, "pattern")
            self.assert_floor(cls, 1, "onset")

    def test_attention_logit_growth_is_gradual_from_where_the_logits_began_to_grow(self):
        self.assert_floor("attn_growth", 0, "pattern gradual")
        self.assert_floor("attn_growth", 1, "onset at the growth")
        self.assert_floor("attn_growth", 2, "first bad layer in attn")

    def test_nan_from_the_optimizer_update_is_sudden_and_born_in_the_weights(self):
        self.assert_floor("param_nan", 0, "sudden, born in the parameters")
        self.assert_floor("param_nan", 1, "onset at the update")
        self.assert_floor("param_nan", 2, "first bad layer aux.weight")

    def test_one_huge_learning_rate_step_is_a_recovered_spike_with_its_aftermath(self):
        self.assert_floor("lr_spike", 0, "recovered spike, not a critical blow-up")
        self.assert_floor("lr_spike", 2, "dead layers as in the data")


if __name__ == "__main__":
    unittest.main(verbosity=2)

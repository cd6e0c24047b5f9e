"""The scan on drifts inside the model that the loss does not show, and on a NaN born in an
optimizer update well after the first steps (issue 50; tests/scan_runs/drift_runs.py): a CLIP-style
learned temperature, a LoRA adapter's output and a mixture-of-experts router, each climbing for
hundreds of steps until exp() overflows float16 (the router's logged logits short of it: the noise
before its gate is not logged); a log-variance head falling until exp(-log_var) overflows float16;
a block unfrozen into Adam with eps=0. Each has a
healthy twin with the fix a person would apply. Per family it asserts what the scan must say, on
seeds 0 and 1 (tuning) and 2 (held out, never looked at while tuning), and that no incident's text
contradicts its own fields.

NANSCOPE_KEEP_DRIFT_RUNS=DIR keeps the runs (and reuses them on the next run)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scan_runs"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import drift_runs  # noqa: E402
import kept_runs  # noqa: E402
from incident_story import contradictions  # noqa: E402

BINARY = os.environ.get("NANSCOPE_BINARY")


class ScanOnDriftsInsideTheModel(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not BINARY:
            raise unittest.SkipTest("NANSCOPE_BINARY not set")
        cls.results, cls._temp = kept_runs.trained_and_scanned(drift_runs, BINARY, "NANSCOPE_KEEP_DRIFT_RUNS", "nanscope-drifts-")

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, "_temp", None):
            cls._temp.cleanup()

    def runs(self, family, variant):
        found = [(t, i) for t, i in self.results if t["family"] == family and t["variant"] == variant]
        self.assertTrue(found, "no %s %s run was generated" % (family, variant))
        return found

    def assert_gradual_from_the_drift(self, family, named_as="exp() overflows float16 above 11.09"):
        for truth, incidents in self.runs(family, "drift"):
            name = drift_runs.run_name(truth)
            self.assertIsNotNone(truth["first_nonfinite_step"], name + ": the drift never overflowed")
            blowup = next((i for i in incidents if i["kind"] == "blowup"), None)
            self.assertIsNotNone(blowup, name)
            self.assertEqual(blowup["severity"], "critical", name)
            self.assertEqual(blowup["pattern"], "gradual", "%s: %s" % (name, blowup["cause"]))
            # From where the drift began: no earlier than 10% of the drift before the scripted step,
            # no later than 15% of it after (a slow departure crosses its noise a little late).
            drift = truth["first_nonfinite_step"] - truth["event"]
            self.assertGreaterEqual(blowup["onset_step"], truth["event"] - max(20, drift // 10), name)
            self.assertLessEqual(blowup["onset_step"], truth["event"] + max(20, 15 * drift // 100), name)
            self.assertTrue(blowup["layers"] and blowup["layers"][0].startswith(truth["precursor"]),
                            "%s: first layer %s, the drift is in %s" % (name, blowup["layers"][:1], truth["precursor"]))
            # The text names the drift with numbers and the limit it ran into, or what it is.
            self.assertIn("began in the output of " + truth["precursor"], blowup["cause"], name)
            self.assertIn(named_as, blowup["cause"], name)

    def test_a_learned_temperature_climbing_into_exp_overflow_is_a_gradual_blowup_from_where_it_began(self):
        self.assert_gradual_from_the_drift("temperature")

    def test_a_lora_adapter_growing_while_the_loss_sits_at_its_floor_is_a_gradual_blowup(self):
        self.assert_gradual_from_the_drift("adapter")

    def test_a_router_whose_logits_climb_until_its_gate_overflows_is_a_gradual_blowup(self):
        # Its logged logits stay x1.5-x1.9 below exp()'s float16 limit (the noise added before the
        # gate is not logged): the climb is measured by what exp() makes of it, as a router's is.
        self.assert_gradual_from_the_drift("moe", named_as="the router of experts (the logits of its softmax gate)")
        for truth, incidents in self.runs("moe", "drift"):
            blowup = next(i for i in incidents if i["kind"] == "blowup")
            self.assertIn("router z-loss", blowup["suggestion"], drift_runs.run_name(truth))

    def test_a_log_variance_head_falling_until_exp_overflows_is_a_gradual_blowup_from_where_it_began(self):
        # The head's output falls (a variance collapsing on noise-free targets): its largest
        # magnitude is the drift, named as a log-scale output with exp()'s limit.
        self.assert_gradual_from_the_drift("variance")
        for truth, incidents in self.runs("variance", "drift"):
            blowup = next(i for i in incidents if i["kind"] == "blowup")
            self.assertIn("a log-scale output", blowup["cause"], drift_runs.run_name(truth))

    def test_a_head_that_joins_the_loss_after_a_warm_up_is_not_vanishing(self):
        # The log-variance head has an exactly-zero gradient through the MSE warm-up: it is not in
        # the loss yet, which a staged training means, not a vanishing gradient.
        for variant in drift_runs.VARIANTS:
            for truth, incidents in self.runs("variance", variant):
                vanishing = [i["layers"] for i in incidents if i["kind"] == "vanishing"]
                self.assertEqual(vanishing, [], drift_runs.run_name(truth))

    def test_a_nan_written_by_the_update_of_an_unfrozen_block_is_born_in_that_update(self):
        for truth, incidents in self.runs("unfreeze", "drift"):
            name = drift_runs.run_name(truth)
            top = incidents[0]
            self.assertEqual(top["kind"], "blowup", "%s: the root comes first, not %s" % (name, top["kind"]))
            self.assertEqual(top["evidence"].get("nonfinite_origin"), "parameters", name)
            self.assertEqual(top["pattern"], "sudden", name)
            update = truth["nan_parameter_step"]
            self.assertGreaterEqual(top["onset_step"], update, name)
            self.assertLessEqual(top["onset_step"], update + truth["log_every"], name)
            self.assertIn("NaN born in", top["cause"], name)
            self.assertIn("optimizer update", top["cause"], name)
            if truth["log_every"] == 1:  # the row before holds that update's finite gradients
                self.assertIn("the optimizer update of step %d" % update, top["cause"], name)
                self.assertIn("exactly zero", top["cause"], name)
                self.assertTrue(top["layers"] and top["layers"][0].startswith("block."), name)
            # The poisoned BatchNorm statistics are its consequence, and say so.
            for other in incidents:
                if other["kind"] == "bn_corruption":
                    self.assertNotEqual(other["severity"], "critical", name)
                    self.assertIn("consequence", other["cause"], name)

    def test_experts_the_router_starves_are_a_load_collapse_not_vanishing_gradients(self):
        for variant in drift_runs.VARIANTS:
            for truth, incidents in self.runs("moe", variant):
                name = drift_runs.run_name(truth)
                kinds = [i["kind"] for i in incidents]
                starved = [i for i in incidents if i["kind"] == "expert_collapse"]
                self.assertTrue(starved, "%s: %s" % (name, kinds))
                self.assertTrue(all(layer.startswith("experts.") for layer in starved[0]["layers"]), name)
                self.assertIn("Router load collapse", starved[0]["cause"], name)
                vanishing_experts = [i for i in incidents if i["kind"] == "vanishing"
                                     and any(layer.startswith("experts.") for layer in i["layers"])]
                self.assertEqual(vanishing_experts, [], name)

    def test_healthy_twins_have_no_critical_incident(self):
        for family in drift_runs.FAMILIES:
            for truth, incidents in self.runs(family, "healthy"):
                critical = [i["kind"] for i in incidents if i["severity"] == "critical"]
                self.assertEqual(critical, [], drift_runs.run_name(truth))

    def test_no_incident_text_contradicts_its_own_fields(self):
        for truth, incidents in self.results:
            for incident in incidents:
                self.assertEqual(contradictions(incident), [], drift_runs.run_name(truth))


if __name__ == "__main__":
    unittest.main(verbosity=2)

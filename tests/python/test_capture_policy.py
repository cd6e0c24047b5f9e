"""The Python recorder's capture policy decides the shared cases as the C++ Guard does
(tests/data/capture_policy_cases.json; tests/core/CapturePolicyTest.cpp replays them too), and a
recorder bounds its captures by it: the first non-finite step always, later ones within budget."""
import json
import os
import sys
import tempfile
import unittest

import h5py
sys.path.insert(0, os.path.dirname(__file__))
import recorder_fixtures as fx  # noqa: E402
from nanscope_recorder.capture import DEFAULTS, CapturePolicy, spike_detection_on  # noqa: E402

CASES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "capture_policy_cases.json")


class CapturePolicyCases(unittest.TestCase):
    def test_shared_cases(self):
        with open(CASES) as f:
            steps = json.load(f)["steps"]
        policy = CapturePolicy()
        for index, step in enumerate(steps):
            self.assertEqual(policy.decide(step["finite"], step["spike"]), step["capture"], "case %d" % index)

    def test_which_spike_mads_turn_spike_detection_on(self):
        """The shared cases (the C++ Guard's spikeDetectionOn replays them): a negative spike_mads
        was "on" here (truthy) and "off" in C++."""
        with open(CASES) as f:
            cases = json.load(f)["spike_detection"]
        self.assertGreaterEqual(len(cases), 4)
        for case in cases:
            self.assertEqual(spike_detection_on(case["spike_mads"]), case["on"], case)

    def test_a_run_that_never_recovers_is_bounded(self):
        """A NaN from step 5 on: the first non-finite step and later_nonfinite_captures more are
        saved, not one checkpoint and batch per step (126 per rank before)."""
        with tempfile.TemporaryDirectory() as tmp:
            run = os.path.join(tmp, "run")
            fx.train(run, fx.bn_mlp(), 40, nan_at=range(5, 40), checkpoint_every=0)
            with h5py.File(os.path.join(run, "run.h5"), "r") as f:
                kinds = [k.decode() if isinstance(k, bytes) else k for k in f["events/kind"][:]]
                steps = list(f["events/steps"][:])
            captured = [s for s, k in zip(steps, kinds) if k == "incident_capture"]
            self.assertEqual(captured[0], 5, "the first non-finite step is captured")
            self.assertEqual(len(captured), 1 + DEFAULTS["later_nonfinite_captures"])
            batches = [n for n in os.listdir(os.path.join(run, "batches")) if n.endswith(".pt")]
            self.assertLessEqual(len(batches), 1 + DEFAULTS["later_nonfinite_captures"] + 8,
                                 "bounded: the captured steps and the ring's batches before the first")


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)

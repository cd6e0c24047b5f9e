"""The Python recorder's spike rule on the cases the C++ Guard's is checked against too
(tests/data/spike_rule_cases.json; tests/core/OnlineSpikeDetectorTest.cpp): one rule in both languages."""
import json
import os
import sys
import unittest

from nanscope_recorder.defences import SpikeDetector

CASES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "spike_rule_cases.json")


class SharedSpikeCases(unittest.TestCase):
    def test_judges_the_shared_cases_as_the_guard_does(self):
        with open(CASES) as f:
            cases = json.load(f)["cases"]
        self.assertGreaterEqual(len(cases), 5)
        for case in cases:
            detector = SpikeDetector(case["mads"], case["window"], case["least_history"])
            values = [float(v) for v in case["values"]]  # "nan", "inf" parse as floats
            spikes = [i for i, v in enumerate(values) if detector.is_spike(v)]
            self.assertEqual(spikes, case["spikes"], case["name"])


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)

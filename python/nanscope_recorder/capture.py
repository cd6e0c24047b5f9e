"""Which incidents the recorder captures: the one policy of both recorders (the C++ Guard's is
core/record/CapturePolicy.h), with its defaults in one table, capture_policy.json beside this file,
which the C++ build compiles in.

- The first non-finite step of a run is always captured (its checkpoint and batch, and the ring's
  batches before it): it is the incident a user replays, and no earlier spike spends its place.
- Spikes have a budget of their own (``spike_captures``).
- Later non-finite steps are bounded (``later_nonfinite_captures``): a run that never recovers would
  otherwise write a checkpoint and a batch per step.
A budget of -1 captures every one."""
import json
import os

_TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "capture_policy.json")

with open(_TABLE, encoding="utf-8") as _file:
    DEFAULTS = {k: v for k, v in json.load(_file).items() if not k.startswith("_")}

NONE, FIRST_NONFINITE, LATER_NONFINITE, SPIKE = None, "first_nonfinite", "later_nonfinite", "spike"

_DESCRIPTIONS = {FIRST_NONFINITE: "the run's first non-finite step", LATER_NONFINITE: "a later non-finite step",
                 SPIKE: "a spike"}


def spike_detection_on(spike_mads):
    """Spikes are looked for when spike_mads is a positive number; None, 0 or a negative number
    turns them off (the C++ Guard's spikeDetectionOn, core/record/CapturePolicy.h: the same cases,
    tests/data/capture_policy_cases.json)."""
    return spike_mads is not None and float(spike_mads) > 0


def _within(used, budget):
    return budget < 0 or used < budget


class CapturePolicy:
    def __init__(self, spike_captures=None, later_nonfinite_captures=None):
        self.spike_captures = int(DEFAULTS["spike_captures"] if spike_captures is None else spike_captures)
        self.later_nonfinite_captures = int(DEFAULTS["later_nonfinite_captures"] if later_nonfinite_captures is None
                                            else later_nonfinite_captures)
        self.spikes = 0
        self.nonfinite = 0  # the first included

    def decide(self, finite, spike):
        """Whether the step just measured is captured, and as what (None: not captured); counts it."""
        if not finite:
            if self.nonfinite == 0:
                self.nonfinite += 1
                return FIRST_NONFINITE
            if not _within(self.nonfinite - 1, self.later_nonfinite_captures):
                return NONE
            self.nonfinite += 1
            return LATER_NONFINITE
        if not spike or not _within(self.spikes, self.spike_captures):
            return NONE
        self.spikes += 1
        return SPIKE

    @staticmethod
    def describe(capture):
        return _DESCRIPTIONS.get(capture, "")

"""The README's recipe for a plain accelerate loop (python/examples/accelerate_loop.py) records a
run that nanscope reads: the NaN loss of the step whose labels are all -100, the recovery after it,
and an eager replay of that step (the model rebuilt from its config) to the op in transformers' loss."""
import os
import subprocess
import sys
import tempfile
import unittest

from framework_fixtures import incidents_of, nanscope_json, scalars

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python", "examples",
                       "accelerate_loop.py")


class AccelerateRecipe(unittest.TestCase):
    def test_the_recipe_records_the_nan_step_and_it_replays(self):
        with tempfile.TemporaryDirectory() as tmp:
            run = os.path.join(tmp, "run")
            done = subprocess.run([sys.executable, EXAMPLE, run, "--ignore-labels-at", "9"], capture_output=True,
                                  text=True, timeout=600)
            self.assertEqual(done.returncode, 0, done.stderr[-2000:])
            self.assertEqual(scalars(run)["skipped"].sum(), 0)  # the loop applied every update
            found = incidents_of(run)
            self.assertEqual([(i["kind"], i["onset_step"]) for i in found], [("nonfinite_loss", 9)])
            replay = nanscope_json("replay", run, "--step", 9)
            first = replay["forward"]["first_nonfinite"]
            # Without the Trainer's num_items_in_batch the loss is a mean over no token: cross_entropy
            # itself, in transformers' loss code, returns NaN.
            # The model exports: its program names the ATen op, at the line where the model called its
            # loss function (what torch.export records of the call); the eager replay of the same
            # checkpoint goes inside transformers/loss/loss_utils.py.
            op = replay["forward"]["ops"][first["index"]]
            self.assertEqual(op["op"], "aten::cross_entropy_loss")
            eager = nanscope_json("replay", run, "--step", 9, "--eager")
            op = eager["forward"]["ops"][eager["forward"]["first_nonfinite"]["index"]]
            self.assertEqual(op["op"], "aten::cross_entropy")
            self.assertTrue(op["source"].startswith("loss_utils.py:"), op["source"])


if __name__ == "__main__":
    unittest.main()

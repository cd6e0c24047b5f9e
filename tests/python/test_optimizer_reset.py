"""A resume that loaded the weights but not the optimizer's state (issue 50's "a resume that lost
the optimizer state"; users report the loss spike it makes: huggingface/transformers#33336,
NVIDIA/apex#480, NVlabs/stylegan2-ada-pytorch#108). The recorder logs the optimizer's own count of
its updates (optimizer_step) when it knows the optimizer, reading it and changing nothing; the scan
tells a count that starts at 0 where the training's step is far along. On a loop of one's own and
on the real transformers Trainer resumed from a checkpoint whose optimizer.pt is gone."""
import os
import tempfile
import unittest

import torch
import torch.nn.functional as F
from transformers import Trainer

from framework_fixtures import TokenData, gpt2, incidents_of, nanscope_json, scalars, states_equal, training_arguments
from nanscope_recorder import Recorder
from nanscope_recorder.hf import NanscopeCallback

RESUME_AT = 40


def batch(step):
    generator = torch.Generator().manual_seed(step)
    x = torch.randn(16, 8, generator=generator)
    return x, (x[:, 0] > 0).long()


def model_and_optimizer():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
    return model, torch.optim.Adam(model.parameters(), lr=3e-2)


def train(model, optimizer, steps, run_dir=None):
    rec = Recorder(run_dir, model, optimizer=optimizer, checkpoint_every=0, activations_every=0) if run_dir else None
    for step in steps:
        x, y = batch(step)
        if rec:
            rec.begin_step(step, inputs=x, targets=y)
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        if rec:
            rec.end_step(loss)
        optimizer.step()
    if rec:
        rec.close()


def resumed(keep_optimizer_state, run_dir=None):
    """Trains to RESUME_AT, then, as a new process would, builds the model and optimizer again from
    the saved state (the optimizer's too, or not) and trains on to 2 x RESUME_AT, recorded into
    run_dir. Returns the final weights."""
    model, optimizer = model_and_optimizer()
    train(model, optimizer, range(RESUME_AT))
    saved_model, saved_optimizer = model.state_dict(), optimizer.state_dict()
    model, optimizer = model_and_optimizer()
    model.load_state_dict(saved_model)
    if keep_optimizer_state:
        optimizer.load_state_dict(saved_optimizer)
    train(model, optimizer, range(RESUME_AT, 2 * RESUME_AT), run_dir)
    return model.state_dict()


class ResumeInALoopOfOnesOwn(unittest.TestCase):
    def test_a_fresh_optimizer_after_a_resume_is_the_state_lost(self):
        with tempfile.TemporaryDirectory() as tmp:
            lost, kept = os.path.join(tmp, "lost"), os.path.join(tmp, "kept")
            recorded = resumed(False, lost)
            resumed(True, kept)
            # Recording read the optimizer's count and changed nothing.
            self.assertTrue(states_equal(recorded, resumed(False)))
            self.assertEqual(scalars(lost)["optimizer_step"][0], 0)
            self.assertEqual(scalars(kept)["optimizer_step"][0], RESUME_AT)
            resets = incidents_of(lost, "optimizer_reset")
            self.assertEqual(len(resets), 1, resets)
            self.assertEqual(resets[0]["onset_step"], RESUME_AT)
            self.assertEqual(resets[0]["severity"], "warning")
            self.assertIn("Optimizer state lost at step %d" % RESUME_AT, resets[0]["cause"])
            self.assertIn("optimizer.load_state_dict", resets[0]["suggestion"])
            self.assertEqual(incidents_of(kept, "optimizer_reset"), [])

    def test_a_rollback_to_the_first_state_is_no_reset(self):
        # Steps 3 and 4 go NaN; the recorder rolls back to its snapshot of step 0, Adam's count with
        # it (3 -> 0): its own rollback event says so, and the scan reads it as no lost state.
        with tempfile.TemporaryDirectory() as tmp:
            run = os.path.join(tmp, "rollback")
            model, optimizer = model_and_optimizer()
            with Recorder(run, model, optimizer=optimizer, rollback_after=2, snapshot_every=50,
                          checkpoint_every=0, activations_every=0) as rec:
                for step in range(20):
                    x, y = batch(step)
                    if step in (3, 4):
                        x[0, 0] = float("nan")
                    rec.begin_step(step, inputs=x, targets=y)
                    loss = F.cross_entropy(model(x), y)
                    optimizer.zero_grad()
                    loss.backward()
                    if rec.end_step(loss):
                        optimizer.step()
            counts = list(scalars(run)["optimizer_step"][:6])
            self.assertEqual(counts, [0, 1, 2, 3, 3, 0])
            self.assertEqual(incidents_of(run, "optimizer_reset"), [])

    def test_an_optimizer_that_counts_nothing_logs_no_count(self):
        with tempfile.TemporaryDirectory() as tmp:
            run = os.path.join(tmp, "sgd")
            model, _ = model_and_optimizer()
            train(model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), range(RESUME_AT, RESUME_AT + 5),
                  run)
            self.assertNotIn("optimizer_step", scalars(run))
            self.assertEqual(incidents_of(run, "optimizer_reset"), [])


class ResumeOfATrainerWithoutItsOptimizerState(unittest.TestCase):
    """GPT-2 through the real Trainer: 12 steps saved as checkpoint-12, its optimizer.pt deleted,
    then trained on to 18 from it with the callback."""

    def test_the_callback_tells_the_resumed_run_lost_the_optimizer_state(self):
        with tempfile.TemporaryDirectory() as tmp:
            output = os.path.join(tmp, "trainer")
            data = TokenData(96)
            first = Trainer(model=gpt2(), args=training_arguments(output, 12, save_strategy="steps", save_steps=12),
                            train_dataset=data)
            first.train()
            checkpoint = os.path.join(output, "checkpoint-12")
            os.remove(os.path.join(checkpoint, "optimizer.pt"))
            run = os.path.join(tmp, "run")
            second = Trainer(model=gpt2(), args=training_arguments(output, 18), train_dataset=data,
                             callbacks=[NanscopeCallback(run, checkpoint_every=0)])
            second.train(resume_from_checkpoint=checkpoint)
            counts = scalars(run)["optimizer_step"]
            self.assertEqual(counts[0], 0)
            resets = incidents_of(run, "optimizer_reset")
            self.assertEqual(len(resets), 1, [i["kind"] for i in nanscope_json("scan", run)["incidents"]])
            self.assertGreaterEqual(resets[0]["onset_step"], 12)
            self.assertLessEqual(resets[0]["onset_step"], 13)


if __name__ == "__main__":
    unittest.main(verbosity=2)

"""The recorder's defences: rollback to the last good state with a smaller learning rate, BatchNorm
buffers put back on a skipped step, and the bad input they refuse (an optimizer the rollback cannot
restore, a loss that is no scalar, a hook that fails)."""
import json
import os
import sys
import tempfile
import unittest
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

import recorder_fixtures as fx
from nanscope_recorder import Recorder
from nanscope_recorder.defences import UnsupportedOptimizer


def events(run_dir, kind):
    with fx.open_run(run_dir) as f:
        return [(int(s), m) for s, k, m in zip(f["events/steps"][:], fx.strings(f["events/kind"]),
                                               fx.strings(f["events/message"])) if k == kind]


def clone_state(model, opt):
    return ({k: v.clone() for k, v in model.state_dict().items()},
            {i: s["momentum_buffer"].clone() for i, s in enumerate(opt.state.values())})


class Defences(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.run_dir = os.path.join(self._tmp.name, "run")

    def tearDown(self):
        self._tmp.cleanup()

    def test_rollback_restores_weights_and_optimizer_state_and_scales_lr(self):
        model = fx.bn_mlp()
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        seen = {}
        with Recorder(self.run_dir, model, loss_name="cross_entropy", optimizer=opt, rollback_after=2,
                      rollback_lr_factor=0.5, snapshot_every=3, checkpoint_every=0) as rec:
            for step in range(12):
                x, y = fx.batch(step)
                if step in (7, 8):
                    x[0, 0] = float("nan")
                rec.begin_step(step, inputs=x, targets=y)
                if step >= 1:
                    seen[step] = clone_state(model, opt)  # the state this step starts from
                loss = F.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                if rec.end_step(loss, lr=opt.param_groups[0]["lr"]):
                    opt.step()
                if step == 8:
                    after_rollback = clone_state(model, opt)
                    lr_after = opt.param_groups[0]["lr"]
            self.assertEqual(rec.lr_scale, 0.5)
        # Snapshots at steps 0, 3, 6 (every 3 good steps); steps 7 and 8 are bad: back to step 6.
        weights, momentum = after_rollback
        for name, value in seen[6][0].items():
            self.assertTrue(torch.equal(weights[name], value), name)
        self.assertFalse(torch.equal(weights["0.weight"], seen[8][0]["0.weight"]))
        for i, value in seen[6][1].items():
            self.assertTrue(torch.equal(momentum[i], value))
        self.assertAlmostEqual(lr_after, 0.05)
        self.assertTrue(all(torch.isfinite(p).all() for p in model.parameters()))
        rollbacks = events(self.run_dir, "rollback")
        self.assertEqual(len(rollbacks), 1)
        step, message = rollbacks[0]
        self.assertEqual(step, 8)
        self.assertIn("state of step 6", message)
        self.assertIn("0.1 -> 0.05", message)

    def test_a_rollback_never_restores_weights_an_update_made_nonfinite(self):
        """An update born NaN (issue 52): Adam with eps=0 divides 0 by 0 for a weight whose first
        gradient is exactly zero, so step 0's finite loss and gradients leave a NaN weight behind.
        The state a rollback returns to is taken after a finite step and before its update (the
        Guard's rule): the weights step 0's forward ran on, never the update's."""
        torch.manual_seed(0)
        model = nn.Linear(4, 2)
        opt = torch.optim.Adam(model.parameters(), lr=0.01, eps=0.0)
        with tempfile.TemporaryDirectory() as tmp:
            run_dir = os.path.join(tmp, "run")
            with Recorder(run_dir, model, loss_name="mse", optimizer=opt, rollback_after=2, snapshot_every=1,
                          checkpoint_every=0) as rec:
                finite_after = []
                for step in range(6):
                    x, y = torch.randn(8, 4), torch.randn(8, 2)
                    gate = 0.0 if step == 0 else 1.0       # step 0: every gradient exactly zero
                    rec.begin_step(step, inputs=x, targets=y)
                    loss = F.mse_loss(model(x) * gate, y * gate)
                    opt.zero_grad()
                    loss.backward()
                    if rec.end_step(loss):
                        opt.step()
                    finite_after.append(all(bool(torch.isfinite(p).all()) for p in model.parameters()))
            self.assertFalse(finite_after[0], "Adam with eps=0 wrote NaN from finite gradients")
            rollbacks = events(run_dir, "rollback")
            self.assertEqual(len(rollbacks), 1, rollbacks)
            self.assertIn("optimizer state of step 0 restored", rollbacks[0][1])
            self.assertTrue(finite_after[rollbacks[0][0]], "the rollback restored finite weights")
            self.assertTrue(all(finite_after[rollbacks[0][0]:]), finite_after)

    def test_the_shared_rollback_state_cases(self):
        """tests/data/rollback_state_cases.json, which tests/core/DefencePolicyTest.cpp replays through
        the Guard's policy: a real recorder on a real model, the bad steps made by a NaN input."""
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data",
                               "rollback_state_cases.json")) as f:
            cases = json.load(f)["cases"]
        self.assertGreaterEqual(len(cases), 4)
        for case in cases:
            with tempfile.TemporaryDirectory() as tmp:
                run_dir = os.path.join(tmp, "run")
                model = fx.bn_mlp()
                opt = torch.optim.SGD(model.parameters(), lr=0.05)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    with Recorder(run_dir, model, loss_name="cross_entropy", optimizer=opt, checkpoint_every=0,
                                  rollback_after=case["rollback_after"], snapshot_every=case["snapshot_every"]) as rec:
                        for step, finite in enumerate(case["steps"]):
                            x, y = fx.batch(step)
                            if not finite:
                                x[0, 0] = float("nan")
                            rec.begin_step(step, inputs=x, targets=y)
                            loss = F.cross_entropy(model(x), y)
                            opt.zero_grad()
                            loss.backward()
                            if rec.end_step(loss):
                                opt.step()
                found = [[at, int(message.split("state of step ")[1].split(" ")[0])]
                         for at, message in events(run_dir, "rollback")]
                self.assertEqual(found, case["rollbacks"], case["name"])

    def test_one_bad_step_is_skipped_without_rollback(self):
        model = fx.bn_mlp()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        with Recorder(self.run_dir, model, optimizer=opt, rollback_after=2, checkpoint_every=0) as rec:
            for step in range(6):
                x, y = fx.batch(step)
                if step == 3:
                    x[0, 0] = float("nan")
                rec.begin_step(step, inputs=x, targets=y)
                loss = F.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                if rec.end_step(loss):
                    opt.step()
        self.assertEqual(events(self.run_dir, "rollback"), [])
        self.assertEqual([s for s, _ in events(self.run_dir, "skipped_step")], [3])
        self.assertEqual(opt.param_groups[0]["lr"], 0.1)

    def test_batchnorm_buffers_restored_on_a_skipped_step(self):
        model = fx.bn_mlp()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        with Recorder(self.run_dir, model, restore_buffers_on_skip=True, checkpoint_every=0) as rec:
            for step in range(5):
                x, y = fx.batch(step)
                if step == 3:
                    x[1, 2] = float("inf")
                rec.begin_step(step, inputs=x, targets=y)
                before = model[1].running_mean.clone(), model[1].running_var.clone()
                loss = F.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                applied = rec.end_step(loss)
                if step == 3:
                    self.assertFalse(applied)
                    self.assertTrue(torch.equal(model[1].running_mean, before[0]))
                    self.assertTrue(torch.equal(model[1].running_var, before[1]))
                if applied:
                    opt.step()
        self.assertTrue(torch.isfinite(model[1].running_mean).all())
        restored = events(self.run_dir, "buffers_restored")
        self.assertEqual([s for s, _ in restored], [3])
        self.assertIn("before step 3", restored[0][1])

    def test_optimizer_the_rollback_cannot_restore_is_refused(self):
        model = fx.bn_mlp()

        class NoGroups:
            def step(self):
                pass

        class NoRestore(torch.optim.SGD):
            def load_state_dict(self, state):
                raise NotImplementedError("this optimizer keeps its state elsewhere")

        for optimizer, words in ((NoGroups(), "no param_groups"),
                                 (NoRestore(model.parameters(), lr=0.1), "cannot be saved and restored"),
                                 (None, "needs the optimizer")):
            with self.assertRaises(UnsupportedOptimizer) as caught:
                Recorder(self.run_dir, model, optimizer=optimizer, rollback_after=3, overwrite=True)
            self.assertIn(words, str(caught.exception))
        self.assertFalse(os.path.exists(os.path.join(self.run_dir, "run.h5")))

    def test_unguarded_training_when_allowed(self):
        model = fx.bn_mlp()

        class NoRestore(torch.optim.SGD):
            def load_state_dict(self, state):
                raise NotImplementedError("this optimizer keeps its state elsewhere")

        opt = NoRestore(model.parameters(), lr=0.1)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rec = Recorder(self.run_dir, model, optimizer=opt, rollback_after=1, allow_unguarded=True,
                           checkpoint_every=0)
        self.assertTrue(any("rollback is off" in str(w.message) for w in caught))
        for step in range(3):
            x, y = fx.batch(step)
            if step == 1:
                x[0, 0] = float("nan")
            rec.begin_step(step, inputs=x, targets=y)
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            if rec.end_step(loss):
                opt.step()
        rec.close()
        self.assertEqual(events(self.run_dir, "rollback"), [])
        self.assertTrue(any("rollback is off" in m for _, m in events(self.run_dir, "note")))

    def test_loss_that_is_not_a_scalar_is_a_clear_error(self):
        model = fx.bn_mlp()
        rec = Recorder(self.run_dir, model, checkpoint_every=0)
        x, y = fx.batch(0)
        rec.begin_step(0, inputs=x, targets=y)
        per_sample = F.cross_entropy(model(x), y, reduction="none")
        with self.assertRaisesRegex(ValueError, "single value"):
            rec.end_step(per_sample)
        with self.assertRaisesRegex(TypeError, "scalar tensor or a number, not a dict"):
            rec.end_step({"loss": per_sample.mean()})

    def test_a_failing_activation_hook_is_a_warning_not_a_crash(self):
        class DenseAndSparse(nn.Module):
            """Its output holds a sparse tensor, which the recorder cannot measure."""

            def forward(self, x):
                return x, x.detach().to_sparse()

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(fx.FEATURES, fx.CLASSES)
                self.both = DenseAndSparse()

            def forward(self, x):
                return self.both(self.fc(x))[0]

        model = Model()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with Recorder(self.run_dir, model, activations_every=1, checkpoint_every=0) as rec:
                for step in range(3):
                    x, y = fx.batch(step)
                    rec.begin_step(step, inputs=x, targets=y)
                    loss = F.cross_entropy(model(x), y)
                    opt.zero_grad()
                    loss.backward()
                    self.assertTrue(rec.end_step(loss))
                    opt.step()
        self.assertTrue(any("activation hook of module both failed" in str(w.message) for w in caught))
        with fx.open_run(self.run_dir) as f:
            self.assertEqual(list(f["scalars/steps"][:]), [0, 1, 2])
        self.assertTrue(any("both failed" in m for _, m in events(self.run_dir, "note")))


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)

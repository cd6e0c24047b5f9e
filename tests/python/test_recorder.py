"""The Python recorder writes runs that nanscope reads, and logs a NaN step as the contract says."""
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest
import warnings

import numpy as np
import torch
import torch.nn.functional as F

from nanscope_recorder import Recorder

import recorder_fixtures as fx

STEPS, NAN_AT = 12, 7


class RecordedRun(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.run_dir = os.path.join(cls.tmp.name, "bn-mlp")
        cls.applied, cls.model = fx.train(cls.run_dir, fx.bn_mlp(), STEPS, nan_at=NAN_AT)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_nanscope_info_reads_every_table(self):
        status, info = fx.nanscope_info(self.run_dir)
        self.assertEqual(status, 0, info)
        groups = info["groups"]
        self.assertEqual(set(groups), {"scalars", "layers", "activations", "buffers", "inputs", "events"})
        self.assertEqual(groups["scalars"]["rows"], STEPS)
        self.assertEqual(set(groups["scalars"]["columns"]),
                         {"loss", "grad_norm", "param_norm", "skipped", "lr", "wall_time"})
        self.assertEqual(groups["layers"]["names"], [n for n, _ in self.model.named_parameters()])
        self.assertEqual(set(groups["layers"]["columns"]), {"grad_norm", "param_norm", "grad_nonfinite"})
        self.assertEqual(groups["activations"]["names"], ["0", "1", "2", "3"])
        self.assertEqual(groups["activations"]["kinds"], ["Linear", "BatchNorm1d", "ReLU", "Linear"])
        self.assertEqual(groups["activations"]["rows"], STEPS // 2)
        self.assertEqual(groups["buffers"]["names"], ["1"])
        self.assertEqual(groups["inputs"]["names"], ["x", "y"])
        self.assertEqual(info["attributes"]["loss_name"], "cross_entropy")
        self.assertTrue(info["attributes"]["framework"].startswith("pytorch "))
        self.assertEqual(info["checkpoints"], [0, 5, NAN_AT, 10])
        # Incident capture: the batches up to the NaN (8 kept in memory), from the start.
        self.assertEqual(info["batches"], list(range(NAN_AT + 1)))

    def test_nan_step_is_skipped_and_only_it(self):
        self.assertEqual([s for s, ok in self.applied.items() if not ok], [NAN_AT])
        with fx.open_run(self.run_dir) as f:
            skipped = f["scalars/skipped"][:]
            self.assertEqual(np.flatnonzero(skipped).tolist(), [NAN_AT])
            self.assertTrue(np.isnan(f["scalars/loss"][NAN_AT]))
            self.assertTrue(np.isnan(f["scalars/grad_norm"][NAN_AT]))
            self.assertTrue(np.isnan(f["layers/grad_norm"][NAN_AT]).all())
            self.assertTrue((f["layers/grad_nonfinite"][NAN_AT] > 0).all())
            self.assertTrue((f["layers/grad_nonfinite"][NAN_AT - 1] == 0).all())
            names = fx.strings(f["inputs/names"])
            self.assertEqual(f["inputs/nan"][NAN_AT, names.index("x")], 1)
            self.assertEqual(f["inputs/nan"][NAN_AT - 1, names.index("x")], 0)
            events = list(zip(f["events/steps"][:].tolist(), fx.strings(f["events/kind"])))
            for kind in ("nonfinite_loss", "skipped_step", "checkpoint", "batch_saved"):
                self.assertIn((NAN_AT, kind), events)
            self.assertTrue(np.all(np.diff(f["events/steps"][:]) >= 0))

    def test_batch_of_the_nan_step_is_saved(self):
        saved = torch.load(os.path.join(self.run_dir, "batches/step_%08d.pt" % NAN_AT))
        x, y = fx.batch(NAN_AT)
        x[2, 1] = float("nan")
        self.assertEqual(saved["step"], NAN_AT)
        self.assertEqual(saved["loss"], "cross_entropy")
        self.assertTrue(torch.equal(saved["targets"], y))
        self.assertTrue(torch.equal(torch.nan_to_num(saved["inputs"]), torch.nan_to_num(x)))

    def test_batchnorm_buffers_are_recorded_every_step(self):
        with fx.open_run(self.run_dir) as f:
            self.assertEqual(f["buffers/steps"][:].tolist(), list(range(STEPS)))
            bn = self.model[1]
            # The NaN batch poisoned the running mean; the last row is the model's final state.
            self.assertEqual(f["buffers/nonfinite"][NAN_AT - 1, 0], 0)
            self.assertGreater(f["buffers/nonfinite"][NAN_AT, 0], 0)
            self.assertEqual(f["buffers/nonfinite"][-1, 0],
                             float((~torch.isfinite(bn.running_mean)).sum() + (~torch.isfinite(bn.running_var)).sum()))
            finite_var = bn.running_var[torch.isfinite(bn.running_var)]
            if finite_var.numel():
                self.assertAlmostEqual(f["buffers/running_var_max"][-1, 0], finite_var.max().item(), places=5)

    def test_activation_ranges_match_a_forward(self):
        with fx.open_run(self.run_dir) as f:
            self.assertEqual(f["activations/steps"][:].tolist(), list(range(0, STEPS, 2)))
            relu_min = f["activations/min"][:, 2]
            self.assertTrue(np.all(relu_min == 0))
            self.assertTrue(np.all(f["activations/std"][0] > 0))
            self.assertTrue(np.all(f["activations/nan"][0] == 0))

    def test_layer_norms_are_the_parameters_norms(self):
        fresh = fx.bn_mlp()
        with fx.open_run(self.run_dir) as f:
            first = f["layers/param_norm"][0]
            expected = [p.detach().norm().item() for p in fresh.parameters()]
            np.testing.assert_allclose(first, expected, rtol=1e-5)
            total = np.sqrt(np.sum(f["layers/grad_norm"][0].astype(np.float64) ** 2))
            self.assertAlmostEqual(f["scalars/grad_norm"][0], total, places=4)


class RecorderRules(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.run_dir = os.path.join(self.tmp.name, "run")

    def tearDown(self):
        self.tmp.cleanup()

    def test_warns_after_consecutive_skipped_steps(self):
        model = fx.bn_mlp()
        with Recorder(self.run_dir, model, checkpoint_every=0, warn_after_skipped=3) as rec:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                for step in range(5):
                    x, y = fx.batch(step)
                    rec.begin_step(step, inputs=x, targets=y)
                    loss = F.cross_entropy(model(x), y) * float("inf")
                    model.zero_grad()
                    loss.backward()
                    self.assertFalse(rec.end_step(loss))
        messages = [str(w.message) for w in caught if "consecutive" in str(w.message)]
        self.assertEqual(len(messages), 1)
        self.assertIn("3 consecutive steps skipped", messages[0])

    def test_steps_must_increase(self):
        model = fx.bn_mlp()
        with Recorder(self.run_dir, model) as rec:
            x, y = fx.batch(0)
            rec.begin_step(3, inputs=x)
            rec.end_step(F.cross_entropy(model(x), y))
            with self.assertRaises(ValueError):
                rec.begin_step(3, inputs=x)

    def test_refuses_to_overwrite_a_run(self):
        fx.train(self.run_dir, fx.bn_mlp(), 1)
        with self.assertRaises(FileExistsError):
            Recorder(self.run_dir, fx.bn_mlp())
        Recorder(self.run_dir, fx.bn_mlp(), overwrite=True).close()

    def test_restore_buffers_on_skip_keeps_batchnorm_clean(self):
        _, model = fx.train(self.run_dir, fx.bn_mlp(), 4, nan_at=2, restore_buffers_on_skip=True)
        self.assertTrue(torch.isfinite(model[1].running_mean).all())
        self.assertEqual(int(model[1].num_batches_tracked), 3)

    def test_overwrite_removes_the_old_runs_step_files(self):
        fx.train(self.run_dir, fx.bn_mlp(), 6, nan_at=3, checkpoint_every=5)
        fx.train(self.run_dir, fx.bn_mlp(), 2, overwrite=True)
        self.assertEqual(sorted(os.listdir(os.path.join(self.run_dir, "checkpoints"))),
                         ["step_00000000.form", "step_00000000.pt2"])
        self.assertEqual(os.listdir(os.path.join(self.run_dir, "batches")), [])

    def test_module_called_twice_gets_one_merged_column(self):
        class TwiceRelu(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = torch.nn.Linear(fx.FEATURES, 8)
                self.fc2 = torch.nn.Linear(8, fx.CLASSES)
                self.relu = torch.nn.ReLU()

            def forward(self, x):
                return self.fc2(self.relu(self.fc1(self.relu(x))))

        model = TwiceRelu()
        with Recorder(self.run_dir, model, checkpoint_every=0, activations_every=1,
                      activation_filter=lambda name, m: name in ("relu", "fc1")) as rec:
            x, y = fx.batch(0)
            x[0, 0] = float("nan")
            rec.begin_step(0, inputs=x, targets=y)
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            rec.end_step(loss)
        with fx.open_run(self.run_dir) as f:
            self.assertEqual(fx.strings(f["activations/names"]), ["fc1", "relu"])
            relu = fx.strings(f["activations/names"]).index("relu")
            # The NaN passes the first call's ReLU and poisons fc1's row 0: 1 + 8 NaN in all.
            self.assertEqual(f["activations/nan"][0, relu], 1 + 8)
            self.assertEqual(f["activations/min"][0, relu], 0)

    def test_parameters_without_gradients_log_zero_gradient_norms(self):
        """A frozen layer is not logged; an unused head gets no gradient: its /layers gradient norm is 0, the
        others' are their gradients' norms, every trained weight's norm is logged, and the step is healthy."""
        class PartlyTrained(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.frozen = torch.nn.Linear(fx.FEATURES, 8)
                self.body = torch.nn.Linear(8, fx.CLASSES)
                self.unused = torch.nn.Linear(8, 2)

            def forward(self, x):
                return self.body(torch.relu(self.frozen(x)))

        torch.manual_seed(0)
        model = PartlyTrained()
        model.frozen.requires_grad_(False)
        with Recorder(self.run_dir, model, checkpoint_every=0) as rec:
            x, y = fx.batch(0)
            rec.begin_step(0, inputs=x, targets=y)
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            self.assertTrue(rec.end_step(loss))
        # The frozen layer is not logged at all (a LoRA fine-tune's base weights: their zero gradient
        # would read as vanishing, and measuring them every step costs as much as the model).
        trainable = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        names = [n for n, _ in trainable]
        self.assertEqual(names, ["body.weight", "body.bias", "unused.weight", "unused.bias"])
        expected_grads = [p.grad.norm().item() if p.grad is not None else 0.0 for _, p in trainable]
        self.assertEqual([g > 0 for g in expected_grads], [True, True, False, False])
        with fx.open_run(self.run_dir) as f:
            self.assertEqual(fx.strings(f["layers/names"]), names)
            np.testing.assert_allclose(f["layers/grad_norm"][0], expected_grads, rtol=1e-5)
            np.testing.assert_allclose(f["layers/param_norm"][0], [p.norm().item() for _, p in trainable],
                                       rtol=1e-5)
            self.assertEqual(f["layers/grad_nonfinite"][0].tolist(), [0.0] * len(names))
            self.assertAlmostEqual(f["scalars/grad_norm"][0], float(np.linalg.norm(expected_grads)), places=5)
            self.assertEqual(f["scalars/skipped"][0], 0.0)

    def test_extra_scalars_and_loss_scale(self):
        model = fx.bn_mlp()
        with Recorder(self.run_dir, model, checkpoint_every=0) as rec:
            for step, scale in enumerate([1024.0, 1024.0, 512.0]):
                x, y = fx.batch(step)
                rec.begin_step(step, inputs=x, targets=y)
                loss = F.cross_entropy(model(x), y)
                model.zero_grad()
                loss.backward()
                rec.end_step(loss, lr=0.1, loss_scale=scale, accuracy=torch.tensor(0.5))
        status, info = fx.nanscope_info(self.run_dir)
        self.assertEqual(status, 0, info)
        self.assertIn("accuracy", info["groups"]["scalars"]["columns"])
        with fx.open_run(self.run_dir) as f:
            self.assertEqual(f["scalars/loss_scale"][:].tolist(), [1024.0, 1024.0, 512.0])
            events = list(zip(f["events/steps"][:].tolist(), fx.strings(f["events/kind"])))
            self.assertIn((2, "loss_scale_decrease"), events)

    def test_every_step_is_stamped_with_its_wall_time(self):
        # nanscope plots against wall time from this column, as TensorBoard does.
        before = time.time()
        model = fx.bn_mlp()
        with Recorder(self.run_dir, model, checkpoint_every=0, overwrite=True) as rec:
            for step in range(3):
                x, y = fx.batch(step)
                rec.begin_step(step, inputs=x, targets=y)
                loss = F.cross_entropy(model(x), y)
                model.zero_grad()
                loss.backward()
                rec.end_step(loss)
            with self.assertRaises(ValueError):  # the recorder's own column, not the user's
                rec.begin_step(3, inputs=x, targets=y)
                rec.end_step(loss, wall_time=0.0)
        with fx.open_run(self.run_dir) as f:
            stamps = f["scalars/wall_time"][:].tolist()
        self.assertEqual(len(stamps), 3)
        self.assertTrue(all(before <= t <= time.time() for t in stamps), stamps)
        self.assertEqual(stamps, sorted(stamps))

    def test_a_module_that_did_not_run_has_empty_cells_and_no_incident(self):
        """A mixture of experts routes no token to expert 1 on odd steps: those steps keep their
        activation row, expert 1's cells there say no element was measured (NaN ranges, zero counts),
        and the scan reads them as no value, not as a NaN (issue 50: the recorder dropped the row)."""
        class TwoExperts(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.experts = torch.nn.ModuleList(torch.nn.Linear(fx.FEATURES, fx.CLASSES) for _ in range(2))
                self.step = 0

            def forward(self, x):
                out = self.experts[0](x)
                return out + self.experts[1](x) if self.step % 2 == 0 else out

        model = TwoExperts()
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        with Recorder(self.run_dir, model, checkpoint_every=0, activations_every=1, overwrite=True) as rec:
            for step in range(30):
                model.step = step
                x, y = fx.batch(step)
                rec.begin_step(step, inputs=x, targets=y)
                loss = F.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                rec.end_step(loss)
                opt.step()
        with fx.open_run(self.run_dir) as f:
            names = fx.strings(f["activations/names"])
            self.assertEqual(names, ["experts.0", "experts.1"])
            self.assertEqual(f["activations/steps"][:].tolist(), list(range(30)))
            ran, idle = f["activations/max"][0::2, 1], f["activations/max"][1::2, 1]
            self.assertTrue(np.isfinite(ran).all(), ran)
            for figure in ("min", "max", "mean", "std"):
                self.assertTrue(np.isnan(f["activations/" + figure][1::2, 1]).all(), figure)
            for count in ("nan", "inf"):
                self.assertEqual(f["activations/" + count][:, 1].tolist(), [0.0] * 30, count)
            self.assertTrue(np.isfinite(f["activations/max"][:, 0]).all())
            events = fx.strings(f["events/message"])
        self.assertTrue(any("experts.1 did not run at step 1" in e for e in events), events)
        scan = subprocess.run([os.environ["NANSCOPE_BINARY"], "scan", self.run_dir, "--json"], capture_output=True,
                              text=True, timeout=120)
        self.assertEqual(scan.returncode, 0, scan.stdout + scan.stderr)
        self.assertEqual(json.loads(scan.stdout)["incidents"], [])


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)

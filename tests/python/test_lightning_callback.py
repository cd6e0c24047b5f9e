"""Recording a Lightning run with one line (issue 56), with the real pytorch_lightning and lightning
packages of python/requirements.txt: a NaN feature in one sample of step 20 goes through BatchNorm
into every weight. The scan; replay of the module's training_step, exported with torch.export
(issue 57) and replayed natively, agreeing with the eager replay that rebuilds the module from its
class and hyperparameters; Lightning's own CSV and TensorBoard logs; gradient accumulation; batches
that are dicts; the state_dict fallback of a module that steps its optimizer itself; and the
training bit-identical with and without the callback."""
import os
import tempfile
import unittest
import warnings

import torch

from framework_fixtures import frozen_state, incidents_of, layer_names, nanscope_json, scalars, states_equal
from lightning_modules import (BATCH, Features, LightningClassifier, ManualClassifier, MetricClassifier,
                               NamedBatchClassifier, NamedFeatures, PlClassifier, lightning_package)
import lightning_modules
from nanscope_recorder.lightning import NanscopeCallback

NAN_STEP = 20
# The classifier's forward, where the NaN feature first meets a weight (its line in lightning_modules.py).
with open(lightning_modules.__file__, encoding="utf-8") as _source:
    FORWARD_LINE = next(n for n, line in enumerate(_source, 1) if "return self.net(x)" in line)


def fit(package_name, module_class, folder, run=None, steps=30, accumulate=1, dataset=Features, logged=None):
    """Trains the module; `logged`, a dict, receives the metrics Lightning logged last."""
    package = lightning_package(package_name)
    package.seed_everything(0)
    model = module_class()
    loggers = [package.loggers.CSVLogger(folder, name="csv"), package.loggers.TensorBoardLogger(folder, name="tb")]
    trainer = package.Trainer(max_steps=steps, accelerator="cpu", logger=loggers, enable_progress_bar=False,
                              enable_model_summary=False, enable_checkpointing=False, log_every_n_steps=1,
                              accumulate_grad_batches=accumulate,
                              callbacks=[NanscopeCallback(run, checkpoint_every=10)] if run else [])
    # Sample 5 of the step's last micro-batch.
    data = dataset(BATCH * steps * accumulate, nan_sample=BATCH * (accumulate * NAN_STEP + accumulate - 1) + 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.fit(model, torch.utils.data.DataLoader(data, batch_size=BATCH))
    if logged is not None:
        logged.update({name: float(value) for name, value in trainer.callback_metrics.items()})
    return model


class NanFeatureThroughBatchNorm(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.run_dir = os.path.join(cls.tmp.name, "run")
        cls.logs = os.path.join(cls.tmp.name, "logs")
        recorded = fit("pytorch_lightning", PlClassifier, cls.logs, run=cls.run_dir)
        plain = fit("pytorch_lightning", PlClassifier, os.path.join(cls.tmp.name, "plain"))
        cls.identical = states_equal(frozen_state(recorded), frozen_state(plain))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_the_training_is_bit_identical_with_and_without_the_callback(self):
        self.assertTrue(self.identical)

    def test_the_scan_finds_the_bad_input_the_blowup_and_the_poisoned_batchnorm(self):
        found = {i["kind"]: i for i in incidents_of(self.run_dir)}
        self.assertEqual(found["bad_input"]["onset_step"], NAN_STEP)
        self.assertEqual(found["blowup"]["nonfinite_step"], NAN_STEP)
        self.assertEqual(found["blowup"]["pattern"], "sudden")
        self.assertIn("bn_corruption", found)
        self.assertEqual(scalars(self.run_dir)["steps"].tolist(), list(range(30)))  # step N: trainer.global_step
        self.assertIn("net.0.weight", layer_names(self.run_dir))

    def test_checkpoints_are_the_exported_training_step(self):
        folder = os.path.join(self.run_dir, "checkpoints")
        self.assertIn("step_%08d.pt2" % NAN_STEP, os.listdir(folder))
        self.assertFalse([name for name in os.listdir(folder) if name.endswith(".pt")])

    def test_replay_runs_the_modules_training_step_to_the_first_op_and_the_sample(self):
        native = nanscope_json("replay", self.run_dir, "--step", NAN_STEP, "--bisect")
        eager = nanscope_json("replay", self.run_dir, "--step", NAN_STEP, "--bisect", "--eager")
        self.assertTrue(native["checkpoint"].endswith(".pt2"))
        for replay in (native, eager):
            first = replay["forward"]["first_nonfinite"]
            op = replay["forward"]["ops"][first["index"]]
            self.assertEqual((op["op"], op["module"]), ("aten::linear", "net.0"))
            self.assertEqual(os.path.basename(op["source"]), "lightning_modules.py:%d" % FORWARD_LINE, op["source"])
            self.assertEqual(replay["loss_from"], "training_step(batch, 0)")
            self.assertEqual(replay["bad_samples"], [5])
        self.assertEqual(native["loss_op"]["op"], "aten::cross_entropy_loss")

    def test_lightnings_own_logs_agree_on_the_step(self):
        for logger in ("csv", "tb"):
            found = incidents_of(os.path.join(self.logs, logger, "version_0"))
            steps = [i["nonfinite_step"] for i in found if i["kind"] == "blowup"]
            self.assertEqual(steps, [NAN_STEP], (logger, found))


class TheOtherPackageAndAccumulation(unittest.TestCase):
    """`lightning` (not pytorch_lightning), two micro-batches a step; the second of step 20 is bad."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.run_dir = os.path.join(cls.tmp.name, "run")
        fit("lightning.pytorch", LightningClassifier, os.path.join(cls.tmp.name, "logs"), run=cls.run_dir,
            steps=24, accumulate=2)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_one_row_per_optimizer_step_names_the_micro_batch(self):
        table = scalars(self.run_dir)
        self.assertEqual(table["steps"].tolist(), list(range(24)))
        bad = dict(zip(table["steps"].tolist(), table["bad_microbatch"].tolist()))
        self.assertEqual(bad[NAN_STEP], 1.0)
        self.assertEqual(bad[NAN_STEP - 1], -1.0)
        batch = torch.load(os.path.join(self.run_dir, "batches", "step_%08d.pt" % NAN_STEP))
        self.assertTrue(bool(torch.isnan(batch["inputs"][0]).any()))
        self.assertEqual(batch["call"], "training_step")


class BatchesByNameAndManualOptimization(unittest.TestCase):
    """A module whose batches are dicts and whose training_step returns {"loss": ...} exports with
    the batch's names as the program's inputs; a module that steps its optimizer itself does not
    export (its training_step would run the optimizer) and keeps state_dicts, its form saying why."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.named_run = os.path.join(cls.tmp.name, "named")
        cls.manual_run = os.path.join(cls.tmp.name, "manual")
        fit("lightning.pytorch", NamedBatchClassifier, os.path.join(cls.tmp.name, "logs"), run=cls.named_run,
            steps=24, dataset=NamedFeatures)
        fit("lightning.pytorch", ManualClassifier, os.path.join(cls.tmp.name, "logs"), run=cls.manual_run, steps=12)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_a_dict_batch_replays_natively_by_name(self):
        replay = nanscope_json("replay", self.named_run, "--step", NAN_STEP, "--bisect")
        self.assertTrue(replay["checkpoint"].endswith(".pt2"))
        op = replay["forward"]["ops"][replay["forward"]["first_nonfinite"]["index"]]
        self.assertEqual((op["op"], op["module"]), ("aten::linear", "net.0"))
        self.assertEqual(replay["loss_from"], "training_step(batch, 0)")
        self.assertEqual(replay["bad_samples"], [5])

    def test_manual_optimization_keeps_state_dicts_and_says_why(self):
        with open(os.path.join(self.manual_run, "checkpoints", "step_%08d.form" % 10), encoding="utf-8") as f:
            kind, why = f.read().splitlines()[:2]
        self.assertEqual(kind, "state_dict")
        self.assertIn("manual optimization", why)
        self.assertIn("nanscope_recorder.lightning:rebuild", why)


class AMetricUpdatedInTrainingStep(unittest.TestCase):
    """Exporting training_step runs it on fake tensors: a torchmetrics metric it updates must keep
    its own state, and what Lightning logs and trains must be what it is without the callback."""

    def test_the_metric_the_weights_and_the_export_are_as_without_the_callback(self):
        with tempfile.TemporaryDirectory() as tmp:
            run_dir = os.path.join(tmp, "run")
            recorded_metrics, plain_metrics = {}, {}
            recorded = fit("lightning.pytorch", MetricClassifier, os.path.join(tmp, "logs"), run=run_dir, steps=24,
                           logged=recorded_metrics)
            plain = fit("lightning.pytorch", MetricClassifier, os.path.join(tmp, "plain"), steps=24,
                        logged=plain_metrics)
            self.assertIn("train_accuracy", plain_metrics)
            self.assertEqual(recorded_metrics, plain_metrics)
            self.assertTrue(states_equal(frozen_state(recorded), frozen_state(plain)))
            with open(os.path.join(run_dir, "checkpoints", "step_%08d.form" % 10), encoding="utf-8") as f:
                self.assertEqual(f.read().splitlines()[0], "exported")


if __name__ == "__main__":
    unittest.main()

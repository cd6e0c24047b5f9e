"""The logs the frameworks themselves keep of a run open in nanscope and agree with what the
callback recorded (issue 56, item 5): one Hugging Face Trainer run, recorded by NanscopeCallback and
reported at the same time to trainer_state.json, W&B (offline: the binary .wandb run file), MLflow
(its local SQLite store, mlflow.db) and TensorBoard. The batch of step 11 has every label -100: the loss is
0/0, and every one of those logs writes 0.0 for it (logging_nan_inf_filter)."""
import glob
import os
import tempfile
import unittest

from framework_fixtures import TokenData, gpt2, incidents_of, nanscope, training_arguments
from nanscope_recorder.hf import NanscopeCallback

IGNORED_STEP = 11


class OneRunFiveLogs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        root = cls.tmp.name
        # Every tracker writes under the test's own folder, never the user's.
        os.environ.update({"WANDB_MODE": "offline", "WANDB_DIR": root, "WANDB_SILENT": "true",
                           "WANDB_CONFIG_DIR": os.path.join(root, "wandb-config"),
                           "WANDB_CACHE_DIR": os.path.join(root, "wandb-cache"),
                           "WANDB_DATA_DIR": os.path.join(root, "wandb-data"),
                           "MLFLOW_TRACKING_URI": "sqlite:///" + os.path.join(root, "mlflow.db"),
                           "WANDB_PROJECT": "nanscope-test"})
        from transformers import Trainer
        cls.run_dir = os.path.join(root, "run")
        cls.output = os.path.join(root, "trainer")
        data = TokenData(64, ignored=range(4 * (IGNORED_STEP - 1), 4 * IGNORED_STEP))
        trainer = Trainer(model=gpt2(), args=training_arguments(cls.output, 16, report_to=["wandb", "mlflow", "tensorboard"]),
                          train_dataset=data, callbacks=[NanscopeCallback(cls.run_dir)])
        trainer.train()
        trainer.save_state()
        # As a script ends: W&B's service writes the rest of the run file, MLflow closes the run.
        import mlflow
        import wandb
        wandb.finish()
        mlflow.end_run()
        cls.logs = {
            "callback": cls.run_dir,
            "trainer_state.json": os.path.join(cls.output, "trainer_state.json"),
            "W&B offline run": glob.glob(os.path.join(root, "wandb", "offline-run-*"))[0],
            "MLflow store": os.path.join(root, "mlflow.db"),
            "TensorBoard events": os.path.dirname(glob.glob(os.path.join(cls.output, "**", "events.out.tfevents.*"),
                                                            recursive=True)[0]),
        }

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_every_log_shows_the_nonfinite_step_and_the_recovery(self):
        for name, path in self.logs.items():
            found = incidents_of(path)
            self.assertEqual([(i["kind"], i["onset_step"]) for i in found], [("nonfinite_loss", IGNORED_STEP)],
                             (name, found))
            self.assertIn("recovered", found[0]["cause"], name)

    def test_the_frameworks_logs_say_their_zero_is_not_the_loss(self):
        for name in ("trainer_state.json", "W&B offline run", "MLflow store", "TensorBoard events"):
            found = incidents_of(self.logs[name])
            self.assertIn("0.0 there, which is not the loss", found[0]["cause"], name)

    def test_the_wandb_steps_are_the_trainers_global_steps_and_the_console_copy_is_left_out(self):
        info = nanscope("info", self.logs["W&B offline run"]).stdout
        self.assertIn("steps 1..16", info)
        self.assertIn('the logged "train/global_step"', info)
        self.assertIn("output.log: not read: W&B's copy of the console", info)

    def test_the_mlflow_store_is_read_without_writing_beside_it(self):
        before = sorted(os.listdir(self.tmp.name))
        info = nanscope("info", self.logs["MLflow store"])
        self.assertEqual(info.returncode, 0, info.stderr)
        self.assertIn("MLflow tracking database", info.stdout)
        self.assertRegex(info.stdout, r"param\.learning_rate\s+0\.0005")
        self.assertEqual(sorted(os.listdir(self.tmp.name)), before)


if __name__ == "__main__":
    unittest.main()

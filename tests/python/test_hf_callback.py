"""Recording a Hugging Face Trainer run with one line (issue 56), with the real transformers, PEFT
and TRL of python/requirements.txt on tiny GPT-2 and Llama configs, and real faults planted in
them. Each test asserts what a user reads: the scan (step, pattern, recovery), replay down to the
op and the line inside transformers' own code, triage, the report, and the Trainer's own log."""
import json
import os
import tempfile
import unittest
import warnings

import torch
from transformers import Trainer

from framework_fixtures import (CaptionedImages, EmbeddingData, TokenData, clip, contrastive_batch, events, frozen_state, gpt2, incidents_of, layer_names,
                                llama, mixtral, nanscope, nanscope_json, scalars, states_equal, training_arguments, value_at,
                                word_tokenizer)
from nanscope_recorder.hf import NanscopeCallback

IGNORED_STEP = 11  # its 4 samples have every label -100: transformers' loss is 0/0


def train(output_dir, model, data, steps, run=None, trainer_class=Trainer, data_collator=None, **options):
    callbacks = [NanscopeCallback(run, checkpoint_every=10)] if run else []
    trainer = trainer_class(model=model, args=training_arguments(output_dir, steps, **options), train_dataset=data,
                            callbacks=callbacks, data_collator=data_collator)
    trainer.train()
    trainer.save_state()  # output_dir/trainer_state.json, the Trainer's own log
    return trainer


class AllIgnoredLabels(unittest.TestCase):
    """GPT-2 in float32; the batch of step 11 has no label to learn from."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.run_dir = os.path.join(cls.tmp.name, "run")
        cls.output = os.path.join(cls.tmp.name, "trainer")
        data = TokenData(64, ignored=range(4 * (IGNORED_STEP - 1), 4 * IGNORED_STEP))
        recorded = gpt2()
        cls.trainer = train(cls.output, recorded, data, 16, run=cls.run_dir)
        cls.recorded_state = frozen_state(recorded)
        plain = gpt2()
        cls.plain = train(os.path.join(cls.tmp.name, "plain"), plain, data, 16)
        cls.plain_state = frozen_state(plain)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_the_training_is_bit_identical_with_and_without_the_callback(self):
        self.assertTrue(states_equal(self.recorded_state, self.plain_state))
        self.assertEqual([h.get("loss") for h in self.trainer.state.log_history],
                         [h.get("loss") for h in self.plain.state.log_history])

    def test_the_trainers_log_hides_the_nan_and_the_callback_keeps_it(self):
        logged = {h["step"]: h["loss"] for h in self.trainer.state.log_history if "loss" in h}
        self.assertEqual(logged[IGNORED_STEP], 0.0)  # logging_nan_inf_filter
        self.assertTrue(torch.isnan(torch.tensor(value_at(self.run_dir, "loss", IGNORED_STEP))))
        # Every other step: the same loss as the Trainer logged (float32 rounding apart).
        for step, loss in logged.items():
            if step != IGNORED_STEP:
                self.assertAlmostEqual(value_at(self.run_dir, "loss", step), loss, places=5)
        # Step N is the Trainer's global step N; nothing was skipped (the Trainer applied every update).
        self.assertEqual(scalars(self.run_dir)["steps"].tolist(), list(range(1, 17)))
        self.assertEqual(scalars(self.run_dir)["skipped"].sum(), 0)

    def test_the_scan_finds_the_step_and_that_training_recovered(self):
        found = incidents_of(self.run_dir, "nonfinite_loss")
        self.assertEqual([(i["onset_step"], i["nonfinite_step"]) for i in found], [(IGNORED_STEP, IGNORED_STEP)])
        self.assertIn("recovered", found[0]["cause"])

    def test_the_trainers_own_log_agrees_and_says_its_zero_is_not_the_loss(self):
        state = os.path.join(self.output, "trainer_state.json")
        found = incidents_of(state, "nonfinite_loss")
        self.assertEqual([i["onset_step"] for i in found], [IGNORED_STEP])
        self.assertIn("0.0 there, which is not the loss", found[0]["cause"])

    def test_replay_reaches_the_division_by_zero_items_in_transformers(self):
        """The Trainer's GPT-2 exports: the native replay of its program names the division, at the
        line of the model that called its loss (what torch.export records of the call); the eager
        replay of the same checkpoint goes inside transformers/loss/loss_utils.py, to the line."""
        replay = nanscope_json("replay", self.run_dir, "--step", IGNORED_STEP)
        first = replay["forward"]["first_nonfinite"]
        op = replay["forward"]["ops"][first["index"]]
        self.assertEqual(op["op"], "aten::div")
        self.assertTrue(os.path.basename(op["source"]).startswith("modeling_gpt2.py:"), op["source"])
        self.assertIn("loss_function", first["code"])
        self.assertEqual(replay["loss_convention"], "in_forward")
        eager = nanscope_json("replay", self.run_dir, "--step", IGNORED_STEP, "--eager")
        first = eager["forward"]["first_nonfinite"]
        op = eager["forward"]["ops"][first["index"]]
        self.assertEqual(op["op"], "aten::div")
        self.assertTrue(os.path.basename(op["source"]).startswith("loss_utils.py:"), op["source"])
        self.assertIn("num_items_in_batch", first["code"])

    def test_the_batch_is_what_the_model_received(self):
        batch = torch.load(os.path.join(self.run_dir, "batches", "step_%08d.pt" % IGNORED_STEP))
        inputs = batch["inputs"]
        self.assertEqual(set(inputs) & {"input_ids", "labels", "num_items_in_batch"},
                         {"input_ids", "labels", "num_items_in_batch"})
        self.assertTrue(bool((inputs["labels"] == -100).all()))
        self.assertEqual(int(inputs["num_items_in_batch"]), 0)

    def test_checkpoints_replay_through_the_saved_config_with_no_user_code(self):
        with open(os.path.join(self.run_dir, "checkpoints", "step_%08d.form" % 10)) as f:
            form = f.read()
        # The Trainer's GPT-2 exports (its checkpoints replay natively); the config is saved all the
        # same, for the eager replay (and for a model that does not export, whose form says so).
        self.assertEqual(form, "exported\n")
        self.assertTrue(os.path.exists(os.path.join(self.run_dir, "transformers", "config.json")))

    def test_triage_says_the_batch_alone_does_it(self):
        triage = nanscope_json("triage", self.run_dir, "--step", IGNORED_STEP)
        self.assertEqual(triage["label"], "data", json.dumps(triage)[:600])

    def test_a_second_callback_on_the_same_run_directory_is_refused(self):
        with self.assertRaises(FileExistsError) as refused:
            NanscopeCallback(self.run_dir)
        self.assertIn("does not write over", str(refused.exception))


class ExpertsThroughALibrarysOwnOp(unittest.TestCase):
    """Mixtral, whose experts run through transformers' own torch.library op: the program exports,
    but the native replay would refuse it (it runs LibTorch's ops only, never a library's code). The
    checkpoints are state_dicts that say so, and `nanscope replay` rebuilds the model in Python."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.run_dir = os.path.join(cls.tmp.name, "run")
        data = TokenData(56, ignored=range(4 * (IGNORED_STEP - 1), 4 * IGNORED_STEP))
        recorded = mixtral()
        cls.trainer = train(os.path.join(cls.tmp.name, "trainer"), recorded, data, 12, run=cls.run_dir)
        plain = mixtral()
        cls.plain = train(os.path.join(cls.tmp.name, "plain"), plain, data, 12)
        cls.identical = states_equal(frozen_state(recorded), frozen_state(plain))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_the_training_is_bit_identical_with_and_without_the_callback(self):
        self.assertTrue(self.identical)
        self.assertEqual([h.get("loss") for h in self.trainer.state.log_history],
                         [h.get("loss") for h in self.plain.state.log_history])

    def test_the_form_names_the_librarys_op(self):
        with open(os.path.join(self.run_dir, "checkpoints", "step_%08d.form" % IGNORED_STEP)) as f:
            kind, why = f.read().splitlines()
        self.assertEqual(kind, "state_dict")
        self.assertIn("transformers::grouped_mm_fallback", why)
        self.assertIn("nanscope_recorder.hf:rebuild", why)
        self.assertFalse(os.path.exists(os.path.join(self.run_dir, "checkpoints", "step_%08d.pt2" % IGNORED_STEP)))
        # `nanscope info` says how those checkpoints replay, and why they are no program.
        info = nanscope("info", self.run_dir)
        self.assertEqual(info.returncode, 0, info.stderr)
        self.assertIn("replayed eagerly: nanscope_recorder.hf:rebuild rebuilds the model", info.stdout)
        self.assertIn("its program calls transformers::grouped_mm_fallback", info.stdout)

    def test_replay_needs_no_flag_and_reaches_the_division_in_transformers(self):
        replay = nanscope_json("replay", self.run_dir, "--step", IGNORED_STEP)
        first = replay["forward"]["first_nonfinite"]
        op = replay["forward"]["ops"][first["index"]]
        self.assertEqual(op["op"], "aten::div")
        self.assertTrue(os.path.basename(op["source"]).startswith("loss_utils.py:"), op["source"])
        self.assertTrue(any(note.startswith("eager replay:") and "no program to replay" in note
                            for note in replay["notes"]), replay["notes"])

    def test_an_exported_program_calling_the_op_replays_eagerly_by_itself(self):
        """An archive holding the op (the user's own torch.export, or an earlier recorder's): the
        native replay refuses it, and `nanscope replay` goes on eagerly, saying why."""
        import shutil
        run = os.path.join(self.tmp.name, "exported-run")
        shutil.copytree(self.run_dir, run)
        checkpoints = os.path.join(run, "checkpoints")
        for name in ("step_%08d.pt" % IGNORED_STEP, "step_%08d.form" % IGNORED_STEP):
            os.remove(os.path.join(checkpoints, name))
        batch = torch.load(os.path.join(run, "batches", "step_%08d.pt" % IGNORED_STEP))["inputs"]
        kwargs = {"input_ids": batch["input_ids"], "labels": batch["labels"], "use_cache": False}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            program = torch.export.export(self.trainer.model, (), kwargs=kwargs, strict=False)
        torch.export.save(program, os.path.join(checkpoints, "step_%08d.pt2" % IGNORED_STEP))
        done = nanscope("replay", run, "--step", IGNORED_STEP, "--json")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("transformers::grouped_mm_fallback", done.stderr)
        replay = json.loads(done.stdout)
        self.assertTrue(replay["notes"][0].startswith("the native replay failed ("), replay["notes"])
        first = replay["forward"]["first_nonfinite"]
        self.assertEqual(replay["forward"]["ops"][first["index"]]["op"], "aten::div")


class DivergingLearningRate(unittest.TestCase):
    """Llama under bfloat16 autocast; the learning rate warms up to 0.3, far too high: the loss falls,
    then climbs for good without a NaN."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.run_dir = os.path.join(cls.tmp.name, "run")
        options = dict(bf16=True, learning_rate=0.3, lr_scheduler_type="constant_with_warmup", warmup_steps=150)
        recorded = llama()
        train(os.path.join(cls.tmp.name, "trainer"), recorded, TokenData(600), 150, run=cls.run_dir, **options)
        plain = llama()
        train(os.path.join(cls.tmp.name, "plain"), plain, TokenData(600), 150, **options)
        cls.identical = states_equal(frozen_state(recorded), frozen_state(plain))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_the_scan_calls_it_a_gradual_divergence_of_the_learning_rate(self):
        # Critical from x10 above the best level, a warning under it: where this run ends between
        # x8 and x30 depends on the machine's float arithmetic (x8.8 on an AVX-512 one).
        found = [i for i in incidents_of(self.run_dir, "blowup") if i["severity"] in ("critical", "warning")]
        self.assertEqual(len(found), 1, found)
        self.assertEqual(found[0]["pattern"], "gradual")
        self.assertIsNone(found[0]["nonfinite_step"])
        self.assertTrue(40 <= found[0]["onset_step"] <= 120, found[0]["onset_step"])
        self.assertIn("learning rate", found[0]["cause"])

    def test_the_report_says_the_same(self):
        report = os.path.join(self.tmp.name, "report.md")
        done = nanscope("report", self.run_dir, "-o", report)
        self.assertEqual(done.returncode, 0, done.stderr)
        with open(report) as f:
            text = f.read()
        self.assertIn("diverged without NaN", text)
        self.assertIn("learning rate", text)

    def test_bfloat16_autocast_is_recorded_and_the_training_is_bit_identical(self):
        info = nanscope("info", self.run_dir).stdout
        self.assertRegex(info, r"amp_dtype\s+bfloat16")
        self.assertTrue(self.identical)


class NanFeatureInTheData(unittest.TestCase):
    """Llama fed embeddings; one sample of step 6 holds a NaN feature."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.run_dir = os.path.join(cls.tmp.name, "run")
        train(os.path.join(cls.tmp.name, "trainer"), llama(), EmbeddingData(64, nan_sample=4 * 5 + 2), 10, run=cls.run_dir)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_the_scan_blames_the_input_batch(self):
        found = incidents_of(self.run_dir, "bad_input")
        self.assertEqual([i["onset_step"] for i in found], [6])
        self.assertIn("inputs_embeds", found[0]["cause"])

    def test_replay_finds_the_first_op_in_the_models_code_and_the_sample(self):
        replay = nanscope_json("replay", self.run_dir, "--step", 6)
        first = replay["forward"]["first_nonfinite"]
        op = replay["forward"]["ops"][first["index"]]
        self.assertTrue(os.path.basename(op["source"]).startswith("modeling_llama.py:"), op["source"])
        self.assertEqual(op["module"], "model.layers.0.input_layernorm")  # the first op to read the embeddings
        bisect = nanscope_json("replay", self.run_dir, "--step", 6, "--bisect")
        self.assertEqual(bisect["bad_samples"], [2])


    def test_triage_blames_the_batch_and_the_report_carries_the_replay(self):
        triage = nanscope_json("triage", self.run_dir, "--step", 6)
        self.assertEqual(triage["label"], "data")
        report = os.path.join(self.tmp.name, "report.json")
        done = nanscope("report", self.run_dir, "-o", report)
        self.assertEqual(done.returncode, 0, done.stderr)
        with open(report) as f:
            written = json.load(f)
        self.assertIn(("bad_input", 6), [(i["kind"], i["onset_step"]) for i in written["incidents"]])
        self.assertIn("model.layers.0.input_layernorm", json.dumps(written["critical"]))


class ContrastiveImagesWithADirtyOne(unittest.TestCase):
    """CLIP trained by the Trainer on image-text pairs, its batches carrying return_loss=True beside
    their tensors; one image of step 4 holds a NaN pixel. The program exports (the setting baked
    in) and replays natively to the first op of CLIP that read the pixel."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.run_dir = os.path.join(cls.tmp.name, "run")
        cls.trainer = train(os.path.join(cls.tmp.name, "trainer"), clip(), CaptionedImages(32, nan_sample=4 * 3 + 1), 6,
                            run=cls.run_dir, remove_unused_columns=False, data_collator=contrastive_batch)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_the_checkpoints_are_exported_programs(self):
        with open(os.path.join(self.run_dir, "checkpoints", "step_%08d.form" % 4)) as f:
            self.assertEqual(f.read(), "exported\n")

    def test_replay_names_the_first_op_of_clip_that_read_the_pixels(self):
        replay = nanscope_json("replay", self.run_dir, "--step", 4)
        first = replay["forward"]["first_nonfinite"]
        op = replay["forward"]["ops"][first["index"]]
        # CLIP's vision embeddings cast the pixels to the patch embedding's dtype first, then convolve.
        self.assertEqual((op["op"], op["module"]), ("aten::to", "vision_model.embeddings"))
        self.assertTrue(os.path.basename(op["source"]).startswith("modeling_clip.py:"), op["source"])
        self.assertIn("pixel_values", first["code"])
        self.assertEqual(first["inputs"][0]["nan"], 1, "the one NaN pixel")


class LoraOverFloat16Overflows(unittest.TestCase):
    """PEFT LoRA adapters over a float16 GPT-2 at a learning rate that makes them grow: the
    activations pass float16's largest value and the step goes NaN."""

    @classmethod
    def setUpClass(cls):
        import peft
        cls.tmp = tempfile.TemporaryDirectory()
        cls.run_dir = os.path.join(cls.tmp.name, "run")
        model = peft.get_peft_model(gpt2(torch.float16), peft.LoraConfig(
            r=4, lora_alpha=16, target_modules=["c_attn", "c_fc"], fan_in_fan_out=True))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            # 0.1: at 0.05 the adapters reached float16's limit within 150 steps on one machine and
            # not on another (AVX-512), whose float arithmetic took the training elsewhere.
            train(os.path.join(cls.tmp.name, "trainer"), model, TokenData(800), 150, run=cls.run_dir,
                  learning_rate=0.1, lr_scheduler_type="constant")
        critical = [i for i in incidents_of(cls.run_dir) if i["severity"] == "critical"]
        cls.first_nan = critical[0]["nonfinite_step"] if critical else None

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_layers_have_the_users_names_and_only_the_trained_parameters(self):
        names = layer_names(self.run_dir)
        self.assertIn("transformer.h.0.attn.c_attn.lora_A.default.weight", names)
        self.assertFalse([n for n in names if n.startswith("base_model.")])
        self.assertFalse([n for n in names if "lora_" not in n], names)  # the frozen float16 weights: no gradient
        self.assertFalse(incidents_of(self.run_dir, "vanishing"))

    def test_replay_in_the_recorded_dtypes_finds_the_float16_overflow_in_transformers_gelu(self):
        self.assertIsNotNone(self.first_nan)
        self.assertTrue(5 <= self.first_nan <= 150, self.first_nan)  # after the adapters grew
        replay = nanscope_json("replay", self.run_dir, "--step", self.first_nan)
        self.assertEqual(replay["dtype"], "float16")
        first = replay["forward"]["first_nonfinite"]
        op = replay["forward"]["ops"][first["index"]]
        self.assertEqual(op["op"], "aten::pow")
        self.assertRegex(op["module"], r"^transformer\.h\.\d\.mlp\.act$")
        self.assertTrue(os.path.basename(op["source"]).startswith("activations.py:"), op["source"])  # transformers' NewGELU
        self.assertGreater(first["inputs"][0]["absmax"], 40)  # x**3 passes 65504 from |x| = 40.3

    def test_the_report_carries_the_incident_and_its_replay(self):
        report = os.path.join(self.tmp.name, "report.json")
        done = nanscope("report", self.run_dir, "-o", report)
        self.assertEqual(done.returncode, 0, done.stderr)
        with open(report) as f:
            written = json.load(f)
        critical = [i for i in written["incidents"] if i["severity"] == "critical"]
        self.assertTrue(critical)
        self.assertEqual(critical[0]["nonfinite_step"], self.first_nan)
        self.assertIn("aten::pow", json.dumps(written["critical"]))


class GradientAccumulation(unittest.TestCase):
    """Two micro-batches a step; the second micro-batch of step 4 holds a NaN feature."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.run_dir = os.path.join(cls.tmp.name, "run")
        # Step 4 reads samples 12..15 as micro-batches 12-13 and 14-15.
        train(os.path.join(cls.tmp.name, "trainer"), gpt2(), EmbeddingData(64, nan_sample=14), 8, run=cls.run_dir,
              batch=2, gradient_accumulation_steps=2)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_one_row_per_optimizer_step_says_which_micro_batch_went_nonfinite(self):
        table = scalars(self.run_dir)
        self.assertEqual(table["steps"].tolist(), list(range(1, 9)))
        bad = dict(zip(table["steps"].tolist(), table["bad_microbatch"].tolist()))
        self.assertEqual(bad[4], 1.0)
        self.assertEqual(bad[3], -1.0)

    def test_the_saved_batch_is_the_micro_batch_that_went_nonfinite(self):
        batch = torch.load(os.path.join(self.run_dir, "batches", "step_%08d.pt" % 4))
        self.assertTrue(bool(torch.isnan(batch["inputs"]["inputs_embeds"]).any()))
        self.assertEqual([i["onset_step"] for i in incidents_of(self.run_dir, "bad_input")], [4])


class TrlSupervisedFineTuning(unittest.TestCase):
    """TRL's SFTTrainer computes its own loss outside the model: the callback records that one."""

    @classmethod
    def setUpClass(cls):
        from datasets import Dataset
        from trl import SFTConfig, SFTTrainer
        cls.tmp = tempfile.TemporaryDirectory()
        cls.run_dir = os.path.join(cls.tmp.name, "run")
        texts = [" ".join("w%d" % ((start + k) % 61) for k in range(12)) for start in range(64)]
        arguments = SFTConfig(output_dir=os.path.join(cls.tmp.name, "trainer"), per_device_train_batch_size=4,
                              max_steps=12, logging_steps=1, report_to=[], save_strategy="no", use_cpu=True, seed=0,
                              disable_tqdm=True, max_length=16)
        cls.trainer = SFTTrainer(model=gpt2(), args=arguments, train_dataset=Dataset.from_dict({"text": texts}),
                                 processing_class=word_tokenizer(), callbacks=[NanscopeCallback(cls.run_dir)])
        cls.trainer.train()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_the_recorded_loss_is_the_one_trl_trained_on(self):
        logged = {h["step"]: h["loss"] for h in self.trainer.state.log_history if "loss" in h}
        self.assertEqual(len(logged), 12)
        for step, loss in logged.items():
            self.assertAlmostEqual(value_at(self.run_dir, "loss", step), loss, places=5)
        self.assertIn("transformer.h.1.mlp.c_fc.weight", layer_names(self.run_dir))
        self.assertFalse(incidents_of(self.run_dir))


class BadSetUp(unittest.TestCase):
    def test_torch_compile_is_refused_before_the_first_step(self):
        with tempfile.TemporaryDirectory() as tmp:
            run = os.path.join(tmp, "run")
            trainer = Trainer(model=gpt2(), args=training_arguments(tmp, 4, torch_compile=True),
                              train_dataset=TokenData(16), callbacks=[NanscopeCallback(run)])
            with self.assertRaises(RuntimeError) as refused:
                trainer.train()
            self.assertIn("torch_compile", str(refused.exception))
            self.assertFalse(os.path.exists(os.path.join(run, "run.h5")))

    def test_a_measurement_that_fails_warns_once_and_training_goes_on(self):
        with tempfile.TemporaryDirectory() as tmp:
            run = os.path.join(tmp, "run")
            callback = NanscopeCallback(run)
            trainer = Trainer(model=gpt2(), args=training_arguments(tmp, 6), train_dataset=TokenData(32),
                              callbacks=[callback])
            original_end_step = None

            def failing_end_step(*args, **kwargs):
                raise ValueError("a statistic that could not be measured")

            def on_train_begin(*args, **kwargs):
                nonlocal original_end_step
                NanscopeCallback.on_train_begin(callback, *args, **kwargs)
                original_end_step = callback.recorder.end_step
                callback.recorder.end_step = failing_end_step

            callback.on_train_begin = on_train_begin
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                trainer.train()
            self.assertEqual(trainer.state.global_step, 6)
            said = [w for w in caught if "recording stopped" in str(w.message)]
            self.assertEqual(len(said), 1)
            notes = [m for _, kind, m in events(run) if kind == "note"]
            self.assertTrue(any("a statistic that could not be measured" in m for m in notes), notes)


if __name__ == "__main__":
    unittest.main()

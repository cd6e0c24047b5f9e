"""Native replay of torch.export archives (.pt2, issue 57): each model below is exported by the
installed torch (torch.export.export, a dynamic batch dimension, strict=False as the recorder
exports), saved with torch.export.save, and replayed by nanscope, which reads the archive as data
and runs its graph op by op through LibTorch's dispatcher. Every model carries a planted fault:
replay must name the op, the module and the source line, and agree with PyTorch running the same
exported program. The models are other people's: transformers' GPT-2 and Llama (tiny configs),
torchvision's ResNet-18 and ViT, and the torch-2 GPT of test_replay_torch2_archives."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest
import warnings
import zipfile

import torch
from torch.export import Dim

from model_source_fixture import ModelSourceTestCase
from test_replay_torch2_archives import MODEL_SOURCE, line_of

NANSCOPE = os.environ["NANSCOPE_BINARY"]
STEP = 3


def export(model, args, kwargs=None, batch_args=(), batch_kwargs=()):
    """torch.export with dim 0 dynamic for the named inputs."""
    batch = Dim("batch", min=2)
    if kwargs:
        dynamic = {name: ({0: batch} if name in batch_kwargs else None) for name in kwargs}
    else:
        dynamic = tuple({0: batch} if i in batch_args else None for i in range(len(args)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.export.export(model, args, kwargs=kwargs, dynamic_shapes=dynamic, strict=False)


def clip_line(fragment):
    """The line of transformers' modeling_clip.py that holds `fragment` (first match)."""
    import transformers.models.clip.modeling_clip as modeling_clip
    with open(modeling_clip.__file__) as f:
        return next(n for n, line in enumerate(f, 1) if fragment in line)


class ReplayExported(ModelSourceTestCase):
    MODEL_SOURCE = MODEL_SOURCE
    MODULE_NAME = "torch2_models_exported"

    def write_run(self, name, program, inputs, targets=None, loss=None):
        run = os.path.join(self.tmp.name, name)
        os.makedirs(os.path.join(run, "checkpoints"))
        os.makedirs(os.path.join(run, "batches"))
        torch.export.save(program, os.path.join(run, "checkpoints", "step_%08d.pt2" % STEP))
        batch = {"inputs": inputs, "step": STEP}
        if targets is not None:
            batch["targets"] = targets
        if loss is not None:
            batch["loss"] = loss
        torch.save(batch, os.path.join(run, "batches", "step_%08d.pt" % STEP))
        return run

    def replay(self, run, extra=(), ok=True):
        out = subprocess.run([NANSCOPE, "replay", run, "--step", str(STEP), "--json", *extra],
                             capture_output=True, text=True, timeout=300)
        if not ok:
            return out
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("no code from the file runs", out.stderr)
        return json.loads(out.stdout)

    def assertCulprit(self, report, op, module, source_end=None):
        culprit = report["forward"]["first_nonfinite"]
        self.assertIsNotNone(culprit, "replay found no non-finite op")
        self.assertEqual((culprit["op"], culprit["module"]), (op, module), culprit)
        if source_end:
            self.assertTrue(culprit["source"].endswith(source_end), culprit["source"])
        return culprit

    # --- the models ---------------------------------------------------------------------------

    def test_torch2_gpt_replays_to_the_division_of_its_loss_as_torchscript_does(self):
        model = self.models.SdpaLM()
        ids = torch.randint(0, 32, (2, 6))
        padded = torch.zeros(2, 6, dtype=torch.long)       # every token padding: the loss is 0/0
        program = export(model, (ids, padded, ids), batch_args=(0, 1, 2))
        self.assertTrue(torch.isnan(program.module()(ids, padded, ids)["loss"]), "PyTorch agrees: 0/0")
        run = self.write_run("gpt", program, [ids, padded], targets=ids)
        report = self.replay(run)
        culprit = self.assertCulprit(report, "aten::div", "", "torch2_models_exported.py:%d" % line_of("0/0 on a fully padded"))
        self.assertEqual(culprit["code"], "out[\"loss\"] = (per_token * mask).sum() / mask.sum()     # 0/0 on a fully padded batch")
        sdpa = [op for op in report["forward"]["ops"] if op["op"] == "aten::scaled_dot_product_attention"]
        self.assertEqual({op["module"] for op in sdpa}, {"h.0.attn", "h.1.attn"}, "SDPA replayed in each block")
        self.assertEqual(report["loss_convention"], "in_forward")
        # The TorchScript replay of the same model and batch names the same op and line.
        scripted = os.path.join(self.tmp.name, "gpt-scripted")
        shutil.copytree(run, scripted)
        os.remove(os.path.join(scripted, "checkpoints", "step_%08d.pt2" % STEP))
        torch.jit.script(model).save(os.path.join(scripted, "checkpoints", "step_%08d.pt" % STEP))
        out = subprocess.run([NANSCOPE, "replay", scripted, "--step", str(STEP), "--json"],
                             capture_output=True, text=True, timeout=300)
        self.assertEqual(out.returncode, 0, out.stderr)
        by_script = json.loads(out.stdout)["forward"]["first_nonfinite"]
        self.assertEqual((by_script["op"], by_script["source"]), (culprit["op"], culprit["source"]))

    def test_hugging_face_gpt2_finds_the_sample_with_an_infinite_embedding(self):
        from transformers import GPT2Config, GPT2LMHeadModel
        # Untied: with its output layer tied to the embedding, an infinite row would make every
        # sample's logits infinite (and PyTorch's loss NaN for every sample).
        config = GPT2Config(vocab_size=32, n_positions=16, n_embd=16, n_layer=2, n_head=2, use_cache=False,
                            tie_word_embeddings=False, bos_token_id=1, eos_token_id=1, pad_token_id=0)
        model = GPT2LMHeadModel(config).train()
        with torch.no_grad():
            model.transformer.wte.weight[7] = float("inf")      # one token's embedding is broken
        ids = torch.randint(8, 30, (4, 8))
        ids[2, 3] = 7                                            # only sample 2 uses it
        program = export(model, (), {"input_ids": ids, "labels": ids}, batch_kwargs=("input_ids", "labels"))
        run = self.write_run("gpt2", program, [ids], targets=ids)
        report = self.replay(run, ("--bisect",))
        self.assertCulprit(report, "aten::embedding", "transformer.wte")
        self.assertEqual(report["bad_samples"], [2])

    def test_hugging_face_llama_names_the_poisoned_projection_and_agrees_on_a_finite_loss(self):
        from framework_fixtures import llama
        model = llama().train()
        model.config.use_cache = False
        ids = torch.randint(3, 30, (4, 8))
        program = export(model, (), {"input_ids": ids, "labels": ids}, batch_kwargs=("input_ids", "labels"))
        run = self.write_run("llama-clean", program, [ids], targets=ids)
        report = self.replay(run)
        self.assertIsNone(report["forward"]["first_nonfinite"])
        expected = program.module()(input_ids=ids, labels=ids)
        expected = (expected[0] if isinstance(expected, (tuple, list)) else expected["loss"]).item()
        self.assertAlmostEqual(report["loss"], expected, places=4)
        self.assertEqual(report["loss_convention"], "in_forward")
        self.assertTrue(any(op["op"] == "aten::scaled_dot_product_attention" for op in report["forward"]["ops"]))
        # The planted fault: one weight of the second layer's down projection is infinite.
        with torch.no_grad():
            model.model.layers[1].mlp.down_proj.weight[0, 0] = float("inf")
        program = export(model, (), {"input_ids": ids, "labels": ids}, batch_kwargs=("input_ids", "labels"))
        report = self.replay(self.write_run("llama", program, [ids], targets=ids))
        self.assertCulprit(report, "aten::linear", "model.layers.1.mlp.down_proj")
        self.assertTrue(any("read the parameter model.layers.1.mlp.down_proj.weight as its input 1" in note
                            and "+Inf 1" in note for note in report["notes"]), report["notes"])

    def test_hugging_face_t5s_position_buckets_are_no_culprit_and_a_poisoned_weight_is(self):
        """T5 computes its relative-position buckets with log(0) = -inf on purpose (cast to an index,
        then replaced by torch.where): a healthy T5 replays with a finite forward and a note, and a
        poisoned weight later in the model is named, not the log."""
        from transformers import T5Config, T5ForConditionalGeneration
        torch.manual_seed(0)
        config = T5Config(vocab_size=32, d_model=16, d_ff=32, d_kv=8, num_layers=2, num_heads=2,
                          decoder_start_token_id=0, pad_token_id=0, eos_token_id=1, use_cache=False)
        model = T5ForConditionalGeneration(config).train()
        ids = torch.randint(2, 30, (4, 8))
        kwargs = {"input_ids": ids, "labels": ids}
        program = export(model, (), kwargs, batch_kwargs=("input_ids", "labels"))
        report = self.replay(self.write_run("t5-clean", program, [ids], targets=ids))
        self.assertIsNone(report["forward"]["first_nonfinite"])
        logs = [op for op in report["forward"]["ops"] if op["op"] == "aten::log" and op["output"]["neginf"] > 0]
        self.assertTrue(logs, "T5's position buckets take log(0)")
        self.assertTrue(any("#%d aten::log" % logs[0]["index"] in note and "not a fault" in note
                            for note in report["notes"]), report["notes"])
        with torch.no_grad():
            model.encoder.block[1].layer[1].DenseReluDense.wo.weight[0, 0] = float("inf")
        program = export(model, (), kwargs, batch_kwargs=("input_ids", "labels"))
        report = self.replay(self.write_run("t5", program, [ids], targets=ids))
        self.assertCulprit(report, "aten::linear", "encoder.block.1.layer.1.DenseReluDense.wo")

    def test_hugging_face_clip_names_the_exp_of_its_learned_temperature(self):
        """CLIP multiplies its logits by exp(logit_scale), a learned parameter: at 100 the exp
        overflows float32 and the contrastive loss is NaN. The logits' product is the first op of
        the batch to go non-finite; replay follows its infinite input back to the exp."""
        from transformers import CLIPConfig, CLIPModel
        torch.manual_seed(0)
        config = CLIPConfig(text_config=dict(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                             num_attention_heads=2, max_position_embeddings=8, bos_token_id=0,
                                             eos_token_id=1, pad_token_id=1),
                            vision_config=dict(image_size=16, patch_size=8, hidden_size=16, intermediate_size=32,
                                               num_hidden_layers=1, num_attention_heads=2),
                            projection_dim=8)
        model = CLIPModel(config).train()
        with torch.no_grad():
            model.logit_scale.fill_(100.0)
        ids, pixels = torch.randint(2, 30, (4, 8)), torch.randn(4, 3, 16, 16)
        # CLIP's loss compares every text with every image of the batch: the export is static.
        program = export(model, (), {"input_ids": ids, "pixel_values": pixels, "return_loss": True})
        run = self.write_run("clip", program, {"input_ids": ids, "pixel_values": pixels})
        report = self.replay(run)
        culprit = self.assertCulprit(report, "aten::exp", "", "modeling_clip.py:%d" % clip_line("logit_scale.exp()"))
        self.assertEqual(culprit["inputs"][0]["max"], 100.0)

    def test_torchvision_resnet18_finds_conv1_and_sample_3(self):
        import torchvision
        model = torchvision.models.resnet18(num_classes=10).train()
        x = torch.randn(6, 3, 32, 32)
        program = export(model, (x,), batch_args=(0,))
        x[3, 1, 4, 4] = float("nan")                             # one pixel of sample 3
        run = self.write_run("resnet", program, x, targets=torch.randint(0, 10, (6,)), loss="cross_entropy")
        report = self.replay(run, ("--bisect",))
        self.assertCulprit(report, "aten::conv2d", "conv1")
        self.assertEqual(report["bad_samples"], [3])
        self.assertIn("layer4.1.bn2", {op["module"] for op in report["forward"]["ops"]})

    def test_torchvision_vit_names_the_poisoned_mlp_layer(self):
        import torchvision
        model = torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                                     hidden_dim=16, mlp_dim=32, num_classes=10).train()
        with torch.no_grad():
            model.encoder.layers.encoder_layer_1.mlp[0].bias[3] = float("nan")
        x = torch.randn(4, 3, 32, 32)
        program = export(model, (x,), batch_args=(0,))
        run = self.write_run("vit", program, x, targets=torch.randint(0, 10, (4,)), loss="cross_entropy")
        report = self.replay(run)
        self.assertCulprit(report, "aten::linear", "encoder.layers.encoder_layer_1.mlp.0")

    def test_torch_cond_replays_the_branch_that_ran(self):
        source = os.path.join(self.tmp.name, "cond_model.py")
        with open(source, "w") as f:
            f.write("import torch\n"
                    "class Gate(torch.nn.Module):\n"
                    "    def __init__(self):\n"
                    "        super().__init__()\n"
                    "        self.proj = torch.nn.Linear(4, 4)\n"
                    "    def forward(self, x):\n"
                    "        return torch.cond(x.sum() > 0, lambda x: self.proj(x).exp(),\n"
                    "                          lambda x: self.proj(x).log(), (x,))   # log of negatives\n")
        import importlib.util
        spec = importlib.util.spec_from_file_location("cond_model", source)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        x = torch.randn(4, 4)
        program = export(module.Gate(), (x,), batch_args=(0,))
        negative = -x.abs() - 1
        run = self.write_run("cond", program, negative, targets=torch.zeros(4, 4), loss="mse")
        report = self.replay(run)
        # The op is in the branch's graph; its line is where forward calls torch.cond (the branch's
        # own frame is code torch generated).
        self.assertCulprit(report, "aten::log", "", "cond_model.py:7")
        ops = [op["op"] for op in report["forward"]["ops"]]
        self.assertNotIn("aten::exp", ops, "only the branch that ran is replayed")
        positive = x.abs() + 1
        report = self.replay(self.write_run("cond-positive", program, positive, targets=torch.zeros(4, 4), loss="mse"))
        self.assertIn("aten::exp", [op["op"] for op in report["forward"]["ops"]])
        self.assertIsNone(report["forward"]["first_nonfinite"])

    def test_map_replays_each_slice_and_names_the_one_that_went_bad(self):
        from torch._higher_order_ops.map import map as hop_map

        class PerSlice(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = torch.nn.Linear(4, 4)

            def forward(self, xs):
                return hop_map(lambda x, w: torch.log(x @ w), xs, self.proj.weight)

        model = PerSlice()
        with torch.no_grad():
            model.proj.weight.copy_(torch.eye(4))
        xs = torch.rand(3, 2, 4) + 0.5
        program = export(model, (xs,))
        xs[1, 0, 2] = -1.0                                   # only slice 1 takes a log of a negative
        run = self.write_run("map", program, xs, targets=torch.zeros(3, 2, 4), loss="mse")
        report = self.replay(run)
        culprit = self.assertCulprit(report, "aten::log", "")
        self.assertEqual(culprit["iteration"], 1)
        logs = [op for op in report["forward"]["ops"] if op["op"] == "aten::log"]
        self.assertEqual([op["iteration"] for op in logs], [0, 1, 2], "each slice's ops, numbered")

    def test_stats_read_the_archives_weights_by_the_models_names(self):
        """`nanscope stats` (and the window's Checkpoints tab) read an exported checkpoint's weights
        and buffers as data, by the module's names: its parameters in the model's order, then its
        buffers (the graph signature's order)."""
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.Linear(8, 2))
        with torch.no_grad():
            model[1].running_var[3] = float("nan")
        x = torch.randn(3, 4)
        run = self.write_run("stats", export(model, (x,), batch_args=(0,)), x)
        out = subprocess.run([NANSCOPE, "stats", os.path.join(run, "checkpoints", "step_%08d.pt2" % STEP), "--json"],
                             capture_output=True, text=True, timeout=300)
        self.assertEqual(out.returncode, 0, out.stderr)
        reported = json.loads(out.stdout)
        self.assertEqual(reported["format"], "exported_program")
        self.assertEqual([t["name"] for t in reported["tensors"]],
                         [name for name, _ in model.named_parameters()] + [name for name, _ in model.named_buffers()])
        by_name = {t["name"]: t for t in reported["tensors"]}
        self.assertEqual(by_name["1.running_var"]["nan"], 1)
        self.assertAlmostEqual(by_name["0.weight"]["max"], model[0].weight.max().item(), places=6)

    # --- what the archive may hold -------------------------------------------------------------

    def edited_run(self, name, edit_model_json=None, edit_entry=None):
        """The small model's archive, with model.json (a dict) or one entry's bytes changed."""
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
        x = torch.randn(3, 4)
        run = self.write_run(name, export(model, (x,), batch_args=(0,)), x, targets=torch.zeros(3, 2), loss="mse")
        path = os.path.join(run, "checkpoints", "step_%08d.pt2" % STEP)
        with zipfile.ZipFile(path) as source:
            entries = [(info.filename, source.read(info.filename)) for info in source.infolist()]
        with zipfile.ZipFile(path, "w") as edited:
            for entry, data in entries:
                if edit_model_json and entry.endswith("models/model.json"):
                    document = json.loads(data)
                    edit_model_json(document)
                    data = json.dumps(document).encode()
                if edit_entry:
                    data = edit_entry(entry, data)
                if data is not None:
                    edited.writestr(entry, data)
        return run

    def assertRefused(self, run, *phrases):
        out = self.replay(run, ok=False)
        self.assertEqual(out.returncode, 2, out.stdout + out.stderr)
        self.assertNotIn("Traceback", out.stderr)
        for phrase in phrases:
            self.assertIn(phrase, out.stderr)
        return out.stderr

    def test_another_schema_version_names_both(self):
        def newer(document):
            document["schema_version"] = {"major": 9, "minor": 1}
        self.assertRefused(self.edited_run("schema", newer), "schema version 9.1", "reads version 8.x",
                           "torch " + torch.__version__)

    def test_an_op_this_libtorch_lacks_and_an_extension_op_are_refused_by_name(self):
        def future(document):
            document["graph_module"]["graph"]["nodes"][0]["target"] = "torch.ops.aten.linear_from_the_future.default"
        self.assertRefused(self.edited_run("future-op", future), "aten::linear_from_the_future",
                           "LibTorch " + torch.__version__.split("+")[0], "written by torch " + torch.__version__)

        def extension(document):
            document["graph_module"]["graph"]["nodes"][0]["target"] = "torch.ops.mylib.fused_linear.default"
        self.assertRefused(self.edited_run("extension-op", extension), "mylib::fused_linear", "extension")

        def python(document):
            document["graph_module"]["graph"]["nodes"][0]["target"] = "builtins.eval"
        self.assertRefused(self.edited_run("python-call", python), "builtins.eval", "never its code")

    def test_hostile_archives_get_a_clear_message(self):
        # JSON nested 10,000 deep (written as text: json.dumps itself recurses).
        run = self.edited_run("deep", edit_entry=lambda entry, data: (
            b'{"schema_version": {"major": 8, "minor": 20}, "graph_module": ' + b"[" * 10000 + b"]" * 10000 + b"}"
            if entry.endswith("models/model.json") else data))
        self.assertRefused(run, "nested too deep")

        def short_weight(entry, data):
            return data[:8] if entry.endswith("data/weights/weight_0") else data
        self.assertRefused(self.edited_run("short-weight", edit_entry=short_weight), "needs 128 bytes", "holds 8")

        # A tensor larger than the file: its metadata says 2^40 x 4 floats.
        def huge_meta(entry, data):
            if entry.endswith("model_weights_config.json"):
                config = json.loads(data)
                first = next(iter(config["config"].values()))
                first["tensor_meta"]["sizes"] = [{"as_int": 1 << 40}, {"as_int": 4}]
                return json.dumps(config).encode()
            return data
        self.assertRefused(self.edited_run("huge-meta", edit_entry=huge_meta), "bytes of storage")

        def unknown_kind(document):
            document["graph_module"]["graph"]["nodes"][0]["inputs"][0]["arg"] = {"as_custom_obj": {"name": "o"}}
        self.assertRefused(self.edited_run("unknown-kind", unknown_kind), "as_custom_obj")

        run = self.edited_run("truncated")
        path = os.path.join(run, "checkpoints", "step_%08d.pt2" % STEP)
        with open(path, "rb") as f:
            data = f.read()
        with open(path, "wb") as f:
            f.write(data[: len(data) // 2])
        out = self.replay(run, ok=False)
        self.assertEqual(out.returncode, 2, out.stderr)
        self.assertIn(path, out.stderr)


if __name__ == "__main__":
    unittest.main()

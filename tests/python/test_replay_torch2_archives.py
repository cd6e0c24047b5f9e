"""Replay of what torch 2.x writes (issue 54), run with the pinned torch of python/requirements.txt:
LibTorch 1.13 could not even load these archives ("Unknown builtin op:
aten::scaled_dot_product_attention"). Each model is a real one of its kind: a causal language model
whose attention is `F.scaled_dot_product_attention` (is_causal, and an explicit mask), torch's own
`nn.MultiheadAttention`, and weights in float16 and bfloat16."""
import json
import os
import subprocess
import textwrap
import unittest
import zipfile

from model_source_fixture import ModelSourceTestCase

import torch

MODEL_SOURCE = textwrap.dedent('''
    from typing import Dict, Optional

    import torch
    from torch import nn
    import torch.nn.functional as F


    class CausalSelfAttention(nn.Module):
        def __init__(self, width: int, heads: int):
            super().__init__()
            self.heads = heads
            self.qkv = nn.Linear(width, 3 * width)
            self.proj = nn.Linear(width, width)

        def forward(self, x, mask: Optional[torch.Tensor] = None):
            b, t, c = x.shape
            q, k, v = self.qkv(x).split(c, dim=2)
            q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
            k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
            v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
            if mask is None:
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            return self.proj(y.transpose(1, 2).reshape(b, t, c))


    class Block(nn.Module):
        def __init__(self, width: int, heads: int):
            super().__init__()
            self.ln = nn.LayerNorm(width)
            self.attn = CausalSelfAttention(width, heads)

        def forward(self, x, mask: Optional[torch.Tensor] = None):
            return x + self.attn(self.ln(x), mask)


    class SdpaLM(nn.Module):
        """A GPT in the shape torch 2.x code writes it, with the masked-mean loss of Hugging Face models."""

        def __init__(self, vocab: int = 32, width: int = 16, heads: int = 2, depth: int = 2):
            super().__init__()
            self.wte = nn.Embedding(vocab, width)
            self.h = nn.ModuleList([Block(width, heads) for _ in range(depth)])
            self.lm_head = nn.Linear(width, vocab, bias=False)

        def forward(self, input_ids, attention_mask, labels: Optional[torch.Tensor] = None,
                    attn_mask: Optional[torch.Tensor] = None) -> Dict[str, torch.Tensor]:
            x = self.wte(input_ids)
            for block in self.h:
                x = block(x, attn_mask)
            logits = self.lm_head(x)
            out = {"logits": logits}
            if labels is not None:
                per_token = F.cross_entropy(logits.transpose(1, 2), labels, reduction="none")
                mask = attention_mask.to(logits.dtype)
                out["loss"] = (per_token * mask).sum() / mask.sum()     # 0/0 on a fully padded batch
            return out


    class MhaClassifier(nn.Module):
        def __init__(self, width: int = 16, heads: int = 4, classes: int = 3):
            super().__init__()
            self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
            self.head = nn.Linear(width, classes)

        def forward(self, x):
            y, _ = self.attn(x, x, x, need_weights=False)
            return self.head(y.mean(dim=1))


    class HalfMlp(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(8, 8)
            self.fc2 = nn.Linear(8, 4)

        def forward(self, x):
            return self.fc2(torch.relu(self.fc1(x)))             # past 65504 in float16
''')


def line_of(marker):
    return next(i for i, line in enumerate(MODEL_SOURCE.split("\n"), 1) if marker in line)


class ReplayTorch2Archives(ModelSourceTestCase):
    MODEL_SOURCE = MODEL_SOURCE
    MODULE_NAME = "torch2_models"

    def replay(self, module, inputs, name, targets=None, loss=None, extra=()):
        run = os.path.join(self.tmp.name, name)
        os.makedirs(os.path.join(run, "checkpoints"))
        os.makedirs(os.path.join(run, "batches"))
        torch.jit.script(module).save(os.path.join(run, "checkpoints", "step_00000003.pt"))
        batch = {"inputs": inputs, "step": 3}
        if targets is not None:
            batch["targets"] = targets
        if loss is not None:
            batch["loss"] = loss
        torch.save(batch, os.path.join(run, "batches", "step_00000003.pt"))
        out = subprocess.run([os.environ["NANSCOPE_BINARY"], "replay", run, "--step", "3", "--json", *extra],
                             capture_output=True, text=True, timeout=300)
        self.assertEqual(out.returncode, 0, out.stderr)
        return json.loads(out.stdout)

    def test_sdpa_causal_lm_replays_to_the_division_of_its_loss(self):
        model = self.models.SdpaLM()
        ids = torch.randint(0, 32, (2, 6))
        padded = torch.zeros(2, 6, dtype=torch.long)     # every token padding: the loss is 0/0
        self.assertTrue(torch.isnan(model(ids, padded, ids)["loss"]), "PyTorch agrees: 0/0")
        # The batch as a Trainer holds it: inputs, and the labels as targets; forward's attn_mask
        # keeps its default (None).
        report = self.replay(model, [ids, padded], "sdpa-causal", targets=ids)
        ops = report["forward"]["ops"]
        sdpa = [op for op in ops if op["op"] == "aten::scaled_dot_product_attention"]
        self.assertEqual({op["module"] for op in sdpa}, {"h.0.attn", "h.1.attn"}, "SDPA replayed in each block")
        self.assertTrue(sdpa and all(op["output"]["nan"] == 0 and op["output"]["inf"] == 0 for op in sdpa),
                        "attention itself stays finite")
        culprit = report["forward"]["first_nonfinite"]
        self.assertEqual(culprit["op"], "aten::div")
        self.assertTrue(culprit["source"].endswith("torch2_models.py:%d" % line_of("0/0 on a fully padded")),
                        culprit["source"])

    def test_sdpa_with_an_explicit_mask_finds_the_sample_with_an_infinite_embedding(self):
        model = self.models.SdpaLM()
        with torch.no_grad():
            model.wte.weight[7] = float("inf")           # one token's embedding is broken
        ids = torch.randint(0, 7, (4, 6))
        ids[2, 3] = 7                                      # only sample 2 uses it
        mask = torch.ones(6, 6, dtype=torch.bool).tril()
        report = self.replay(model, [ids, torch.ones(4, 6, dtype=torch.long), ids, mask], "sdpa-mask",
                             extra=("--bisect",))
        culprit = report["forward"]["first_nonfinite"]
        self.assertIsNotNone(culprit)
        self.assertEqual(culprit["module"], "wte", "the embedding row is where the Inf comes from")
        self.assertEqual(report["bad_samples"], [2])

    def test_multihead_attention_is_replayed_inside_its_module(self):
        model = self.models.MhaClassifier()
        x = torch.randn(8, 5, 16)
        x[5, 2, 4] = float("nan")                           # one sample's feature
        report = self.replay(model, x, "mha", targets=torch.randint(0, 3, (8,)), loss="cross_entropy",
                             extra=("--bisect",))
        modules = {op["module"] for op in report["forward"]["ops"]}
        self.assertIn("attn", modules)
        self.assertEqual(report["forward"]["first_nonfinite"]["module"], "attn")
        self.assertEqual(report["bad_samples"], [5])

    def test_float16_weights_overflow_where_float16_runs(self):
        model = self.models.HalfMlp()
        with torch.no_grad():
            model.fc1.weight.fill_(1.0)
            model.fc1.bias.zero_()
            model.fc2.weight.fill_(1000.0)                 # 8 x 24 x 1000 = 192,000
        model = model.half()
        x = torch.full((2, 8), 3.0, dtype=torch.float16)
        self.assertTrue(torch.isinf(model(x)).any(), "float16 overflows in PyTorch too")
        in_half = self.replay(model, x, "fp16", targets=torch.zeros(2, 4, dtype=torch.float16), loss="mse",
                              extra=("--dtype", "float16"))
        culprit = in_half["forward"]["first_nonfinite"]
        self.assertEqual((culprit["op"], culprit["module"]), ("aten::linear", "fc2"))
        self.assertEqual(culprit["output"]["dtype"], "Half")
        # The what-if: the same archive in float32 is finite.
        in_float = self.replay(model, x, "fp16-as-float32", targets=torch.zeros(2, 4, dtype=torch.float16),
                               loss="mse")
        self.assertIsNone(in_float["forward"]["first_nonfinite"])

    def test_bfloat16_weights_replay_in_bfloat16(self):
        model = self.models.HalfMlp().to(torch.bfloat16)
        x = torch.randn(2, 8, dtype=torch.bfloat16)
        report = self.replay(model, x, "bf16", targets=torch.zeros(2, 4, dtype=torch.bfloat16), loss="mse",
                             extra=("--dtype", "bfloat16"))
        self.assertIsNone(report["forward"]["first_nonfinite"])
        self.assertEqual(report["dtype"], "bfloat16")
        self.assertIn("fc2", {op["module"] for op in report["forward"]["ops"]})


    def test_an_op_this_libtorch_lacks_is_named_with_the_version(self):
        """An archive saved by a newer torch calls an op LibTorch 2.15 does not register: the error
        names the op and the LibTorch that replays, not only "not an archive"."""
        run = os.path.join(self.tmp.name, "newer-op")
        os.makedirs(os.path.join(run, "checkpoints"))
        os.makedirs(os.path.join(run, "batches"))
        saved = os.path.join(self.tmp.name, "linear.pt")
        torch.jit.script(torch.nn.Linear(2, 2)).save(saved)
        # The same archive, its code calling an op of a torch to come (zipfile writes fresh CRCs).
        with zipfile.ZipFile(saved) as source, \
                zipfile.ZipFile(os.path.join(run, "checkpoints", "step_00000003.pt"), "w") as edited:
            for name in source.namelist():
                data = source.read(name)
                if name.endswith("linear.py"):
                    data = data.replace(b"torch.linear(", b"torch.linear_from_the_future(")
                edited.writestr(name, data)
        torch.save({"inputs": torch.randn(3, 2), "step": 3}, os.path.join(run, "batches", "step_00000003.pt"))
        out = subprocess.run([os.environ["NANSCOPE_BINARY"], "replay", run, "--step", "3"],
                             capture_output=True, text=True, timeout=300)
        self.assertEqual(out.returncode, 2, out.stderr)
        self.assertIn("aten::linear_from_the_future", out.stderr)
        self.assertIn("LibTorch " + torch.__version__.split("+")[0], out.stderr)
        self.assertIn("newer torch", out.stderr)


if __name__ == "__main__":
    unittest.main()

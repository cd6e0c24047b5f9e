"""Models that neither script nor trace as they are (issue 25): a Hugging Face-style language model
whose causal mask uses torch.finfo(dtype).min (TorchScript: "Unknown builtin op: aten::finfo") and
whose forward returns a dataclass (the tracer refuses it). The recorder traces it through a view
that returns the output's tensors, says so in the form file, and replay explains the NaN step."""
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

from model_source_fixture import ModelSourceTestCase

import torch

from nanscope_recorder import Recorder

MODEL_SOURCE = textwrap.dedent('''
    import dataclasses
    from typing import Optional

    import torch
    from torch import nn
    import torch.nn.functional as F


    @dataclasses.dataclass
    class CausalLMOutput:
        loss: Optional[torch.Tensor] = None
        logits: Optional[torch.Tensor] = None


    class TinyCausalLM(nn.Module):
        def __init__(self, vocab=16, width=8):
            super().__init__()
            self.wte = nn.Embedding(vocab, width)
            self.attn = nn.Linear(width, 3 * width)
            self.lm_head = nn.Linear(width, vocab, bias=False)
            self.lm_head.weight = self.wte.weight

        def forward(self, input_ids, attention_mask, labels=None):
            x = self.wte(input_ids)
            q, k, v = self.attn(x).chunk(3, dim=-1)
            t = input_ids.shape[1]
            causal = torch.full((t, t), torch.finfo(x.dtype).min).triu(1)
            scores = q @ k.transpose(-1, -2) + causal
            logits = self.lm_head(torch.softmax(scores, dim=-1) @ v)
            loss = None
            if labels is not None:
                per_token = F.cross_entropy(logits.transpose(1, 2), labels, reduction="none")
                mask = attention_mask.to(logits.dtype)
                loss = (per_token * mask).sum() / mask.sum()     # 0/0 when every token is padding
            return CausalLMOutput(loss=loss, logits=logits)
''')


class DataclassOutput(ModelSourceTestCase):
    MODEL_SOURCE = MODEL_SOURCE
    MODULE_NAME = "dataclass_output_models"

    def test_traced_through_the_flattening_view_and_replayed(self):
        torch.manual_seed(0)
        model = self.models.TinyCausalLM()
        with self.assertRaises(Exception):
            torch.jit.script(model)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        run = os.path.join(self.tmp.name, "run")
        with Recorder(run, model, checkpoint_every=0) as rec:
            for step in range(6):
                generator = torch.Generator().manual_seed(step)
                ids = torch.randint(0, 16, (2, 5), generator=generator)
                mask = torch.ones(2, 5, dtype=torch.long)
                if step == 4:
                    mask.zero_()  # a fully padded batch
                rec.begin_step(step, inputs=[ids, mask, ids])
                loss = model(ids, mask, ids).loss
                opt.zero_grad()
                loss.backward()
                if rec.end_step(loss):
                    opt.step()
        with open(os.path.join(run, "checkpoints", "step_00000004.form")) as f:
            form = f.read().split("\n")
        self.assertEqual(form[0], "traced", form)
        self.assertIn("flattened", form[1])
        out = subprocess.run([os.environ["NANSCOPE_BINARY"], "replay", run, "--step", "4", "--json"],
                             capture_output=True, text=True, timeout=300)
        self.assertEqual(out.returncode, 0, out.stderr)
        report = json.loads(out.stdout)
        self.assertEqual(report["loss_convention"], "in_forward")
        culprit = report["forward"]["first_nonfinite"]
        self.assertEqual(culprit["op"], "aten::div", culprit)
        self.assertIn("mask.sum()", culprit["code"])
        signals = [f["signal"] for f in report.get("findings", [])]
        self.assertNotIn("float16_headroom", signals, "the finfo.min mask is no precision problem of the data")


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)

"""Replay with files that do not fit or are damaged (issue 17): one line naming the file and what
is wrong, and `replay --json` stays parseable when the model prints during forward."""
import json
import os
import subprocess
import sys
import tempfile
import unittest
import zipfile

import torch
from torch import nn


class Printing(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 3)

    def forward(self, x):
        print("model says hello from forward", x.shape)
        return self.fc(x)


class Plain(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 3)

    def forward(self, x):
        return self.fc(x)


def make_run(tmp, model, inputs):
    run = os.path.join(tmp, "run")
    os.makedirs(os.path.join(run, "checkpoints"))
    os.makedirs(os.path.join(run, "batches"))
    torch.manual_seed(0)
    checkpoint = os.path.join(run, "checkpoints", "step_00000003.pt")
    batch = os.path.join(run, "batches", "step_00000003.pt")
    torch.jit.script(model).save(checkpoint)
    torch.save({"inputs": inputs, "targets": torch.randint(0, 3, (inputs.shape[0],)), "loss": "cross_entropy",
                "step": 3}, batch)
    return run, checkpoint, batch


def replay(run, *extra):
    return subprocess.run([os.environ["NANSCOPE_BINARY"], "replay", run, "--step", "3", *extra],
                          capture_output=True, text=True, timeout=300)


def error_lines(stderr):
    """The error lines: everything but the notice that replay runs code from the file."""
    return [line for line in stderr.splitlines() if line.strip() and "runs code from the file" not in line]


class ReplayHostileFiles(unittest.TestCase):
    def test_json_is_not_corrupted_by_a_model_that_prints(self):
        with tempfile.TemporaryDirectory() as tmp:
            run, _, _ = make_run(tmp, Printing(), torch.rand(4, 6))
            out = replay(run, "--json")
            self.assertEqual(out.returncode, 0, out.stderr)
            report = json.loads(out.stdout)  # raises if the model's text is mixed in
            self.assertEqual(report["step"], 3)
            self.assertNotIn("model says hello", out.stdout)
            self.assertIn("model says hello", out.stderr)

    def test_batch_of_the_wrong_shape_is_one_line_naming_the_batch(self):
        with tempfile.TemporaryDirectory() as tmp:
            run, _, batch = make_run(tmp, Plain(), torch.rand(4, 5))
            out = replay(run)
            self.assertNotEqual(out.returncode, 0)
            lines = error_lines(out.stderr)
            self.assertEqual(len(lines), 1, out.stderr)
            self.assertIn(batch, lines[0])
            self.assertIn("float32 [4, 5]", lines[0])  # what the batch holds
            self.assertIn("fc.weight is float32 [3, 6]", lines[0])  # what the model takes
            self.assertIn("cannot be multiplied", lines[0])  # LibTorch's own cause

    def test_batch_of_the_wrong_dtype_is_one_line_naming_the_batch(self):
        with tempfile.TemporaryDirectory() as tmp:
            run, _, batch = make_run(tmp, Plain(), torch.randint(0, 5, (4, 6)))
            out = replay(run)
            self.assertNotEqual(out.returncode, 0)
            lines = error_lines(out.stderr)
            self.assertEqual(len(lines), 1, out.stderr)
            self.assertIn(batch, lines[0])
            self.assertIn("int64 [4, 6]", lines[0])
            self.assertIn("float32 [3, 6]", lines[0])

    def test_flipped_byte_in_a_weight_is_caught_by_the_archive_checksum(self):
        with tempfile.TemporaryDirectory() as tmp:
            run, checkpoint, _ = make_run(tmp, Plain(), torch.rand(4, 6))
            with zipfile.ZipFile(checkpoint) as archive:
                info = next(i for i in archive.infolist() if "/data/" in i.filename)
            with open(checkpoint, "r+b") as f:
                f.seek(info.header_offset + 26)
                name_length = int.from_bytes(f.read(2), "little")
                extra_length = int.from_bytes(f.read(2), "little")
                data = info.header_offset + 30 + name_length + extra_length
                f.seek(data + 2)
                byte = f.read(1)[0]
                f.seek(data + 2)
                f.write(bytes([byte ^ 0x40]))
            out = replay(run)
            self.assertNotEqual(out.returncode, 0)
            lines = error_lines(out.stderr)
            self.assertEqual(len(lines), 1, out.stderr)
            self.assertIn(checkpoint, lines[0])
            self.assertIn("checksum", lines[0])

    def test_truncated_archive_names_the_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            run, checkpoint, _ = make_run(tmp, Plain(), torch.rand(4, 6))
            os.truncate(checkpoint, os.path.getsize(checkpoint) // 2)
            out = replay(run)
            self.assertNotEqual(out.returncode, 0)
            lines = error_lines(out.stderr)
            self.assertEqual(len(lines), 1, out.stderr)
            self.assertIn(checkpoint, lines[0])


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)

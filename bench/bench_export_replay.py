"""Writes torch.export archives of a few models with the pinned torch (a CNN with batch norm, the
torch-2 GPT of the replay tests, torchvision's ResNet-18) and their batches, then runs
bench_export_replay on them: the instrumented replay of each against the same graph run plainly.

    .venv/bin/python bench/bench_export_replay.py BUILD_DIR WORK_DIR
"""
import os
import subprocess
import sys
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.export import Dim

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.n1 = nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16)
        self.c2, self.n2 = nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.n1(self.c1(x))), 2)
        x = F.relu(self.n2(self.c2(x)))
        return self.fc(x.mean((2, 3)))


def export(model, args, directory, batch):
    os.makedirs(directory, exist_ok=True)
    dims = tuple({0: Dim("batch", min=2)} for _ in args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.export.export(model, args, dynamic_shapes=dims, strict=False)
    checkpoint = os.path.join(directory, "model.pt2")
    torch.export.save(program, checkpoint)
    batch_file = os.path.join(directory, "batch.pt")
    torch.save(batch, batch_file)
    return checkpoint, batch_file


def main():
    build, work = sys.argv[1], sys.argv[2]
    torch.manual_seed(0)
    cases = []
    x = torch.randn(32, 3, 32, 32)
    cases.append(("cnn",) + export(Cnn().train(), (x,), os.path.join(work, "cnn"),
                                   {"inputs": x, "targets": torch.randint(0, 10, (32,)), "loss": "cross_entropy"}))
    import torchvision
    x = torch.randn(8, 3, 64, 64)
    cases.append(("resnet18",) + export(torchvision.models.resnet18(num_classes=10).train(), (x,),
                                        os.path.join(work, "resnet18"),
                                        {"inputs": x, "targets": torch.randint(0, 10, (8,)), "loss": "cross_entropy"}))
    os.environ.setdefault("NANSCOPE_BINARY", "")
    from model_source_fixture import ModelSourceTestCase  # noqa: F401 - the GPT's source is a file of its own
    import importlib.util
    import tempfile
    from test_replay_torch2_archives import MODEL_SOURCE
    folder = tempfile.mkdtemp()
    with open(os.path.join(folder, "bench_gpt.py"), "w") as f:
        f.write(MODEL_SOURCE)
    spec = importlib.util.spec_from_file_location("bench_gpt", os.path.join(folder, "bench_gpt.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    gpt = module.SdpaLM(vocab=256, width=128, heads=4, depth=4).train()
    ids = torch.randint(0, 256, (16, 64))
    mask = torch.ones(16, 64, dtype=torch.long)
    cases.append(("gpt",) + export(gpt, (ids, mask, ids), os.path.join(work, "gpt"),
                                   {"inputs": [ids, mask], "targets": ids}))
    arguments = [a for case in cases for a in case]
    done = subprocess.run([os.path.join(build, "bench", "bench_export_replay")] + arguments)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())

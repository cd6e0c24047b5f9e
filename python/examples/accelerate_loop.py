"""A plain accelerate training loop recorded by nanscope (README, "Recording from a framework"):
the recorder observes the loop, which applies every update itself, and reads the gradients after
backward and before clipping. A tiny GPT-2 (transformers' own class) learns counting sequences.

    PYTHONPATH=python .venv/bin/python python/examples/accelerate_loop.py RUN_DIR [--ignore-labels-at STEP]

--ignore-labels-at N gives step N a batch whose labels are all -100: the loss is 0/0, NaN.
"""
import argparse

import torch
from accelerate import Accelerator
from transformers import GPT2Config, GPT2LMHeadModel

from nanscope_recorder import Recorder


class Counting(torch.utils.data.Dataset):
    def __init__(self, size, ignored=()):
        self.size, self.ignored = size, set(ignored)

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        generator = torch.Generator().manual_seed(index)
        ids = (torch.randint(0, 64, (1,), generator=generator) + torch.arange(16)) % 64
        labels = torch.full_like(ids, -100) if index in self.ignored else ids.clone()
        return {"input_ids": ids, "labels": labels}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("run_dir")
    parser.add_argument("--steps", type=int, default=24)
    parser.add_argument("--ignore-labels-at", type=int, default=None)
    options = parser.parse_args()
    batch = 4
    ignored = range(batch * options.ignore_labels_at, batch * (options.ignore_labels_at + 1)) \
        if options.ignore_labels_at is not None else ()

    accelerator = Accelerator(cpu=True)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_positions=32, n_embd=32, n_layer=2, n_head=2))
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    loader = torch.utils.data.DataLoader(Counting(batch * options.steps, ignored), batch_size=batch)
    model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)

    # From here on, as in the README.
    scaler = accelerator.scaler                       # fp16 only; None otherwise
    rec = Recorder(options.run_dir, accelerator.unwrap_model(model),
                   skipped_steps="nonfinite_gradients" if scaler else "none")
    for step, batch in enumerate(loader):
        rec.begin_step(step, inputs=batch)
        loss = model(**batch).loss
        accelerator.backward(loss)
        scale = scaler.get_scale() if scaler else None  # the gradients are still scaled: say by how much
        rec.end_step(loss, lr=scheduler.get_last_lr()[0], loss_scale=scale, gradient_scale=scale)
        accelerator.clip_grad_norm_(model.parameters(), 1.0)   # after end_step: the recorder sees them unclipped
        optimizer.step(); scheduler.step(); optimizer.zero_grad()
    rec.close()


if __name__ == "__main__":
    main()

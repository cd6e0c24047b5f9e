"""What NanscopeCallback costs a real transformers training step (issue 56, item 6): the Trainer
with and without the callback, on a GPT-2 (transformers' own class) of 4 layers, width 256,
sequences of 128 tokens in batches of 8, on the CPU.

    PYTHONPATH=python .venv/bin/python bench/bench_hf_callback.py [--rounds 5] [--steps 30]

Each round trains a bare Trainer and a recorded one for the same number of steps, alternately (so
both see the same machine load); a step's time is the time between on_step_begin and on_step_end
of a timing callback that both Trainers carry, and the first steps of each Trainer (its warm-up) are
left out. The recorder runs with its defaults (every table every step, activations every 5 steps,
a checkpoint every 50). Prints the median step of each and their ratio, and TABLE lines for
bench/run_all.sh; asserts nothing.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time
import warnings

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments  # noqa: E402
from transformers.utils import logging as transformers_logging  # noqa: E402

from nanscope_recorder.hf import NanscopeCallback  # noqa: E402

VOCAB, LENGTH, BATCH = 512, 128, 8
WARM_UP_STEPS = 5
TARGET = 1.05


class Tokens(torch.utils.data.Dataset):
    def __len__(self):
        return 1 << 16

    def __getitem__(self, index):
        generator = torch.Generator().manual_seed(index)
        ids = torch.randint(0, VOCAB, (LENGTH,), generator=generator)
        return {"input_ids": ids, "labels": ids.clone()}


class StepTimes(TrainerCallback):
    def __init__(self):
        self.times, self._start = [], None

    def on_step_begin(self, args, state, control, **kwargs):
        self._start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        self.times.append(time.perf_counter() - self._start)


def train(steps, run_dir, folder):
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_positions=LENGTH, n_embd=256, n_layer=4, n_head=4))
    timer = StepTimes()
    callbacks = [timer] + ([NanscopeCallback(run_dir)] if run_dir else [])
    args = TrainingArguments(output_dir=folder, per_device_train_batch_size=BATCH, max_steps=steps, logging_steps=10,
                             report_to=[], save_strategy="no", use_cpu=True, seed=0, disable_tqdm=True,
                             train_sampling_strategy="sequential")
    Trainer(model=model, args=args, train_dataset=Tokens(), callbacks=callbacks).train()
    return timer.times[WARM_UP_STEPS:]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=30)
    options = parser.parse_args()
    transformers_logging.set_verbosity_error()
    warnings.simplefilter("ignore")
    bare, recorded = [], []
    with tempfile.TemporaryDirectory() as folder:
        for round_index in range(options.rounds):
            bare += train(options.steps, None, folder)
            recorded += train(options.steps, os.path.join(folder, "run%d" % round_index), folder)
    bare_ms, recorded_ms = 1e3 * statistics.median(bare), 1e3 * statistics.median(recorded)
    ratio = recorded_ms / bare_ms
    print("Trainer step, GPT-2 4x256, batch %dx%d, CPU: bare %.2f ms, with NanscopeCallback %.2f ms: %.3fx "
          "(%d steps each)" % (BATCH, LENGTH, bare_ms, recorded_ms, ratio, len(bare)))
    print("TABLE\tbench_hf_callback\tTrainer step with NanscopeCallback (GPT-2 4x256, CPU)\t%.3fx (%.2f ms)\t"
          "%.2f ms bare\t<= %.2fx\t%s" % (ratio, recorded_ms, bare_ms, TARGET, "met" if ratio <= TARGET else "missed"))


if __name__ == "__main__":
    main()

"""Tiny models, data and helpers for the framework callback tests (not a test itself): real
transformers, PEFT, TRL and Lightning classes, pinned in python/requirements.txt; tiny configs, so
nothing is downloaded and a step takes milliseconds on a CPU."""
import json
import os
import subprocess

import h5py
import numpy as np
import torch

NANSCOPE = os.environ["NANSCOPE_BINARY"]
VOCAB, LENGTH, WIDTH = 64, 16, 32


def nanscope(*args, timeout=600):
    return subprocess.run([NANSCOPE, *[str(a) for a in args]], capture_output=True, text=True, timeout=timeout)


def nanscope_json(*args):
    """The JSON a nanscope command prints (scan exits 1 when it found a critical incident)."""
    done = nanscope(*args, "--json")
    if done.returncode not in (0, 1) or not done.stdout.strip():
        raise AssertionError("nanscope %s failed (%d): %s" % (" ".join(map(str, args)), done.returncode, done.stderr))
    return json.loads(done.stdout)


def incidents_of(run, kind=None):
    found = nanscope_json("scan", run)["incidents"]
    return [i for i in found if kind is None or i["kind"] == kind]


def scalars(run):
    """{column: numpy array} of run.h5's /scalars, with "steps"."""
    with h5py.File(os.path.join(run, "run.h5"), "r") as f:
        return {name: np.asarray(f["scalars"][name][()]) for name in f["scalars"]}


def layer_names(run):
    with h5py.File(os.path.join(run, "run.h5"), "r") as f:
        return [n.decode() if isinstance(n, bytes) else n for n in f["layers/names"][()]]


def events(run):
    with h5py.File(os.path.join(run, "run.h5"), "r") as f:
        kinds = [k.decode() if isinstance(k, bytes) else k for k in f["events/kind"][()]]
        messages = [m.decode() if isinstance(m, bytes) else m for m in f["events/message"][()]]
        return list(zip(f["events/steps"][()].tolist(), kinds, messages))


def value_at(run, column, step):
    table = scalars(run)
    rows = np.flatnonzero(table["steps"] == step)
    if len(rows) != 1:
        raise AssertionError("%s: no /scalars row for step %d" % (run, step))
    return float(table[column][rows[0]])


def counting_ids(index):
    """A learnable sequence: LENGTH consecutive token ids from a start that depends on the index."""
    generator = torch.Generator().manual_seed(index)
    return (torch.randint(0, VOCAB, (1,), generator=generator) + torch.arange(LENGTH)) % VOCAB


class TokenData(torch.utils.data.Dataset):
    """input_ids and labels; the samples in `ignored` have every label -100 (nothing to learn from,
    and transformers' loss is then 0/0)."""

    def __init__(self, size, ignored=()):
        self.size, self.ignored = size, set(ignored)

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        ids = counting_ids(index)
        labels = torch.full_like(ids, -100) if index in self.ignored else ids.clone()
        return {"input_ids": ids, "labels": labels}


class OneNanSample(torch.utils.data.Dataset):
    """`size` samples, each drawn from a generator seeded by its index; sample `nan_sample` holds one
    NaN. A subclass's sample(index, generator, poisoned) makes one."""

    def __init__(self, size, nan_sample=None):
        self.size, self.nan_sample = size, nan_sample

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        return self.sample(index, torch.Generator().manual_seed(index), index == self.nan_sample)


class EmbeddingData(OneNanSample):
    """inputs_embeds (float features) and labels; sample `nan_sample` has one NaN feature."""

    def sample(self, index, generator, poisoned):
        embeds = torch.randn(LENGTH, WIDTH, generator=generator)
        if poisoned:
            embeds[3, 5] = float("nan")
        return {"inputs_embeds": embeds, "labels": counting_ids(index)}


def gpt2(dtype=torch.float32):
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=VOCAB, n_positions=2 * LENGTH, n_embd=WIDTH, n_layer=2, n_head=2,
                        bos_token_id=1, eos_token_id=1, pad_token_id=0)
    return GPT2LMHeadModel(config).to(dtype)


def llama():
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=WIDTH, intermediate_size=2 * WIDTH, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=2 * LENGTH,
                         bos_token_id=1, eos_token_id=1, pad_token_id=0)
    return LlamaForCausalLM(config)


def mixtral():
    """A mixture of experts: transformers runs its experts through its own torch.library op
    (transformers::grouped_mm_fallback) on a CPU, which no LibTorch has."""
    from transformers import MixtralConfig, MixtralForCausalLM
    torch.manual_seed(0)
    config = MixtralConfig(vocab_size=VOCAB, hidden_size=WIDTH, intermediate_size=2 * WIDTH, num_hidden_layers=2,
                           num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=2 * LENGTH,
                           num_local_experts=4, num_experts_per_tok=2, bos_token_id=1, eos_token_id=1, pad_token_id=0)
    return MixtralForCausalLM(config)


def clip():
    """CLIP, text and vision towers of one layer each, over 16-pixel images of two patches a side."""
    from transformers import CLIPConfig, CLIPModel
    torch.manual_seed(0)
    text = dict(vocab_size=VOCAB, hidden_size=WIDTH, intermediate_size=2 * WIDTH, num_hidden_layers=1,
                num_attention_heads=2, max_position_embeddings=LENGTH, bos_token_id=1, eos_token_id=1, pad_token_id=0)
    vision = dict(image_size=16, patch_size=8, hidden_size=WIDTH, intermediate_size=2 * WIDTH, num_hidden_layers=1,
                  num_attention_heads=2)
    return CLIPModel(CLIPConfig(text_config=text, vision_config=vision, projection_dim=16))


class CaptionedImages(OneNanSample):
    """Token ids and a 16-pixel image per sample; sample `nan_sample`'s image holds one NaN pixel."""

    def sample(self, index, generator, poisoned):
        image = torch.randn(3, 16, 16, generator=generator)
        if poisoned:
            image[1, 4, 4] = float("nan")
        return {"input_ids": counting_ids(index), "pixel_values": image}


def contrastive_batch(samples):
    """The batches of a CLIP Trainer: stacked, with return_loss=True, a setting beside the tensors
    (as transformers' contrastive image-text example's collator writes it)."""
    return {"input_ids": torch.stack([s["input_ids"] for s in samples]),
            "pixel_values": torch.stack([s["pixel_values"] for s in samples]), "return_loss": True}


def training_arguments(output_dir, steps, batch=4, **options):
    """A CPU run that logs every step, in data order, saving nothing of its own but its state."""
    from transformers import TrainingArguments
    options.setdefault("learning_rate", 5e-4)
    options.setdefault("report_to", [])
    options.setdefault("save_strategy", "no")
    return TrainingArguments(output_dir=output_dir, per_device_train_batch_size=batch, max_steps=steps,
                             logging_steps=1, use_cpu=True, seed=0,
                             train_sampling_strategy="sequential", disable_tqdm=True, **options)


def word_tokenizer():
    """A word-level tokenizer made in memory (nothing downloaded): "w0".."w60", pad, eos, unk."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    words = ["<pad>", "<eos>", "<unk>"] + ["w%d" % i for i in range(VOCAB - 3)]
    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>")


def states_equal(a, b):
    """Every tensor of two state_dicts equal bit for bit (NaN where the other has NaN)."""
    if set(a) != set(b):
        return False
    for name in a:
        x, y = a[name], b[name]
        if x.dtype != y.dtype or x.shape != y.shape:
            return False
        if x.is_floating_point():
            if not torch.equal(torch.isnan(x), torch.isnan(y)) or not torch.equal(torch.nan_to_num(x), torch.nan_to_num(y)):
                return False
        elif not torch.equal(x, y):
            return False
    return True


def frozen_state(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}

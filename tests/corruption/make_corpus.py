#!/usr/bin/python3
"""Writes the corruption corpus: damaged and hostile copies of a demo run, one run directory per case.

    /usr/bin/python3 tests/corruption/make_corpus.py --runs build/test-runs --out build/corruption

Each case is OUT/cases/<name>/ (run.h5, checkpoints/step_00000000.pt, batches/step_00000000.pt, and
sometimes extra files) with exactly one damaged or hostile file, named in OUT/manifest.json with the
commands that should read it. Cases are deterministic (fixed seeds), so a case name means the same
bytes on every machine. Needs Debian's python3-torch and python3-h5py (hence /usr/bin/python3).
"""

import argparse
import collections
import io
import json
import os
import pickle
import random
import shutil
import stat
import struct
import sys
import zipfile

BASE_RUN = "sudden-blowup"  # the smallest demo run.h5 with a checkpoint and a batch at step 0
STEP_FILE = "step_00000000.pt"
CKPT = "checkpoints/" + STEP_FILE
BATCH = "batches/" + STEP_FILE


class Corpus:
    def __init__(self, runs, out):
        self.base = os.path.join(runs, BASE_RUN)
        self.out = out
        self.cases_dir = os.path.join(out, "cases")
        self.cases = []
        self.pristine = {}
        for rel in ("run.h5", CKPT, BATCH):
            with open(os.path.join(self.base, rel), "rb") as f:
                self.pristine[rel] = f.read()
            os.makedirs(os.path.dirname(os.path.join(out, "pristine", rel)), exist_ok=True)
            with open(os.path.join(out, "pristine", rel), "wb") as f:
                f.write(self.pristine[rel])

    def new_case(self, name, kind, target):
        """A fresh copy of the base run; returns its directory. `target` is the damaged file."""
        directory = os.path.join(self.cases_dir, name)
        for rel in self.pristine:
            os.makedirs(os.path.dirname(os.path.join(directory, rel)), exist_ok=True)
            if rel == target:
                shutil.copyfile(os.path.join(self.out, "pristine", rel), os.path.join(directory, rel))
            else:
                # Hard links keep the corpus small; the runner checks every file's hash before and
                # after, so a command that wrote into one would be caught all the same.
                os.link(os.path.join(self.out, "pristine", rel), os.path.join(directory, rel))
        self.cases.append({"name": name, "kind": kind, "target": target})
        return directory

    def replace(self, name, kind, target, data):
        """A case whose `target` (relative to the run) holds `data` instead of the pristine file."""
        directory = self.new_case(name, kind, target)
        path = os.path.join(directory, target)
        if os.path.lexists(path):
            os.remove(path)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        return directory

    def special(self, name, kind, target, make):
        directory = self.new_case(name, kind, target)
        path = os.path.join(directory, target)
        os.remove(path)
        make(path)

    def write_manifest(self):
        with open(os.path.join(self.out, "manifest.json"), "w") as f:
            json.dump({"base_run": BASE_RUN, "cases": self.cases}, f, indent=1)


# --- truncation and byte flips -------------------------------------------------------------------

def truncation_points(size):
    """(label, offset): fixed offsets by number, offsets relative to the size by name, so that a case
    keeps its name when the demo run's size changes."""
    points = [(str(p), p) for p in (0, 1, 7, 8, 9, 16, 64, 96, 512, 1024, 2048, 4095, 4096, 8192)]
    points += [("eighth", size // 8), ("quarter", size // 4), ("half", size // 2), ("three-quarters", 3 * size // 4),
               ("end-4096", size - 4096), ("end-512", size - 512), ("end-22", size - 22), ("end-1", size - 1)]
    seen, out = set(), []
    for label, p in points:
        if 0 <= p < size and p not in seen:
            seen.add(p)
            out.append((label, p))
    return out


def add_truncations(corpus, target, kind):
    data = corpus.pristine[target]
    for label, p in truncation_points(len(data)):
        corpus.replace(f"{kind}-{label}", kind, target, data[:p])


def add_flips(corpus, target, kind, lo, hi, count, seed):
    data = corpus.pristine[target]
    rng = random.Random(seed)
    hi = min(hi, len(data))
    for offset in sorted(rng.sample(range(lo, hi), min(count, hi - lo))):
        damaged = bytearray(data)
        damaged[offset] ^= 0xFF
        corpus.replace(f"{kind}-{offset}", kind, target, bytes(damaged))


# --- HDF5 contract lies --------------------------------------------------------------------------

def add_hdf5_lies(corpus):
    import h5py
    import numpy as np

    def edit(name, change):
        directory = corpus.new_case(name, "h5-contract", "run.h5")
        with h5py.File(os.path.join(directory, "run.h5"), "r+") as f:
            change(f, np)

    def swap(f, path, data):
        del f[path]
        f[path] = data

    edit("h5-contract-scalars-loss-string", lambda f, np: swap(f, "scalars/loss", np.array([b"x"] * 400)))
    edit("h5-contract-scalars-loss-2d", lambda f, np: swap(f, "scalars/loss", np.zeros((400, 3))))
    edit("h5-contract-scalars-loss-0d", lambda f, np: swap(f, "scalars/loss", np.float64(1.0)))
    edit("h5-contract-steps-float", lambda f, np: swap(f, "scalars/steps", np.arange(400, dtype=np.float64)))
    edit("h5-contract-steps-2d", lambda f, np: swap(f, "layers/steps", np.zeros((400, 2), dtype=np.int64)))
    edit("h5-contract-steps-empty", lambda f, np: swap(f, "scalars/steps", np.zeros((0,), dtype=np.int64)))
    edit("h5-contract-steps-descending", lambda f, np: swap(f, "scalars/steps", np.arange(400, 0, -1, dtype=np.int64)))
    edit("h5-contract-layers-1d", lambda f, np: swap(f, "layers/grad_norm", np.zeros((400,), dtype=np.float32)))
    edit("h5-contract-layers-3d", lambda f, np: swap(f, "layers/grad_norm", np.zeros((400, 8, 2), dtype=np.float32)))
    edit("h5-contract-layers-too-wide", lambda f, np: swap(f, "layers/grad_norm", np.zeros((400, 9999), dtype=np.float32)))
    edit("h5-contract-layers-int", lambda f, np: swap(f, "layers/grad_norm", np.zeros((400, 8), dtype=np.int8)))
    edit("h5-contract-layers-compound", lambda f, np: swap(f, "layers/grad_norm",
                                                         np.zeros((400, 8), dtype=[("a", "f4"), ("b", "i2")])))
    edit("h5-contract-names-int", lambda f, np: swap(f, "layers/names", np.arange(8)))
    edit("h5-contract-names-short", lambda f, np: swap(f, "layers/names", np.array([b"a", b"b"])))
    edit("h5-contract-names-huge-string", lambda f, np: swap(f, "layers/names", np.array([b"n" * 1000000] * 8)))
    edit("h5-contract-events-kind-float", lambda f, np: swap(f, "events/kind", np.zeros(16)))
    edit("h5-contract-table-is-dataset", lambda f, np: swap(f, "layers", np.zeros(3)))
    edit("h5-contract-format-version-99", lambda f, np: f.attrs.__setitem__("format_version", 99))
    edit("h5-contract-format-version-string", lambda f, np: f.attrs.__setitem__("format_version", "one"))
    edit("h5-contract-format-missing", lambda f, np: f.attrs.__delitem__("format"))
    edit("h5-contract-attr-huge", lambda f, np: f.attrs.__setitem__("run_name", "r" * 60000))
    edit("h5-contract-no-tables", lambda f, np: [f.__delitem__(t) for t in list(f.keys())])

    def soft_loop(f, np):
        del f["scalars/loss"]
        f["scalars/loss"] = h5py.SoftLink("/scalars/loss")
    edit("h5-contract-soft-link-loop", soft_loop)

    def external(f, np):
        del f["scalars/loss"]
        f["scalars/loss"] = h5py.ExternalLink("/etc/passwd", "/x")
    edit("h5-contract-external-link", external)


# --- hostile pickles -----------------------------------------------------------------------------

def zip_archive(records, prefix="archive"):
    """A torch.save-shaped zip (STORED entries) from {name: bytes}."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as z:
        for name, data in records.items():
            z.writestr(f"{prefix}/{name}", data)
    return buffer.getvalue()


class StorageRef:
    """Pickled as persistent id ('storage', <storage class>, key, 'cpu', numel)."""

    def __init__(self, storage_class, key, numel):
        self.pid = ("storage", storage_class, key, "cpu", numel)


class RawTensor:
    """A tensor record with any metadata: torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...)."""

    def __init__(self, storage, offset, size, stride):
        self.args = (storage, offset, tuple(size), tuple(stride), False, collections.OrderedDict())

    def __reduce__(self):
        import torch
        return (torch._utils._rebuild_tensor_v2, self.args)


class Evil:
    def __init__(self, function, argument):
        self.function, self.argument = function, argument

    def __reduce__(self):
        return (self.function, (self.argument,))


def torch_pickle(obj):
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=2)
    pickler.persistent_id = lambda o: o.pid if isinstance(o, StorageRef) else None
    pickler.dump(obj)
    return buffer.getvalue()


def tensor_archive(tensor_record, storages):
    records = {"data.pkl": torch_pickle(tensor_record), "byteorder": b"little", "version": b"3\n"}
    for key, data in storages.items():
        records["data/" + key] = data
    return zip_archive(records)


def add_hostile_pickles(corpus):
    import torch

    def both(name, data):
        # The same bytes as a checkpoint (stats, replay) and as a batch (replay).
        corpus.replace(f"pickle-{name}-ckpt", "pickle", CKPT, data)
        corpus.replace(f"pickle-{name}-batch", "pickle", BATCH, data)

    floats = torch.FloatStorage
    four = struct.pack("<4f", 1, 2, 3, 4)

    # Billion laughs: 2**40 paths through one tiny memoised list tree.
    laughs = [torch.ones(2)]
    for _ in range(40):
        laughs = [laughs, laughs]
    buffer = io.BytesIO()
    torch.save(laughs, buffer)
    both("billion-laughs-memo", buffer.getvalue())
    laughs_dict = {"t": torch.ones(2)}
    for _ in range(40):
        laughs_dict = {"a": laughs_dict, "b": laughs_dict}
    buffer = io.BytesIO()
    torch.save(laughs_dict, buffer)
    both("billion-laughs-dict", buffer.getvalue())

    # Stride-0 views of a one-element storage.
    both("stride0-1e12", tensor_archive(RawTensor(StorageRef(floats, "0", 1), 0, (10**6, 10**6), (0, 0)),
                                        {"0": four[:4]}))
    both("stride0-16M", tensor_archive(RawTensor(StorageRef(floats, "0", 1), 0, (4096, 4096), (0, 0)),
                                       {"0": four[:4]}))
    buffer = io.BytesIO()
    torch.save({"inputs": torch.ones(1).expand(4096, 4096), "targets": torch.zeros(4096, dtype=torch.long),
                "loss": "cross_entropy", "step": 0}, buffer)
    corpus.replace("pickle-stride0-expanded-batch", "pickle", BATCH, buffer.getvalue())

    # Views that point outside their storage, or whose sizes overflow.
    both("size-overflow", tensor_archive(RawTensor(StorageRef(floats, "0", 4), 0, (2**40, 2**40), (1, 1)), {"0": four}))
    both("size-negative", tensor_archive(RawTensor(StorageRef(floats, "0", 4), 0, (-1,), (1,)), {"0": four}))
    both("stride-negative", tensor_archive(RawTensor(StorageRef(floats, "0", 4), 0, (4,), (-1,)), {"0": four}))
    both("stride-huge", tensor_archive(RawTensor(StorageRef(floats, "0", 4), 0, (2, 2), (2**62, 1)), {"0": four}))
    both("offset-past-storage", tensor_archive(RawTensor(StorageRef(floats, "0", 4), 1000, (4,), (1,)), {"0": four}))
    both("offset-negative", tensor_archive(RawTensor(StorageRef(floats, "0", 4), -2**62, (4,), (1,)), {"0": four}))
    both("numel-lie", tensor_archive(RawTensor(StorageRef(floats, "0", 10**12), 0, (4,), (1,)), {"0": four}))
    both("numel-negative", tensor_archive(RawTensor(StorageRef(floats, "0", -1), 0, (4,), (1,)), {"0": four}))
    both("rank-65", tensor_archive(RawTensor(StorageRef(floats, "0", 4), 0, (1,) * 65, (1,) * 65), {"0": four}))
    both("rank-stride-mismatch", tensor_archive(RawTensor(StorageRef(floats, "0", 4), 0, (2, 2), (1,)), {"0": four}))
    both("storage-missing", tensor_archive(RawTensor(StorageRef(floats, "7", 4), 0, (4,), (1,)), {"0": four}))
    both("storage-key-traversal", tensor_archive(RawTensor(StorageRef(floats, "../data.pkl", 4), 0, (4,), (1,)), {"0": four}))
    both("storage-complex", tensor_archive(RawTensor(StorageRef(torch.ComplexFloatStorage, "0", 2), 0, (2,), (1,)),
                                           {"0": four}))
    both("storage-bool", tensor_archive(RawTensor(StorageRef(torch.BoolStorage, "0", 4), 0, (4,), (1,)), {"0": b"\1\0\1\0"}))

    # Globals that must be refused by name: nothing may run. The command would leave a file behind.
    both("os-system", zip_archive({"data.pkl": pickle.dumps(Evil(os.system, "touch PWNED-os-system"), protocol=2),
                                   "byteorder": b"little", "version": b"3\n"}))
    import builtins
    both("builtins-eval", zip_archive({"data.pkl": pickle.dumps(Evil(builtins.eval, "open('PWNED-eval','w')"), protocol=2),
                                       "byteorder": b"little", "version": b"3\n"}))

    # Hand-written opcode streams.
    def raw(name, body):
        both(name, zip_archive({"data.pkl": body, "byteorder": b"little", "version": b"3\n"}))

    raw("nested-lists-100k", b"\x80\x02" + b"]" * 100000 + b"a" * 99999 + b".")
    raw("nested-tuples-100k", b"\x80\x02" + b")" * 100000 + b"\x85" * 99999 + b".")
    raw("marks-1M", b"\x80\x02" + b"(" * 1000000 + b"N.")
    raw("memo-get-missing", b"\x80\x02j\xff\xff\xff\xff.")
    raw("memo-put-huge", b"\x80\x02]r\xff\xff\xff\x7f.")
    raw("binunicode-length-lie", b"\x80\x02X\xff\xff\xff\x7fabc.")
    raw("long4-huge", b"\x80\x02\x8b\xff\xff\xff\x7f\x00.")
    raw("stack-underflow", b"\x80\x02a.")
    raw("no-stop", b"\x80\x02]")
    raw("empty", b"")
    raw("protocol-9", b"\x80\x09N.")
    raw("frame-lie", b"\x80\x04\x95\xff\xff\xff\xff\xff\xff\xff\x7fN.")
    raw("setitems-odd", b"\x80\x02}(K\x01u.")
    raw("reduce-non-callable", b"\x80\x02K\x01)R.")
    raw("build-on-int", b"\x80\x02K\x01}b.")
    raw("global-no-newline", b"\x80\x02ctorch")

    # Zip-level lies around a valid pickle.
    good = tensor_archive(RawTensor(StorageRef(floats, "0", 4), 0, (4,), (1,)), {"0": four})
    both("zip-no-data-pkl", zip_archive({"byteorder": b"little", "version": b"3\n"}))
    both("zip-big-endian", tensor_archive(RawTensor(StorageRef(floats, "0", 4), 0, (4,), (1,)), {"0": four})
         .replace(b"little", b"big\0\0\0"))
    both("zip-deflated", deflated(good))
    both("zip-two-prefixes", zip_archive({"a/data.pkl": b"\x80\x02N.", "b/data.pkl": b"\x80\x02N."}, prefix="x"))
    both("zip-many-entries", zip_archive({f"data/{k}": b"" for k in range(20000)} | {"data.pkl": b"\x80\x02N."}))
    both("zip-eocd-only", b"PK\x05\x06" + b"\0" * 18)
    both("zip-cd-count-lie", eocd_lie(good))


def deflated(archive):
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(archive)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info.filename))
    return out.getvalue()


def eocd_lie(archive):
    data = bytearray(archive)
    eocd = data.rfind(b"PK\x05\x06")
    struct.pack_into("<HHII", data, eocd + 8, 0xFFFF, 0xFFFF, 0x7FFFFFFF, 0x7FFFFFF0)
    return bytes(data)


# --- wrong dtypes and ranks in otherwise valid files ---------------------------------------------

def add_wrong_tensors(corpus):
    import torch

    def save(obj):
        buffer = io.BytesIO()
        torch.save(obj, buffer)
        return buffer.getvalue()

    batch = torch.load(os.path.join(corpus.base, BATCH))
    variants = {
        "inputs-int64": dict(batch, inputs=batch["inputs"].long()),
        "inputs-float64": dict(batch, inputs=batch["inputs"].double()),
        "inputs-bool": dict(batch, inputs=batch["inputs"] > 0),
        "inputs-rank1": dict(batch, inputs=batch["inputs"].flatten()),
        "inputs-rank0": dict(batch, inputs=torch.tensor(1.0)),
        "inputs-rank4": dict(batch, inputs=batch["inputs"][None, None]),
        "inputs-wrong-width": dict(batch, inputs=torch.zeros(32, 17)),
        "inputs-empty": dict(batch, inputs=torch.zeros(0, 16)),
        "inputs-string": dict(batch, inputs="not a tensor"),
        "inputs-missing": {k: v for k, v in batch.items() if k != "inputs"},
        "targets-float": dict(batch, targets=batch["targets"].float()),
        "targets-out-of-range": dict(batch, targets=batch["targets"] + 10**6),
        "targets-short": dict(batch, targets=batch["targets"][:3]),
        "step-string": dict(batch, step="zero"),
        "a-list": [batch["inputs"]],
        "a-tensor": batch["inputs"],
    }
    for name, obj in variants.items():
        corpus.replace(f"batch-{name}", "batch-wrong", BATCH, save(obj))

    module = torch.jit.load(os.path.join(corpus.base, CKPT))
    name, _ = next(iter(module.named_parameters()))
    owner = module
    for part in name.split(".")[:-1]:
        owner = getattr(owner, part)
    leaf = name.split(".")[-1]
    for label, make in {"float64": lambda p: p.double(), "rank1": lambda p: p.flatten(),
                        "empty": lambda p: p[:0], "int32": lambda p: p.int()}.items():
        parameter = getattr(owner, leaf)
        original = parameter.data
        parameter.requires_grad_(False)
        parameter.data = make(original)
        buffer = io.BytesIO()
        torch.jit.save(module, buffer)
        parameter.data = original
        parameter.requires_grad_(True)
        corpus.replace(f"ckpt-param-{label}", "ckpt-wrong", CKPT, buffer.getvalue())
    corpus.replace("ckpt-is-a-batch", "ckpt-wrong", CKPT, corpus.pristine[BATCH])
    corpus.replace("ckpt-plain-state-dict", "ckpt-wrong", CKPT, save(module.state_dict()))


# --- safetensors ---------------------------------------------------------------------------------

def safetensors(header, data=b"", length=None):
    text = header if isinstance(header, bytes) else header.encode()
    return struct.pack("<Q", len(text) if length is None else length) + text + data


def add_safetensors(corpus):
    target = "checkpoints/step_00000000.safetensors"
    sixteen = struct.pack("<4f", 1, 2, 3, 4)

    def st(name, data):
        corpus.replace(f"st-{name}", "safetensors", target, data)

    ok = '{"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}}'
    st("valid", safetensors(ok, sixteen))
    st("empty-header", safetensors("{}"))
    st("bad-u-escape-short", safetensors('{"\\u12": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}', sixteen))
    st("bad-u-escape-hex", safetensors('{"\\uZZZZ": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}', sixteen))
    st("bad-u-lone-surrogate", safetensors('{"\\ud800": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}', sixteen))
    st("bad-u-nul", safetensors('{"\\u0000": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}', sixteen))
    st("bad-escape-at-end", safetensors('{"\\', sixteen))
    st("shape-expression", safetensors('{"w": {"dtype": "F32", "shape": [6-2], "data_offsets": [0, 16]}}', sixteen))
    st("shape-negative", safetensors('{"w": {"dtype": "F32", "shape": [-4], "data_offsets": [0, 16]}}', sixteen))
    st("shape-fraction", safetensors('{"w": {"dtype": "F32", "shape": [2.5], "data_offsets": [0, 16]}}', sixteen))
    st("shape-exponent", safetensors('{"w": {"dtype": "F32", "shape": [1e400], "data_offsets": [0, 16]}}', sixteen))
    st("shape-overflow", safetensors('{"w": {"dtype": "F32", "shape": [4611686018427387904, 4], "data_offsets": [0, 16]}}', sixteen))
    st("shape-digits", safetensors('{"w": {"dtype": "F32", "shape": [' + "9" * 5000 + '], "data_offsets": [0, 16]}}', sixteen))
    st("shape-rank-100", safetensors('{"w": {"dtype": "F32", "shape": [' + ",".join(["1"] * 100) + '], "data_offsets": [0, 4]}}', sixteen))
    st("offsets-past-end", safetensors('{"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 1600]}}', sixteen))
    st("offsets-reversed", safetensors('{"w": {"dtype": "F32", "shape": [0], "data_offsets": [16, 0]}}', sixteen))
    st("offsets-huge", safetensors('{"w": {"dtype": "F32", "shape": [4], "data_offsets": [18446744073709551600, 18446744073709551616]}}', sixteen))
    st("offsets-three", safetensors('{"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 8, 16]}}', sixteen))
    st("bytes-mismatch", safetensors('{"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 16]}}', sixteen))
    st("dtype-unknown", safetensors('{"w": {"dtype": "Q7", "shape": [4], "data_offsets": [0, 16]}}', sixteen))
    st("dtype-number", safetensors('{"w": {"dtype": 32, "shape": [4], "data_offsets": [0, 16]}}', sixteen))
    st("entry-not-object", safetensors('{"w": [1, 2, 3]}', sixteen))
    st("header-not-object", safetensors('[1, 2]', sixteen))
    st("header-length-huge", safetensors(ok, sixteen, length=2**63))
    st("header-length-max", safetensors(ok, sixteen, length=2**64 - 1))
    st("header-length-100MiB", safetensors(ok, sixteen, length=100 << 20))
    st("header-length-plus-one", safetensors(ok, sixteen, length=len(ok) + len(sixteen) + 1))
    st("header-truncated", safetensors(ok[:-5], length=len(ok)))
    st("header-deep-arrays", safetensors("[" * 100000 + "]" * 100000))
    st("header-deep-objects", safetensors('{"a":' * 100000 + "1" + "}" * 100000))
    st("header-unterminated-string", safetensors('{"w' + "x" * 1000))
    st("header-trailing-garbage", safetensors(ok + "xyz", sixteen))
    st("header-duplicate-names", safetensors(ok[:-1] + ', "w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}', sixteen))
    st("header-many-tensors", safetensors("{" + ",".join(f'"t{k}": {{"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}'
                                                          for k in range(20000)) + "}", sixteen))
    st("only-length", struct.pack("<Q", 2))


# --- special files -------------------------------------------------------------------------------

def add_special_files(corpus):
    for target, label in (("run.h5", "h5"), (CKPT, "ckpt"), (BATCH, "batch")):
        corpus.special(f"special-{label}-fifo", "special-fifo", target, os.mkfifo)
        corpus.special(f"special-{label}-directory", "special-directory", target, os.mkdir)
        corpus.special(f"special-{label}-missing", "special-missing", target, lambda path: None)
        corpus.special(f"special-{label}-empty", "special-empty", target, lambda path: open(path, "wb").close())
        corpus.special(f"special-{label}-dev-zero", "special-device", target, lambda path: os.symlink("/dev/zero", path))
        corpus.special(f"special-{label}-dangling-link", "special-link", target,
                       lambda path: os.symlink("does-not-exist", path))
        corpus.special(f"special-{label}-self-link", "special-link", target, lambda path: os.symlink(os.path.basename(path), path))


def generate(runs, out, only=None):
    """Writes every case; with `only` (a set of names), keeps just those on disk."""
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    corpus = Corpus(runs, out)
    h5_size = len(corpus.pristine["run.h5"])
    add_truncations(corpus, "run.h5", "h5-truncate")
    add_flips(corpus, "run.h5", "h5-flip-meta", 0, 4096, 32, seed=1)
    add_flips(corpus, "run.h5", "h5-flip-data", 4096, h5_size, 12, seed=2)
    add_truncations(corpus, CKPT, "ckpt-truncate")
    add_flips(corpus, CKPT, "ckpt-flip", 0, len(corpus.pristine[CKPT]), 16, seed=3)
    add_truncations(corpus, BATCH, "batch-truncate")
    add_flips(corpus, BATCH, "batch-flip", 0, len(corpus.pristine[BATCH]), 12, seed=4)
    add_hdf5_lies(corpus)
    add_hostile_pickles(corpus)
    add_wrong_tensors(corpus)
    add_safetensors(corpus)
    add_special_files(corpus)
    if only is not None:
        for case in corpus.cases:
            if case["name"] not in only:
                shutil.rmtree(os.path.join(corpus.cases_dir, case["name"]))
        corpus.cases = [c for c in corpus.cases if c["name"] in only]
    corpus.write_manifest()
    return corpus.cases


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", required=True, help="the demo runs (nanscope demo DIR)")
    parser.add_argument("--out", required=True, help="where to write the corpus (replaced)")
    args = parser.parse_args()
    cases = generate(args.runs, args.out)
    kinds = collections.Counter(c["kind"] for c in cases)
    print(f"{len(cases)} cases in {args.out}/cases: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Writes the fuzz harnesses' seed corpora: small, valid inputs of each format, so that libFuzzer
starts from files the readers accept instead of from nothing.

    /usr/bin/python3 fuzz/make_seeds.py OUT      # OUT/<harness>/<seed>

Archives come from torch.save and torch.jit.save, their pickles are taken out of them, safetensors
files and the run are written by hand (h5py), each a few KB: a seed of 100 KB or more slows
libFuzzer to a few runs a second. Needs python3-torch and python3-h5py.
"""

import io
import os
import struct
import sys
import zipfile

import torch


def write(directory, name, data):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name), "wb") as f:
        f.write(data)


def saved(obj):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def pickles_of(archive):
    with zipfile.ZipFile(io.BytesIO(archive)) as z:
        return {n: z.read(n) for n in z.namelist() if n.endswith(".pkl")}


def safetensors(header, data):
    text = header.encode()
    return struct.pack("<Q", len(text)) + text + data


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
    archives = {
        "state_dict.pt": saved(model.state_dict()),
        "tensor.pt": saved(torch.arange(6.0).reshape(2, 3)),
        "view.pt": saved(torch.arange(12.0).reshape(3, 4)[:, 1:3]),
        "batch.pt": saved({"inputs": torch.ones(2, 3), "targets": torch.tensor([0, 1]), "loss": "cross_entropy", "step": 7}),
        "mixed.pt": saved({"half": torch.ones(2, dtype=torch.float16), "bf": torch.ones(2, dtype=torch.bfloat16),
                           "i8": torch.ones(3, dtype=torch.int8), "b": torch.tensor([True]), "l": [1, 2.5, None, "x"]}),
    }
    buffer = io.BytesIO()
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), buffer)
    archives["script.pt"] = buffer.getvalue()
    for name, data in archives.items():
        write(os.path.join(out, "zip_archive"), name, data)
        for record, pickled in pickles_of(data).items():
            write(os.path.join(out, "pickle"), name[:-3] + "-" + os.path.basename(record), pickled)

    floats = struct.pack("<6f", 1, 2, float("nan"), float("inf"), -5, 6)
    seeds = {
        "one.safetensors": safetensors('{"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}}', floats),
        "meta.safetensors": safetensors('{"__metadata__":{"format":"pt"},"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},'
                                        '"b":{"dtype":"BF16","shape":[],"data_offsets":[4,6]},'
                                        '"c":{"dtype":"I64","shape":[1],"data_offsets":[6,14]}}', floats[:14]),
        "escape.safetensors": safetensors('{"w\\u00e9\\n":{"dtype":"BOOL","shape":[0],"data_offsets":[0,0]}}', b""),
    }
    for name, data in seeds.items():
        write(os.path.join(out, "safetensors"), name, data)

    write(os.path.join(out, "run_reader"), "minimal.h5", minimal_run())


def minimal_run():
    """The run contract in as few bytes as h5py allows: contiguous datasets, the oldest file format."""
    import h5py
    import numpy as np
    buffer = io.BytesIO()
    with h5py.File(buffer, "w", libver="earliest") as f:
        f.attrs.update({"format": "training-run", "format_version": 1, "run_name": "seed"})
        f["scalars/steps"] = np.arange(3, dtype=np.int64)
        f["scalars/loss"] = np.array([1.0, np.nan, np.inf])
        f["layers/steps"] = np.arange(3, dtype=np.int64)
        f["layers/names"] = np.array([b"fc.weight", b"fc.bias"], dtype=h5py.string_dtype())
        f["layers/grad_norm"] = np.ones((3, 2), dtype=np.float32)
        f["events/steps"] = np.array([2], dtype=np.int64)
        f["events/kind"] = np.array([b"skip"], dtype=h5py.string_dtype())
        f["events/message"] = np.array([b"nan loss"], dtype=h5py.string_dtype())
    return buffer.getvalue()


if __name__ == "__main__":
    main()

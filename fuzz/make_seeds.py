#!/usr/bin/python3
"""Writes the fuzz harnesses' seed corpora: small, valid inputs of each format, so that libFuzzer
starts from files the readers accept instead of from nothing.

    /usr/bin/python3 fuzz/make_seeds.py OUT      # OUT/<harness>/<seed>

Archives come from torch.save and torch.jit.save, their pickles are taken out of them, safetensors
files and the run are written by hand (h5py), each a few KB: a seed of 100 KB or more slows
libFuzzer to a few runs a second. Needs python3-torch and python3-h5py.

The structure-finding readers and W&B's run files (structured_log, wandb) are seeded from the real
logs the project keeps in tests/data/logs. Other tools' logs (tensorboard, text_log, trainer_state,
metrics_csv) are seeded from the real logs
of ../shared/real-logs (NANSCOPE_REAL_LOGS overrides), read in place when the seeds are written:
the small files whole, the larger ones cut to their first few KB (which also seeds the readers'
cut-off-file paths). Those excerpts live in the build folder only, never in the project. Without
the real logs, the generated seeds below are written alone.
"""

import glob
import io
import json
import math
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

    write(os.path.join(out, "exported_program"), "linear.pt2", exported_program())

    write(os.path.join(out, "run_reader"), "minimal.h5", minimal_run())

    real_logs = os.environ.get("NANSCOPE_REAL_LOGS") or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "real-logs")
    if not os.path.isdir(real_logs):
        print(f"make_seeds.py: no real logs at {real_logs}: the log readers get generated seeds only")
        real_logs = None
    tensorboard_seeds(os.path.join(out, "tensorboard"), real_logs)
    text_log_seeds(os.path.join(out, "text_log"), real_logs)
    trainer_state_seeds(os.path.join(out, "trainer_state"), real_logs)
    metrics_csv_seeds(os.path.join(out, "metrics_csv"), real_logs)
    tracker_file_seeds(os.path.join(out, "tracker_files"))
    fixtures = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "logs")
    structured_log_seeds(os.path.join(out, "structured_log"), fixtures)
    wandb_seeds(os.path.join(out, "wandb"), fixtures)


def exported_program():
    """A torch.export archive of one nn.Linear(2, 3) with a dynamic batch, in the layout and JSON
    schema (8.20) torch 2.15's torch.export.save writes (the fields as tests/python/test_replay_exported
    reads them from real archives); written by hand because this Python's torch predates torch.export."""
    def meta(sizes, strides, grad):
        return {"dtype": 7, "sizes": sizes, "requires_grad": grad, "device": {"type": "cpu", "index": None},
                "strides": strides, "storage_offset": {"as_int": 0}, "layout": 7}
    ints = lambda *values: [{"as_int": v} for v in values]
    batch = {"as_expr": {"expr_str": "s17", "hint": {"as_int": 4}}}
    node = {"target": "torch.ops.aten.linear.default",
            "inputs": [{"name": "input", "arg": {"as_tensor": {"name": "x"}}, "kind": 1},
                       {"name": "weight", "arg": {"as_tensor": {"name": "p_weight"}}, "kind": 1},
                       {"name": "bias", "arg": {"as_tensor": {"name": "p_bias"}}, "kind": 1}],
            "outputs": [{"as_tensor": {"name": "linear"}}],
            "metadata": {"stack_trace": 'File "model.py", line 6, in forward\n    return self.fc(x)',
                         "nn_module_stack": "L__self__,,M;L__self__fc,fc,torch.nn.modules.linear.Linear"},
            "is_hop_single_tensor_return": None, "name": "linear"}
    graph = {"inputs": [{"as_tensor": {"name": n}} for n in ("p_weight", "p_bias", "x")],
             "outputs": [{"as_tensor": {"name": "linear"}}], "nodes": [node],
             "tensor_values": {"p_weight": meta(ints(3, 2), ints(2, 1), True), "p_bias": meta(ints(3), ints(1), True),
                               "x": meta([batch, {"as_int": 2}], [{"as_int": 2}, {"as_int": 1}], False),
                               "linear": meta([batch, {"as_int": 3}], [{"as_int": 3}, {"as_int": 1}], True)},
             "sym_int_values": {}, "sym_bool_values": {}, "is_single_tensor_return": False,
             "custom_obj_values": {}, "sym_float_values": {}}
    signature = {"input_specs": [{"parameter": {"arg": {"name": "p_weight"}, "parameter_name": "fc.weight"}},
                                 {"parameter": {"arg": {"name": "p_bias"}, "parameter_name": "fc.bias"}},
                                 {"user_input": {"arg": {"as_tensor": {"name": "x"}}}}],
                 "output_specs": [{"user_output": {"arg": {"as_tensor": {"name": "linear"}}}}]}
    program = {"graph_module": {"graph": graph, "signature": signature, "module_call_graph": [], "metadata": {},
                                "treespec_namedtuple_fields": {}},
               "opset_version": {"aten": 10}, "range_constraints": {"s17": {"min_val": 2, "max_val": None}},
               "schema_version": {"major": 8, "minor": 20}, "verifiers": ["TRAINING"], "torch_version": "2.15.0",
               "guards_code": []}
    weights = {"config": {"fc.weight": {"path_name": "weight_0", "is_param": True, "use_pickle": False,
                                        "tensor_meta": meta(ints(3, 2), ints(2, 1), True)},
                          "fc.bias": {"path_name": "weight_1", "is_param": True, "use_pickle": False,
                                      "tensor_meta": meta(ints(3), ints(1), True)}}}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("model/archive_format", "pt2")
        archive.writestr("model/archive_version", "0")
        archive.writestr("model/byteorder", "little")
        archive.writestr("model/.data/version", "6\n")
        archive.writestr("model/models/model.json", json.dumps(program))
        archive.writestr("model/data/weights/model_weights_config.json", json.dumps(weights))
        archive.writestr("model/data/weights/weight_0", struct.pack("<6f", 1, 2, 3, 4, float("nan"), 6))
        archive.writestr("model/data/weights/weight_1", struct.pack("<3f", 0.5, float("inf"), -1))
        archive.writestr("model/data/constants/model_constants_config.json", json.dumps({"config": {}}))
        archive.writestr("model/data/sample_inputs/model.pt", saved(((torch.ones(4, 2),), {})))
    return buffer.getvalue()


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


# ---- other tools' logs ---------------------------------------------------------------------------

SEED_BYTES = 4096  # the real logs' larger files are cut to about this
TFRECORD_SEPARATOR = b"\xf7TFRECORD\xf7"  # fuzz_tensorboard.cpp splits odd inputs here
HPARAMS_SEPARATOR = b"\n#HPARAMS.YAML#\n"  # fuzz_metrics_csv.cpp's hparams.yaml follows this


def real_files(real_logs, pattern):
    return sorted(glob.glob(os.path.join(real_logs, "*", pattern))) if real_logs else []


def seed_name(path):
    """The real log's folder names the seed: its owner__repo__what tells what the run was."""
    return os.path.basename(os.path.dirname(path))


def head(path, size=SEED_BYTES):
    """The first `size` bytes of a file, cut at a line end when there is one."""
    with open(path, "rb") as f:
        data = f.read(size + 1)
    if len(data) <= size:
        return data
    cut = data.rfind(b"\n", 0, size)
    return data[:cut + 1] if cut > 0 else data[:size]


def _crc32c_table():
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


CRC32C_TABLE = _crc32c_table()


def masked_crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc = CRC32C_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    crc ^= 0xFFFFFFFF
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def tfrecord(data):
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked_crc32c(length)) + data + struct.pack("<I", masked_crc32c(data))


def tfrecord_payloads(path):
    """The records' data of an event file (CRCs not checked: the real files are sound)."""
    with open(path, "rb") as f:
        data = f.read()
    payloads, at = [], 0
    while at + 12 <= len(data):
        (length,) = struct.unpack_from("<Q", data, at)
        payloads.append(data[at + 12:at + 12 + length])
        at += 16 + length
    return payloads


def varint(value):
    value &= (1 << 64) - 1  # negative int64 fields are ten-byte varints
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def pb_int(field, value):
    return varint(field << 3) + varint(value)


def pb_bytes(field, value):
    value = value.encode() if isinstance(value, str) else value
    return varint(field << 3 | 2) + varint(len(value)) + value


def pb_double(field, value):
    return varint(field << 3 | 1) + struct.pack("<d", value)


def pb_float(field, value):
    return varint(field << 3 | 5) + struct.pack("<f", value)


def event(step, *values, wall_time=1700000000.0):
    """Event{wall_time, step, summary{value...}}"""
    summary = b"".join(pb_bytes(1, v) for v in values)
    return pb_double(1, wall_time + step) + pb_int(2, step) + pb_bytes(5, summary)


def plugin(name):
    return pb_bytes(9, pb_bytes(1, pb_bytes(1, name)))  # Value.metadata.plugin_data.plugin_name


def tensor(dtype, dims, **typed):
    shape = b"".join(pb_bytes(2, pb_int(1, d)) for d in dims)
    body = pb_int(1, dtype) + pb_bytes(2, shape)
    for field, data in typed.items():
        number = {"content": 4, "float_val": 5, "double_val": 6, "int_val": 7, "int64_val": 10, "half_val": 13}[field]
        body += pb_bytes(number, data)
    return body


def generated_event_files():
    """One record of each kind the reader tells apart, each file a few hundred bytes."""
    floats = struct.pack("<3f", 1.5, math.nan, math.inf)
    version = pb_double(1, 1700000000.0) + pb_bytes(3, "brain.Event:2") + pb_bytes(10, pb_bytes(1, "pytorch"))
    scalars = [event(s, pb_bytes(1, "train/loss") + pb_float(2, v)) for s, v in ((1, 2.5), (2, math.nan), (3, math.inf))]
    tf2 = [
        event(4, pb_bytes(1, "loss") + plugin("scalars") + pb_bytes(8, tensor(1, [], float_val=floats[:4]))),
        event(5, pb_bytes(1, "loss") + pb_bytes(8, tensor(2, [], content=struct.pack("<d", 0.25)))),
        event(6, pb_bytes(1, "half") + pb_bytes(8, tensor(19, [], half_val=varint(0x3C00)))),
        event(7, pb_bytes(1, "bf16") + pb_bytes(8, tensor(14, [1], content=struct.pack("<H", 0x7FC0)))),
        event(8, pb_bytes(1, "steps") + pb_bytes(8, tensor(9, [], int64_val=varint(12)))),
        event(9, pb_bytes(1, "w/hist") + plugin("histograms")
              + pb_bytes(8, tensor(1, [2, 3], content=struct.pack("<6f", -1, 0, 3, 0, 1, 0)))),
        event(10, pb_bytes(1, "w/histo") + pb_bytes(5, pb_double(1, -2) + pb_double(2, 2) + pb_double(3, 10)
                                                   + pb_double(4, 1) + pb_double(5, 8)
                                                   + pb_bytes(6, struct.pack("<2d", 0, 2))
                                                   + pb_bytes(7, struct.pack("<2d", 4, 6)))),
    ]
    others = [
        event(11, pb_bytes(1, "sample") + pb_bytes(4, b"\x08\x01")),
        event(12, pb_bytes(1, "_hparams_/experiment") + plugin("hparams")),
        event(13, pb_bytes(1, "args") + plugin("text") + pb_bytes(8, tensor(7, [1]))),
        pb_double(1, 1700000013.0) + pb_bytes(4, b"graph"),
        pb_double(1, 1700000014.0) + pb_bytes(7, b"\x08\x01"),
    ]
    # [6148914691236517206, 3] with 2 values: rows x 3 wraps around 2^64 to 2, which once passed the
    # reader's shape check and read past the values (TensorBoardReader.HistogramShapeThatWrapsAroundIsSkipped).
    wrapping = [event(14, pb_bytes(1, "acts") + plugin("histograms")
                      + pb_bytes(8, tensor(2, [6148914691236517206, 3], double_val=struct.pack("<2d", 1, 2))))]
    return {"scalars": [version] + scalars, "tf2-tensors": [version] + tf2, "skipped-kinds": [version] + others,
            "histogram-shape-wraps": wrapping}


def tensorboard_seeds(out, real_logs):
    """Even first byte: the file as it is; odd: its records' payloads, framed by the harness."""
    files = dict(generated_event_files())
    for path in real_files(real_logs, "events.out.tfevents.*"):
        payloads, size = [], 0
        for payload in tfrecord_payloads(path):
            if size + len(payload) > SEED_BYTES:
                continue  # the Trainer's text summaries (its arguments, the model config) run to KBs
            payloads.append(payload)
            size += len(payload) + 16
        # events.out.tfevents.<time>.<host>.<pid>.<n>: the folder and the last two tell them apart.
        files[seed_name(path) + "-" + ".".join(os.path.basename(path).split(".")[-2:])] = payloads
    for name, payloads in files.items():
        if any(TFRECORD_SEPARATOR in p for p in payloads):
            continue  # would split differently in the harness
        write(out, name + ".raw", b"\x00" + b"".join(tfrecord(p) for p in payloads))
        write(out, name + ".records", b"\x01" + TFRECORD_SEPARATOR.join(payloads))
    # Damage the framing path reads: a length CRC that fails, a record cut off.
    scalars = b"".join(tfrecord(p) for p in files["scalars"])
    write(out, "bad-length-crc.raw", b"\x00" + scalars[:8] + b"\0\0\0\0" + scalars[12:])
    write(out, "cut-off.raw", b"\x00" + scalars[:-7])


def text_log_seeds(out, real_logs):
    for path in real_files(real_logs, "*.log"):
        with open(path, "rb") as f:
            lines = f.read().splitlines(keepends=True)
        write(out, seed_name(path) + "-head.log", head(path))
        # Around the first overflows and step reports, where the loss-scale lines are.
        marks = [i for i, line in enumerate(lines) if b"Skipping step" in line or b"step=" in line]
        if marks:
            write(out, seed_name(path) + "-overflows.log", b"".join(lines[max(0, marks[0] - 5):marks[0] + 40])[:SEED_BYTES])
    write(out, "megatron.log", (
        b" iteration      100/  500000 | consumed samples: 6400 | elapsed time per iteration (ms): 412.3 |"
        b" learning rate: 1.500E-05 | global batch size: 64 | lm loss: 7.123E+00 | loss scale: 65536.0 |"
        b" grad norm: 1.234 | number of skipped iterations: 0 | number of nan iterations: 0 |\n"
        b" iteration      200/  500000 | consumed samples: 12800 | lm loss: nan | loss scale: 32768.0 |"
        b" grad norm: inf | number of skipped iterations: 3 | number of nan iterations: 1 |\n"
        b" validation loss at iteration 200 | lm loss value: 2.2E+00 | lm loss PPL: 9.02E+00 |\n"))
    write(out, "deepspeed.log", (
        b"[2023-04-18 03:36:00,502] [INFO] [fused_optimizer.py:362:_update_scale] Grad overflow on iteration 0\n"
        b"[2023-04-18 03:36:00,503] [INFO] [logging.py:96:log_dist] [Rank 0] Overflow detected. Skipping step."
        b" Attempted loss scale: 65536, reducing to 32768\n"
        b"[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 128.0, reducing to 64.0 but hysteresis is 2\n"
        b"[2023-04-18 03:36:04,100] [INFO] [fused_optimizer.py:370:_update_scale] No Grad overflow for 100 iterations\n"
        b"[2023-04-18 03:36:04,101] [INFO] [fused_optimizer.py:371:_update_scale] Increasing dynamic loss scale from 64.0 to 128.0\n"
        b"[2023-04-18 03:36:05,000] [INFO] [logging.py:96:log_dist] [Rank 0] step=10, skipped=2, lr=[5e-05, 1e-05],"
        b" mom=[(0.9, 0.95), (0.9, 0.95)]\n"))
    write(out, "deepspeed-chat.log", (
        b"cmd = deepspeed main.py --gradient_accumulation_steps 2\n"
        b"Beginning of Epoch 1/2, Total Micro Batches 8\n"
        b"Epoch: 0, Step: 3, Rank: 0, loss = 2.31\n"
        b"***** Evaluating perplexity, Epoch 1/2 *****\n"
        b"ppl: 2.01\n"
        b"chosen_last_scores (higher is better) : 2.8, acc (higher is better) : 0.49\n"
        b"Epoch 1/1 with loss 0.575\n"))


def structured_log_seeds(out, fixtures):
    # The heads of the project's real logs of every shape (tests/data/logs, each with its
    # SOURCE.md): text records, JSON lines, tables, a JSON document of columns.
    for path in sorted(glob.glob(os.path.join(fixtures, "*", "*"))):
        if os.path.basename(path) == "SOURCE.md" or path.endswith(".wandb") or os.path.isdir(path):
            continue
        write(out, seed_name(path) + "-" + os.path.basename(path), head(path))


def wandb_seeds(out, fixtures):
    # W&B's run files: the small ones whole, the larger cut to their first blocks.
    for path in sorted(glob.glob(os.path.join(fixtures, "*", "*.wandb"))):
        write(out, seed_name(path) + "-" + os.path.basename(path), head(path, 4 * SEED_BYTES))


def tracker_file_seeds(out):
    # Our own lines in the shapes of the files cited in tests/source/TrackerFolderReaderTest.cpp:
    # MLflow's "timestamp value step" (and a two-field line), W&B's history objects with NaN tokens.
    write(out, "mlflow_metric", b"1628697792090 332.68 0\n1628697795789 297.6 1\n1628697799319 nan 2\n"
                                b"1628697803121 -inf 3\n1628697806972 239.0\n")
    write(out, "wandb_history.jsonl", (
        b'{"Loss": 12.8, "Episode reward": -98.7, "_runtime": 5.8, "_timestamp": 1585015311.6, "_step": 0}\n'
        b'{"Loss": NaN, "train/loss": Infinity, "_runtime": 6.3, "_timestamp": 1585015312.1, "_step": 1}\n'
        b'{"graph_0": {"_type": "graph", "nodes": []}, "_step": 2}\n'))


def trainer_state_seeds(out, real_logs):
    # Whole files up to 12 KB (three real ones and the Trainer's closing fields after log_history);
    # the others cut off inside log_history, as a Trainer killed mid-write leaves them.
    for path in real_files(real_logs, "trainer_state.json"):
        write(out, seed_name(path) + ".json", head(path, 3 * SEED_BYTES))
    write(out, "generated.json", (
        b'{\n  "best_metric": null,\n  "epoch": 0.5,\n  "global_step": 3,\n  "log_history": [\n'
        b'    {"epoch": 0.1, "grad_norm": NaN, "learning_rate": 0.0, "loss": 4.3, "step": 1},\n'
        b'    {"epoch": 0.2, "grad_norm": Infinity, "learning_rate": 1e-05, "loss": -Infinity, "step": 2},\n'
        b'    {"epoch": 0.2, "eval_loss": NaN, "eval_runtime": 1.5, "step": 2},\n'
        b'    {"epoch": 0.5, "step": 3, "total_flos": 5785036350898176.0, "train_loss": 3.1, "train_runtime": 12.5}\n'
        b'  ],\n  "max_steps": 3,\n  "trial_name": "x\\u00e9\\"y"\n}\n'))


def metrics_csv_seeds(out, real_logs):
    for path in real_files(real_logs, "metrics.csv"):
        hparams = os.path.join(os.path.dirname(path), "hparams.yaml")
        extra = HPARAMS_SEPARATOR + head(hparams) if os.path.isfile(hparams) else b""
        write(out, seed_name(path) + ".csv", head(path) + extra)
    write(out, "generated.csv", (
        b"epoch,step,train_loss_step,val_loss,lr-Adam\n0,0,2.5,,0.001\n0,1,nan,,0.001\n0,1,,inf,\n"
        b"1,0,-Infinity,,1e-4\n1,1,2.0,1.9,1e-4,extra\n1,2" + HPARAMS_SEPARATOR
        + b"learning_rate: 0.001\nbatch_size: 32\nname: 'run'\n"))


if __name__ == "__main__":
    main()

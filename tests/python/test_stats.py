"""`nanscope stats` and `nanscope diff` must read what PyTorch writes (torch.save state_dicts,
training checkpoints, plain tensors, TorchScript archives, safetensors) without running anything
from the file, and every figure must match PyTorch's own result on the same tensors."""
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import unittest

import torch

BINARY = os.environ["NANSCOPE_BINARY"]
RUNS = os.environ["NANSCOPE_TEST_RUNS"]


def nanscope(*args, expect=0, env=None):
    result = subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=300,
                            env=dict(os.environ, **(env or {})))
    if result.returncode != expect:
        raise AssertionError(f"nanscope {' '.join(args)} exited {result.returncode}, not {expect}:\n"
                             f"{result.stdout}\n{result.stderr}")
    return result


def stats_json(path, *extra):
    return json.loads(nanscope("stats", path, "--json", *extra).stdout)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.ReLU())
        self.fc1 = torch.nn.Linear(8, 4)
        self.bn1 = torch.nn.BatchNorm1d(4)

    def forward(self, x):
        x = self.features(x).mean(dim=(2, 3))
        return self.bn1(self.fc1(x))


def expected_stats(tensor):
    """What nanscope must report, computed by PyTorch in float64."""
    x = tensor.detach().flatten().to(torch.float64)
    finite = torch.isfinite(x)
    values = x[finite]
    if tensor.is_floating_point():
        tiny = torch.finfo(tensor.dtype).tiny
        subnormal = int(((x.abs() < tiny) & (x != 0)).sum())
    else:
        subnormal = 0
    out = {
        "shape": list(tensor.shape),
        "numel": tensor.numel(),
        "nan": int(torch.isnan(x).sum()),
        "posinf": int((x == math.inf).sum()),
        "neginf": int((x == -math.inf).sum()),
        "zero": int((x == 0).sum()),
        "subnormal": subnormal,
    }
    out["inf"] = out["posinf"] + out["neginf"]
    if values.numel() > 0:
        out.update(min=float(values.min()), max=float(values.max()), mean=float(values.mean()),
                   std=float(values.std()) if values.numel() > 1 else 0.0, norm=float(values.norm()),
                   absmax=float(values.abs().max()))
    else:
        out.update(min=None, max=None, mean=None, std=None)
    return out


DTYPE_NAMES = {torch.float32: "float32", torch.float64: "float64", torch.float16: "float16",
               torch.bfloat16: "bfloat16", torch.int64: "int64", torch.int32: "int32", torch.uint8: "uint8",
               torch.bool: "bool", torch.int8: "int8", torch.int16: "int16"}


class StatsMatchPyTorch(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = cls.tmp.name
        torch.manual_seed(7)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def assert_matches(self, reported, tensors):
        by_name = {t["name"]: t for t in reported["tensors"]}
        self.assertEqual(set(by_name), set(tensors), "tensor names")
        for name, tensor in tensors.items():
            got = by_name[name]
            want = expected_stats(tensor)
            with self.subTest(tensor=name):
                self.assertEqual(got["dtype"], DTYPE_NAMES[tensor.dtype])
                for key in ("shape", "numel", "nan", "posinf", "neginf", "inf", "zero", "subnormal"):
                    self.assertEqual(got[key], want[key], key)
                for key in ("min", "max"):
                    self.assertEqual(got[key], want[key], key)
                if want["mean"] is None:
                    self.assertIsNone(got["mean"])
                    self.assertIsNone(got["std"])
                    continue
                scale = max(want["absmax"], 1e-30)
                self.assertAlmostEqual(got["mean"], want["mean"], delta=1e-6 * scale, msg="mean")
                self.assertAlmostEqual(got["std"], want["std"], delta=1e-5 * max(want["std"], 1e-30) + 1e-7 * scale, msg="std")
                self.assertAlmostEqual(got["norm"], want["norm"], delta=1e-6 * max(want["norm"], 1e-30), msg="norm")
                self.assertEqual(got["absmax"], want["absmax"], "absmax")

    def test_state_dict(self):
        model = Net()
        model.train()
        model(torch.randn(4, 3, 6, 6))  # moves the BatchNorm running statistics
        state = model.state_dict()
        torch.save(state, self.path("state.pt"))
        reported = stats_json(self.path("state.pt"))
        self.assertEqual(reported["format"], "state_dict")
        self.assertEqual([t["name"] for t in reported["tensors"]], list(state))
        self.assert_matches(reported, state)

    def test_nested_training_checkpoint_with_optimizer(self):
        model = Net()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        model(torch.randn(4, 3, 6, 6)).sum().backward()
        optimizer.step()
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": 3,
                    "loss": 0.25, "note": "after step 1", "best": None}, self.path("training.pt"))
        reported = stats_json(self.path("training.pt"))
        self.assertEqual(reported["format"], "state_dict")
        expected = {f"model.{k}": v for k, v in model.state_dict().items()}
        for index, state in optimizer.state_dict()["state"].items():
            for key, value in state.items():
                if torch.is_tensor(value):
                    expected[f"optimizer.state.{index}.{key}"] = value
        self.assert_matches(reported, expected)
        self.assertIn("model.features.0.weight", [t["name"] for t in reported["tensors"]])

    def test_non_finite_values_and_every_dtype(self):
        base = torch.randn(1000, dtype=torch.float64) * 3
        base[::97] = math.nan
        base[5] = math.inf
        base[6] = -math.inf
        base[7] = 0.0
        tensors = {
            "f32": base.float(),
            "f64": base.clone(),
            "f16": torch.cat([base.half(), torch.tensor([1e-6, -3e-7, 6e-5, 0.0], dtype=torch.float16)]),
            "bf16": torch.cat([base.bfloat16(), torch.tensor([1e-39, -5e-40, 0.0], dtype=torch.bfloat16)]),
            "f32_subnormal": torch.tensor([1e-40, -1e-41, 1.0, 0.0], dtype=torch.float32),
            "f64_subnormal": torch.tensor([1e-310, 2.0], dtype=torch.float64),
            "all_nan": torch.full((3, 4), math.nan),
            "empty": torch.zeros(0, 5),
            "scalar": torch.tensor(2.5),
            "i64": torch.arange(-5, 20),
            "i32": torch.tensor([3, -1, 0, 7], dtype=torch.int32),
            "u8": torch.tensor([0, 255, 3], dtype=torch.uint8),
            "mask": torch.tensor([True, False, True]),
        }
        torch.save(tensors, self.path("dtypes.pt"))
        reported = stats_json(self.path("dtypes.pt"))
        self.assert_matches(reported, tensors)
        # The kernel's baseline build (CPUs without AVX2) must agree as well.
        baseline = json.loads(nanscope("stats", self.path("dtypes.pt"), "--json", env={"NANSCOPE_NO_AVX2": "1"}).stdout)
        self.assert_matches(baseline, tensors)
        all_nan = next(t for t in reported["tensors"] if t["name"] == "all_nan")
        self.assertIsNone(all_nan["min"])
        self.assertIn("12 NaN", all_nan["flags"])

    def test_extreme_magnitudes_keep_their_accuracy(self):
        tensors = {
            "tiny": torch.randn(5000) * 1e-30,        # squares underflow float32
            "huge": torch.randn(5000) * 1e30,         # squares overflow float32
            "near_max": torch.tensor([3e38, -3e38, 1e38, 3e38] * 600),  # sums overflow float32
            "offset": 1000 + torch.randn(100000) * 1e-2,  # a large mean over a small spread
            "f64_wide": torch.randn(3000, dtype=torch.float64) * 1e150,
            "f16_max": torch.tensor([65504.0, -65504.0, 1.0] * 100, dtype=torch.float16),
        }
        torch.save(tensors, self.path("extreme.pt"))
        self.assert_matches(stats_json(self.path("extreme.pt")), tensors)
        baseline = json.loads(nanscope("stats", self.path("extreme.pt"), "--json", env={"NANSCOPE_NO_AVX2": "1"}).stdout)
        self.assert_matches(baseline, tensors)

    def test_shared_storage_and_views(self):
        base = torch.arange(48, dtype=torch.float32).reshape(6, 8) - 20
        tensors = {"base": base, "rows": base[2:4], "transposed": base.t(), "column": base[:, 3],
                   "strided": base[1::2, ::3], "narrow": base.flatten()[5:17].view(3, 4)}
        torch.save(tensors, self.path("views.pt"))
        reported = stats_json(self.path("views.pt"))
        self.assert_matches(reported, tensors)

    def test_plain_tensor_and_list(self):
        t = torch.randn(5, 7)
        torch.save(t, self.path("tensor.pt"))
        reported = stats_json(self.path("tensor.pt"))
        self.assertEqual(reported["format"], "tensor")
        self.assert_matches(reported, {"tensor": t})
        items = [torch.randn(3), torch.ones(2, dtype=torch.float64)]
        torch.save(items, self.path("list.pt"))
        self.assert_matches(stats_json(self.path("list.pt")), {"0": items[0], "1": items[1]})

    def test_torchscript_archive_is_read_without_running_it(self):
        model = Net()
        model(torch.randn(4, 3, 6, 6))
        scripted = torch.jit.script(model)
        scripted.save(self.path("scripted.pt"))
        reported = stats_json(self.path("scripted.pt"))
        self.assertEqual(reported["format"], "torchscript")
        expected = dict(scripted.named_parameters())
        expected.update(dict(scripted.named_buffers()))
        self.assert_matches(reported, expected)

    def test_safetensors(self):
        tensors = {"embed.weight": torch.randn(6, 4), "head.bias": torch.tensor([1.0, math.nan, -math.inf]),
                   "half": torch.randn(8).half(), "steps": torch.arange(4)}
        codes = {torch.float32: "F32", torch.float16: "F16", torch.int64: "I64"}
        header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
        for name, t in tensors.items():
            data = t.contiguous().numpy().tobytes()
            header[name] = {"dtype": codes[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
            blobs.append(data)
            offset += len(data)
        head = json.dumps(header).encode()
        with open(self.path("model.safetensors"), "wb") as f:
            f.write(struct.pack("<Q", len(head)) + head + b"".join(blobs))
        reported = stats_json(self.path("model.safetensors"))
        self.assertEqual(reported["format"], "safetensors")
        self.assert_matches(reported, tensors)

    def test_demo_checkpoint_shows_the_poisoned_batchnorm(self):
        path = os.path.join(RUNS, "batchnorm-poisoned/checkpoints/step_00000250.pt")
        reported = stats_json(path)
        module = torch.jit.load(path)  # only the test runs the archive, to know the truth
        expected = dict(module.named_parameters())
        expected.update(dict(module.named_buffers()))
        self.assert_matches(reported, expected)
        running_mean = next(t for t in reported["tensors"] if t["name"] == "bn1.running_mean")
        self.assertEqual(running_mean["nan"], running_mean["numel"])
        table = nanscope("stats", path).stdout
        self.assertIn("bn1.running_mean", table)
        self.assertIn("NaN", table)

    def test_running_var_and_norm_flags(self):
        state = {"bn.running_var": torch.tensor([1.0, 0.0, -2.0]), "bn2.running_var": torch.tensor([1.0, 1e-12]),
                 "bn3.running_var": torch.tensor([1.0, 1e-3]), "big.weight": torch.full((10,), 1e6)}
        torch.save(state, self.path("flags.pt"))
        flags = {t["name"]: t["flags"] for t in stats_json(self.path("flags.pt"))["tensors"]}
        self.assertIn("running_var < 0", flags["bn.running_var"])
        # The same floor as the scan and the BatchNorm view: 1e-12 has collapsed, 1e-3 has not.
        self.assertTrue(any("collapsed" in f for f in flags["bn2.running_var"]), flags["bn2.running_var"])
        self.assertEqual(flags["bn3.running_var"], [])
        self.assertTrue(any(f.startswith("norm") for f in flags["big.weight"]))

    def test_spectral_norm_and_histogram(self):
        w = torch.randn(16, 9)
        torch.save({"w": w}, self.path("spectral.pt"))
        t = stats_json(self.path("spectral.pt"), "--spectral-norm", "--histogram", "10")["tensors"][0]
        self.assertAlmostEqual(t["spectral_norm"], float(torch.linalg.matrix_norm(w.double(), ord=2)), delta=1e-6)
        self.assertEqual(sum(t["histogram"]), w.numel())

    def test_pickle_that_runs_code_is_refused(self):
        marker = self.path("pwned")

        class Exploit:
            def __reduce__(self):
                return (os.system, (f"touch {marker}",))

        torch.save({"w": torch.ones(2), "x": Exploit()}, self.path("exploit.pt"))
        result = nanscope("stats", self.path("exploit.pt"), "--json", expect=2)
        self.assertIn("exploit.pt", result.stderr)
        self.assertIn("system", result.stderr)
        self.assertFalse(os.path.exists(marker))

    def test_truncated_checkpoint_is_an_error_not_a_crash(self):
        torch.save({"w": torch.randn(1000)}, self.path("whole.pt"))
        with open(self.path("whole.pt"), "rb") as f:
            data = f.read()
        for fraction in (0.1, 0.5, 0.9, 0.99):
            with open(self.path("cut.pt"), "wb") as f:
                f.write(data[: int(len(data) * fraction)])
            result = nanscope("stats", self.path("cut.pt"), expect=2)
            self.assertIn("cut.pt", result.stderr)

    def test_damaged_tensor_bytes_are_reported_as_corruption(self):
        weights = torch.arange(1000, dtype=torch.float32)
        torch.save({"w": weights}, self.path("whole.pt"))
        with open(self.path("whole.pt"), "rb") as f:
            data = bytearray(f.read())
        at = bytes(data).find(weights.numpy().tobytes())
        self.assertGreater(at, 0)
        data[at + 2001] ^= 0x04  # one bit of one float: still a plausible number
        with open(self.path("damaged.pt"), "wb") as f:
            f.write(data)
        result = nanscope("stats", self.path("damaged.pt"), expect=2)
        self.assertIn("damaged.pt", result.stderr)
        self.assertIn("data/0", result.stderr)
        self.assertIn("checksum", result.stderr)

    def test_diff(self):
        a = {"w": torch.randn(20, 10), "b": torch.randn(10), "gone": torch.ones(1)}
        b = {"w": a["w"] + 0.01 * torch.randn(20, 10), "b": a["b"].clone(), "new": torch.ones(1)}
        b["b"][3] = math.nan
        torch.save(a, self.path("a.pt"))
        torch.save(b, self.path("b.pt"))
        report = json.loads(nanscope("diff", self.path("a.pt"), self.path("b.pt"), "--json").stdout)
        by_name = {t["name"]: t for t in report["tensors"]}
        want = float((b["w"].double() - a["w"].double()).norm() / a["w"].double().norm())
        self.assertAlmostEqual(by_name["w"]["relative_update"], want, delta=1e-9)
        self.assertEqual(by_name["w"]["became_nonfinite"], 0)
        self.assertEqual(by_name["b"]["became_nonfinite"], 1)
        self.assertEqual(by_name["b"]["relative_update"], 0.0)
        self.assertEqual(report["only_in_a"], ["gone"])
        self.assertEqual(report["only_in_b"], ["new"])
        text = nanscope("diff", self.path("a.pt"), self.path("b.pt")).stdout
        self.assertIn("turned NaN/Inf", text)

    def test_demo_diff_finds_where_batchnorm_went_nan(self):
        before = os.path.join(RUNS, "batchnorm-poisoned/checkpoints/step_00000200.pt")
        after = os.path.join(RUNS, "batchnorm-poisoned/checkpoints/step_00000250.pt")
        report = json.loads(nanscope("diff", before, after, "--json").stdout)
        by_name = {t["name"]: t for t in report["tensors"]}
        self.assertGreater(by_name["bn1.running_mean"]["became_nonfinite"], 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)

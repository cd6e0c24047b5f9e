"""The recorder's tensor statistics: the synchronisation-free path a GPU takes agrees with the CPU
path, NaN and Inf are counted and left out of the ranges, and merged calls equal one big tensor."""
import json
import math
import os
import sys
import unittest

import numpy as np
import torch

from nanscope_recorder import stats


def figures(row):
    """A stats row as a list: a tuple of floats (the CPU short path) or a tensor."""
    return row.tolist() if isinstance(row, torch.Tensor) else list(row)


def reference(values):
    """[min, max, mean, std, nan, inf] computed the slow, obvious way in float64."""
    v = values.double().reshape(-1)
    finite = v[torch.isfinite(v)]
    nan, inf = float(torch.isnan(v).sum()), float(torch.isinf(v).sum())
    if finite.numel() == 0:
        return [math.nan] * 4 + [nan, inf]
    std = finite.std().item() if finite.numel() > 1 else 0.0
    return [finite.min().item(), finite.max().item(), finite.mean().item(), std, nan, inf]


def cases():
    torch.manual_seed(0)
    plain = torch.randn(64, 33) * 3 + 1
    poisoned = plain.clone()
    poisoned[0, 0], poisoned[5, 7], poisoned[9, 9] = math.nan, math.inf, -math.inf
    return {
        "finite": plain,
        "nan and inf": poisoned,
        "all nan": torch.full((4, 4), math.nan),
        "one element": torch.tensor([2.5]),
        "half": (torch.randn(100) * 10).half(),
        "integers": torch.arange(10),
        "large offset": torch.randn(1000) + 1e4,
        # An exploding activation, and a vanishing one: their float32 squares overflow and underflow.
        "huge": torch.randn(1000) * 1e25,
        "tiny": torch.randn(1000) * 1e-25,
        "empty": torch.zeros(0),
        # The CPU short path reads in place through numpy, with a deviation buffer kept between
        # calls: a strided view, float64, two values, and a tensor larger than that buffer.
        "transposed": (torch.randn(40, 70) * 2 - 1).t(),
        "float64": torch.randn(500, dtype=torch.float64) * 2 + 5,
        "two values": torch.tensor([1.0, 4.0]),
        "beyond the kept buffer": torch.randn((1 << 20) + 3) * 0.5 + 2,
    }


class RangeStats(unittest.TestCase):
    def assert_stats(self, got, expected, label):
        np.testing.assert_allclose(np.asarray(got[:6], dtype=np.float64), expected, rtol=1e-4, atol=1e-5,
                                   equal_nan=True, err_msg=label)

    def test_cpu_and_device_paths_agree_with_the_reference(self):
        for label, t in cases().items():
            expected = reference(t)
            self.assert_stats(figures(stats.range_stats(t)), expected, label + " (cpu path)")
            if t.numel():
                x = t.double() if not t.is_floating_point() else t.float()
                self.assert_stats(stats._masked_range_stats(x.reshape(-1)).tolist(), expected,
                                  label + " (device path)")

    def test_cpu_path_leaves_the_tensor_alone_and_serves_threads_at_once(self):
        import threading
        tensors = [torch.randn(3000) * (k + 1) + k for k in range(8)]
        before = [t.clone() for t in tensors]
        results = [None] * len(tensors)

        def measure(k):
            for _ in range(50):
                results[k] = figures(stats.range_stats(tensors[k]))

        threads = [threading.Thread(target=measure, args=(k,)) for k in range(len(tensors))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for k, t in enumerate(tensors):
            self.assertTrue(torch.equal(t, before[k]), "the measured tensor was changed")
            self.assert_stats(results[k], reference(t), "thread %d" % k)

    def test_a_strided_view_gives_exactly_the_figures_of_its_row_order_copy(self):
        """The writer child measures a row-order copy of what the training process would measure
        in place: the two must agree to the bit, or a column's figures would depend on which
        side measured them that step."""
        from nanscope_recorder import host_stats
        torch.manual_seed(1)
        for label, view in (("transposed", (torch.randn(70, 40) * 3 + 1).t()),
                            ("channels last", torch.randn(4, 8, 5, 5).to(memory_format=torch.channels_last)),
                            ("with NaN", torch.where(torch.rand(30, 20) < 0.1, torch.tensor(float("nan")),
                                                     torch.randn(30, 20)).t())):
            copy = view.contiguous()
            self.assertEqual(list(host_stats.range_figures(view.numpy())), list(host_stats.range_figures(copy.numpy())),
                             label)

    def test_merged_calls_equal_one_tensor(self):
        parts = [torch.randn(50) * 2, torch.randn(70) + 3, torch.tensor([math.nan, 1.0, math.inf])]
        merged = stats.merge_range_stats([figures(stats.range_stats(p)) for p in parts])
        self.assert_stats(merged, reference(torch.cat(parts)), "merged")

    def test_the_shared_merge_cases_as_the_cpp_side(self):
        """tests/data/moment_merge_cases.json: the parts merged give the whole's mean and sample
        deviation, as core/tensor/Moments.h does (tests/core/MomentsTest.cpp)."""
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "moment_merge_cases.json")) as f:
            cases = json.load(f)["cases"]
        self.assertGreaterEqual(len(cases), 5)
        for case in cases:
            parts = [torch.tensor(p, dtype=torch.float64) for p in case["parts"]]
            merged = stats.merge_range_stats([figures(stats.range_stats(p)) for p in parts])
            whole = np.concatenate([np.asarray(p, dtype=np.float64) for p in case["parts"]])
            self.assertAlmostEqual(merged[2], whole.mean(), delta=1e-12 * abs(whole.mean()) + 1e-300, msg=case["name"])
            expected_std = whole.std(ddof=1) if whole.size > 1 else 0.0
            self.assertAlmostEqual(merged[3], expected_std, delta=1e-7 * expected_std, msg=case["name"])

    def test_finite_min_max_and_norms(self):
        t = torch.tensor([math.nan, -2.0, 5.0, math.inf])
        lo, hi = stats.finite_min_max(t)
        self.assertEqual((lo.item(), hi.item()), (-2.0, 5.0))
        lo, hi = stats.finite_min_max(torch.full((3,), math.nan))
        self.assertTrue(math.isnan(lo.item()) and math.isnan(hi.item()))
        tensors = [torch.randn(3, 4), torch.randn(7), torch.randn(2).half()]
        norms = stats.tensor_norms(tensors)
        np.testing.assert_allclose(norms.numpy(), [t.float().norm().item() for t in tensors], rtol=1e-3)
        self.assertTrue(math.isnan(stats.tensor_norms([torch.tensor([1.0, math.nan])])[0].item()))

    def test_running_statistics_measured_flat_give_each_layers_own_row(self):
        """The /buffers row is measured on one flat copy of every layer's running mean and
        variance (step_readback, and the writer child on its copy): split back into layers, each
        row must be the row of that layer's own buffers, a poisoned one and layers of other sizes
        among them."""
        from nanscope_recorder import host_stats
        torch.manual_seed(2)
        layers = [(torch.randn(5), torch.rand(5) + 0.1), (torch.randn(3), torch.rand(3) + 0.1),
                  (torch.randn(8), torch.rand(8) + 0.1)]
        layers[1][1][2] = math.nan
        layers[2][0][0] = math.inf
        flat = torch.cat([t for pair in layers for t in pair]).numpy()
        sizes = [t.numel() for pair in layers for t in pair]
        rows = host_stats.flat_buffer_figures(flat, sizes)
        self.assertEqual(len(rows), 3)
        for k, (mean, var) in enumerate(layers):
            self.assertEqual(list(rows[k]), figures(stats.buffer_stats(mean, var)), "layer %d" % k)
        self.assertEqual([r[4] for r in rows], [0.0, 1.0, 1.0])

    def test_buffer_rows_of_healthy_and_poisoned_running_statistics(self):
        """The /buffers row: a healthy layer's ranges exactly; a poisoned one's over its finite
        values, with every NaN and Inf of both buffers counted (what BatchNorm health reads)."""
        mean, var = torch.tensor([-0.5, 0.25, 2.0]), torch.tensor([0.125, 4.0, 1.5])
        self.assertEqual(figures(stats.buffer_stats(mean, var)), [-0.5, 2.0, 0.125, 4.0, 0.0])
        var[0], mean[2] = math.nan, math.inf
        row = figures(stats.buffer_stats(mean, var))
        self.assertEqual(row[:2], [-0.5, 0.25])
        self.assertAlmostEqual(row[2], 1.5, places=6)
        self.assertAlmostEqual(row[3], 4.0, places=6)
        self.assertEqual(row[4], 2.0)
        row = figures(stats.buffer_stats(mean, torch.full((3,), math.nan)))
        self.assertTrue(math.isnan(row[2]) and math.isnan(row[3]), "no finite variance: NaN, not a number")
        self.assertEqual(row[4], 4.0)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)

"""The recorder's snapshot of the normalisation layers' running statistics (buffer_snapshot.py): what
a skipped step puts back and an incident's checkpoint holds must be the buffers exactly as they were
before the step's forward, bit for bit, however the buffers are laid out and when they change."""
import struct
import sys
import unittest

import torch

from nanscope_recorder.buffer_snapshot import BufferSnapshot


def bits(t):
    return t.detach().reshape(-1).view(torch.int32 if t.element_size() == 4 else
                                       torch.int64 if t.element_size() == 8 else torch.int16).tolist()


def model():
    torch.manual_seed(0)
    # Buffers of three dtypes (float32, int64, float64): three flat copies.
    return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.BatchNorm1d(8), torch.nn.Linear(8, 5),
                               torch.nn.BatchNorm1d(5).double())


def buffers(m):
    return [(name, t) for name, t in m.named_buffers()]


class BufferSnapshotTest(unittest.TestCase):
    def test_a_step_that_poisons_the_buffers_is_put_back_bit_for_bit(self):
        m = model()
        # A NaN with a payload: a copy that went through arithmetic would not keep it.
        payload = struct.unpack("<f", struct.pack("<I", 0x7fc01234))[0]
        m[1].running_var[3] = payload
        before = {name: bits(t) for name, t in buffers(m)}
        snapshot = BufferSnapshot()
        snapshot.take(buffers(m))
        m.train()
        m[:2](torch.randn(4, 6) * 1e30)  # float32 overflow: the running statistics go non-finite
        m[3].running_mean.fill_(float("inf"))
        self.assertNotEqual({name: bits(t) for name, t in buffers(m)}, before)
        snapshot.restore()
        self.assertEqual({name: bits(t) for name, t in buffers(m)}, before)

    def test_copies_stay_as_taken_after_the_next_snapshot(self):
        m = model()
        snapshot = BufferSnapshot()
        snapshot.take(buffers(m))
        copies = snapshot.copies()
        self.assertEqual(set(copies), {name for name, _ in buffers(m)})
        expected = {name: bits(t) for name, t in buffers(m)}
        m.train()
        m[:2](torch.randn(4, 6))
        snapshot.take(buffers(m))
        self.assertEqual({name: bits(t) for name, t in copies.items()}, expected)
        self.assertEqual(copies["1.num_batches_tracked"].dtype, torch.int64)
        self.assertEqual(copies["3.running_mean"].dtype, torch.float64)
        self.assertEqual(tuple(copies["1.num_batches_tracked"].shape), ())

    def test_a_buffer_replaced_between_steps_is_followed(self):
        m = model()
        snapshot = BufferSnapshot()
        snapshot.take(buffers(m))
        m[1].running_mean = torch.full((8,), 7.0)  # a new tensor, as load code may assign
        snapshot.take(buffers(m))
        m[1].running_mean.zero_()
        snapshot.restore()
        self.assertTrue(torch.equal(m[1].running_mean, torch.full((8,), 7.0)))

    def test_strided_buffers_and_none(self):
        base = torch.arange(12.0).reshape(3, 4)
        strided = base.t()  # not contiguous: no flat view of it exists
        snapshot = BufferSnapshot()
        snapshot.take([("w", strided)])
        base.fill_(-1.0)
        snapshot.restore()
        self.assertTrue(torch.equal(strided, torch.arange(12.0).reshape(3, 4).t()))
        snapshot.clear()
        self.assertEqual(snapshot.copies(), {})
        snapshot.restore()  # nothing taken: nothing to do
        self.assertTrue(torch.equal(strided, torch.arange(12.0).reshape(3, 4).t()))


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)

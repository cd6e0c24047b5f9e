"""The shared ring through which the training process hands CPU values to the run.h5 writer child
(value_ring.py): values come out bit for bit as they went in, whatever their layout; room not yet
released is never overwritten; a full ring or an oversized array says no instead of waiting; and
a process forked from the training process cannot put values into its parent's ring."""
import os
import sys
import unittest

import numpy as np

from nanscope_recorder.value_ring import ValueRing, ValueRingReader


def same_bits(a, b):
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


class ValueRingTest(unittest.TestCase):
    def ring(self, capacity):
        ring = ValueRing.create(capacity)
        if ring is None:
            self.skipTest("no memfd on this system: the recorder measures in process there")
        reader = ValueRingReader(os.dup(ring.fd), ring.capacity)
        self.addCleanup(ring.close)
        self.addCleanup(reader.close)
        return ring, reader

    def test_values_come_out_bit_for_bit_whatever_their_layout(self):
        ring, reader = self.ring(1 << 20)
        rng = np.random.default_rng(0)
        payload_nan = np.array([0x7FC00001, 0xFFC12345], dtype=np.uint32).view(np.float32)
        arrays = {
            "float32 matrix": rng.standard_normal((64, 33)).astype(np.float32),
            "transposed view": rng.standard_normal((40, 70)).astype(np.float32).T,
            "every other row": rng.standard_normal((30, 8))[::2],
            "int64 labels": rng.integers(-5, 5, size=77),
            "booleans": rng.integers(0, 2, size=19).astype(bool),
            "NaN payloads and infinities": np.concatenate([payload_nan, np.array([np.inf, -np.inf, -0.0], np.float32)]),
        }
        placed = {label: ring.put(values) for label, values in arrays.items()}
        for label, values in arrays.items():
            self.assertIsNotNone(placed[label], label)
            self.assertTrue(same_bits(reader.values(placed[label].where), values), label)
            self.assertFalse(reader.values(placed[label].where).flags.writeable, label)

    def test_unreleased_room_is_never_overwritten_and_released_room_is_reused(self):
        ring, reader = self.ring(4096)
        blocks = [np.full(128, k, dtype=np.float64) for k in range(6)]  # 1 KiB each: four fill the ring
        placed = [ring.put(b) for b in blocks[:4]]
        self.assertTrue(all(p is not None for p in placed))
        self.assertIsNone(ring.put(blocks[4]), "a full ring says no rather than overwrite unread values")
        first_end = placed[1].where[0]  # where the second block starts: the first one's room ends there
        reader.release(first_end - 64)  # the header: positions count the ring's bytes, not the mapping's
        again = ring.put(blocks[4])
        self.assertIsNotNone(again, "the first block's room, once released, takes the next")
        self.assertEqual(again.where[0], placed[0].where[0])
        self.assertIsNone(ring.put(blocks[5]), "the second block is not released yet")
        for k in (1, 2, 3):
            self.assertTrue(same_bits(reader.values(placed[k].where), blocks[k]), "block %d was overwritten" % k)
        self.assertTrue(same_bits(reader.values(again.where), blocks[4]))
        reader.release(ring.head)
        self.assertIsNotNone(ring.put(blocks[5]))

    def test_an_array_that_would_crowd_the_ring_or_an_empty_one_is_measured_elsewhere(self):
        ring, _ = self.ring(4096)
        self.assertIsNone(ring.put(np.zeros(1024 // 4 + 1, dtype=np.float32)), "over a quarter of the ring")
        self.assertIsNotNone(ring.put(np.zeros(1024 // 4, dtype=np.float32)))
        self.assertIsNone(ring.put(np.zeros(0, dtype=np.float32)))

    def test_a_forked_process_cannot_put_values_into_its_parents_ring(self):
        if not hasattr(os, "fork"):
            self.skipTest("no fork here")
        ring, reader = self.ring(1 << 16)
        kept = ring.put(np.arange(16, dtype=np.float32))
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the forked copy: a DataLoader worker, say
            try:
                os.write(write_end, b"none" if ring.put(np.full(16, -1.0, dtype=np.float32)) is None else b"put")
            finally:
                os._exit(0)
        os.close(write_end)
        answer = os.read(read_end, 16)
        os.close(read_end)
        os.waitpid(pid, 0)
        self.assertEqual(answer, b"none")
        self.assertTrue(same_bits(reader.values(kept.where), np.arange(16, dtype=np.float32)))
        self.assertIsNotNone(ring.put(np.ones(4, dtype=np.float32)), "the parent's ring still works")


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)

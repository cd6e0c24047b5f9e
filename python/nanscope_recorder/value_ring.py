"""Values handed from the training process to the run.h5 writer child through shared memory, so
that the child, on another core, computes their statistics (host_stats) while training goes on.

Why: on the CPU, measuring a logged module output or input costs the training step about 50 us
(six numpy passes, each a library call slowed by the caches the step's matrix products left cold)
against about 15 us to copy it; the normalisation layers' running statistics cost about ten calls
a layer against one copy for all of them. bench_guard's MLP logs eight tensors a step: the ring
took its Python recorder from 1.050-1.057x to 1.041-1.044x of a bare step (same machine, runs
alternated).

How:
- One shared mapping (an anonymous memfd the child inherits), used as a ring. The training
  process copies values at the ring's head (put) and hands the child a note of where they are
  (Staged) in the step's message; the child reads them there.
- The child releases the ring up to a position the training process gives it with each flush,
  once it has handled everything before that flush: the position the last finished step committed
  (ChildRunFile.commit_staged, once the step's rows are queued), which covers that step's values
  and any left unused (a row that was dropped). A flush in the middle of a step (a checkpoint's, a
  note's) so never frees the values of the step under way, whose row is not sent yet.
- The training process never waits for the child: when the ring has no room (the child is behind,
  or an array is larger than a quarter of the ring), put returns None and the caller computes the
  figures itself, with the same code. Nothing is lost or late either way; only where the work runs
  moves.
- The release position sits in the mapping's first 8 bytes, written only by the child, after the
  flush's system calls that follow its reads of the values it releases; read by the training
  process before it reuses their room.

numpy, mmap and os only: the child imports this module and never torch.
"""
import mmap
import os
import threading
import weakref

import numpy as np

# Room for bench_guard's MLP about 20 steps ahead of the child; a CPU model whose logged values
# outgrow it is measured in the training process, as without a ring.
DEFAULT_CAPACITY = 16 << 20
_HEADER = 64      # the release position, then padding to a cache line
_ALIGN = 64


class Staged:
    """Where a tensor's values sit in the ring: what the child needs to read them. `where`: (offset
    in the mapping, numpy dtype string, shape), a plain tuple so that the step's message pickles fast."""

    __slots__ = ("where",)

    def __init__(self, where):
        self.where = where

    def __repr__(self):
        return "Staged%r" % (self.where,)


def _map_whole(fd, size):
    """The shared mapping with every page in place now (MAP_POPULATE where Linux has it): else the
    first pass of the ring faults its pages in one by one, about 200 faults a step on bench_guard's
    MLP for its first 20 steps."""
    populate = getattr(mmap, "MAP_POPULATE", 0)
    return mmap.mmap(fd, size, flags=mmap.MAP_SHARED | populate)


def _close_mapping(mapping):
    """Unmaps now, or, while a view of it is still alive somewhere (an interrupted measure's
    traceback), leaves that to the view's end: never an error that would stop run.h5 closing."""
    try:
        mapping.close()
    except BufferError:
        pass


_rings_of_this_process = weakref.WeakSet()


def _after_fork_in_child():
    for ring in list(_rings_of_this_process):
        ring._forget_in_forked_child()
    _rings_of_this_process.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class StagedBuffers:
    """Every normalisation layer's running statistics, staged as one array (mean 0, var 0, mean 1,
    ...; `sizes` their lengths): the /buffers row the child computes (host_stats.flat_buffer_figures)."""

    __slots__ = ("staged", "sizes")

    def __init__(self, staged, sizes):
        self.staged = staged
        self.sizes = sizes


class ValueRing:
    """The training process's side: create() makes the mapping; fd is what the child inherits."""

    def __init__(self, fd, capacity, mapping):
        self.fd = fd
        self.capacity = capacity
        self._map = mapping
        self._released = np.ndarray((1,), dtype=np.uint64, buffer=mapping, offset=0)
        self._head = 0  # bytes handed out so far, counting room skipped at the ring's end
        self._limit = capacity  # head may grow to here: the last release read, plus the capacity
        self._lock = threading.Lock()  # a hook may run on another thread
        # A process forked from this one (a DataLoader worker) shares the mapping: were it to put
        # values there, it would overwrite what the child is about to read. Checked at the fork,
        # not at each put (getpid is a system call).
        _rings_of_this_process.add(self)

    @classmethod
    def create(cls, capacity=None):
        """A new ring (DEFAULT_CAPACITY bytes unless told), or None where shared memory cannot be
        had (no memfd on this system)."""
        capacity = int(capacity or DEFAULT_CAPACITY)
        if not hasattr(os, "memfd_create"):
            return None
        try:
            # Close-on-exec: only the writer child gets it (Popen's pass_fds), not whatever else
            # another thread of the training process starts meanwhile.
            fd = os.memfd_create("nanscope-values", getattr(os, "MFD_CLOEXEC", 0))
        except OSError:
            return None
        try:
            os.ftruncate(fd, _HEADER + capacity)
            mapping = _map_whole(fd, _HEADER + capacity)
        except (OSError, ValueError):
            os.close(fd)
            return None
        return cls(fd, capacity, mapping)

    @property
    def head(self):
        """The position the child may release up to once it has handled what was sent so far."""
        return self._head

    def put(self, values):
        """Copies a numpy array into the ring: its Staged note, or None when there is no room."""
        room = -(-values.nbytes // _ALIGN) * _ALIGN
        if values.nbytes == 0 or room > self.capacity // 4:
            return None
        with self._lock:
            if self._map is None:  # closed, or this process is a fork of the ring's owner
                return None
            start = self._head
            offset = start % self.capacity
            if offset + room > self.capacity:  # no room before the end: start again at the beginning
                start += self.capacity - offset
                offset = 0
            end = start + room
            if end > self._limit:
                # Past what the last look at the release allowed: look again (one read of shared
                # memory, so not at every put).
                self._limit = int(self._released[0]) + self.capacity
                if end > self._limit:
                    return None  # the child has not read that far yet
            dest = np.ndarray(values.shape, dtype=values.dtype, buffer=self._map, offset=_HEADER + offset)
            try:
                np.copyto(dest, values, casting="no")
            finally:
                del dest  # an interrupted copy's traceback must not keep the mapping from closing
            self._head = end
        return Staged((_HEADER + offset, values.dtype.str, values.shape))

    def close(self):
        _rings_of_this_process.discard(self)
        with self._lock:
            if self._map is not None:
                del self._released
                _close_mapping(self._map)
                self._map = None
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def _forget_in_forked_child(self):
        """In a forked process: this ring is its parent's. Nothing is put any more; the mapping is
        left to be unmapped with the process (closing it would be no safer). A new lock: the fork
        may have copied the old one held by another thread of the parent."""
        self._lock = threading.Lock()
        self._map = None

    def close_fd(self):
        """The child has inherited the descriptor; the mapping stays."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class ValueRingReader:
    """The child's side of the ring."""

    def __init__(self, fd, capacity):
        try:
            self._map = _map_whole(fd, _HEADER + capacity)
        finally:
            os.close(fd)
        self._released = np.ndarray((1,), dtype=np.uint64, buffer=self._map, offset=0)

    def values(self, where):
        """A read-only view of the values a Staged note's `where` places (valid until released)."""
        offset, dtype, shape = where
        view = np.ndarray(shape, dtype=np.dtype(dtype), buffer=self._map, offset=offset)
        view.flags.writeable = False
        return view

    def release(self, position):
        """Everything before `position` has been read: the training process may reuse its room."""
        if position > int(self._released[0]):
            self._released[0] = position

    def close(self):
        del self._released
        _close_mapping(self._map)

"""The normalisation layers' running statistics as they were before a step's forward changed them:
put back when the step is skipped, and written into the checkpoint of an incident at that step.

Taken every step, so taken cheaply: each dtype and device's buffers are copied with one torch.cat
into a flat tensor kept from the last step, not cloned one by one. In a training step each torch
call costs 10-15 us (cold caches after the step's matrix products); a ResNet-50 has 159 such
buffers. The copies are exact (a copy kernel: NaN payloads and all). The recorder takes a second one after the
forward, of the running means and variances alone, to measure the /buffers row from (flat())."""
import torch

_BUFFER_NAMES = ("running_mean", "running_var", "num_batches_tracked")


def norm_buffers(norms):
    """(name, tensor) of the running statistics of `norms` ([(module name, normalisation module)])."""
    for name, m in norms:
        for b in _BUFFER_NAMES:
            t = getattr(m, b, None)
            if isinstance(t, torch.Tensor):
                yield "%s.%s" % (name, b) if name else b, t


class BufferSnapshot:
    def __init__(self):
        self._layout_key = None
        self._groups = []  # [(flat copy, [1-D views of the live buffers])] per dtype and device
        self._entries = []  # [(name, live buffer, group index, offset)]
        self._clones = None  # [(name, live, copy)] when the buffers cannot be viewed flat
        self._sizes = ()  # each buffer's length, in the order given
        self.taken = False

    def take(self, named_buffers):
        """Copies `named_buffers` ([(name, tensor)]) as they are now."""
        named_buffers = list(named_buffers)
        with torch.no_grad():
            key = tuple((id(t), t.data_ptr(), t.numel()) for _, t in named_buffers)
            if key != self._layout_key:
                self._lay_out(named_buffers)
                self._layout_key = key
            if self._clones is not None:
                self._clones = [(name, t, t.detach().clone()) for name, t in named_buffers]
            else:
                for flat, views in self._groups:
                    torch.cat(views, out=flat)
        self.taken = bool(named_buffers)

    def clear(self):
        self.taken = False

    def flat(self):
        """The copies as taken, as one flat tensor in the order given, with each buffer's length;
        None unless every buffer went into the same flat copy (one dtype and device, contiguous)."""
        if not self.taken or self._clones is not None or len(self._groups) != 1:
            return None
        return self._groups[0][0], self._sizes

    def copies(self):
        """{name: a copy of the buffer as taken}, independent of later steps' snapshots."""
        if not self.taken:
            return {}
        return {name: copy.clone() for name, _, copy in self._pairs()}

    def restore(self):
        """Puts every buffer back as taken."""
        if not self.taken:
            return
        with torch.no_grad():
            for _, live, copy in self._pairs():
                live.copy_(copy)

    def _pairs(self):
        if self._clones is not None:
            return self._clones
        return [(name, live, self._groups[g][0][offset:offset + live.numel()].view(live.shape))
                for name, live, g, offset in self._entries]

    def _lay_out(self, named_buffers):
        self._groups, self._entries, self._clones = [], [], None
        if not all(t.is_contiguous() for _, t in named_buffers):
            self._clones = []  # a strided buffer's reshape would be a copy, not a view: clone each
            return
        index = {}
        for name, t in named_buffers:
            where = (t.dtype, t.device)
            if where not in index:
                index[where] = len(self._groups)
                self._groups.append([None, [], 0])
            group = self._groups[index[where]]
            self._entries.append((name, t, index[where], group[2]))
            group[1].append(t.detach().reshape(-1))
            group[2] += t.numel()
        self._groups = [(torch.empty(size, dtype=views[0].dtype, device=views[0].device), views)
                        for _, views, size in self._groups]
        self._sizes = tuple(t.numel() for _, t in named_buffers)

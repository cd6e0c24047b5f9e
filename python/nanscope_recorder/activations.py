"""The recorder's forward hooks on the modules whose outputs it logs (/activations): armed for a
logged step only, each call's output range measured on the device (stats.range_stats) or handed to
the run.h5 writer child to measure (a CPU output: recorder's _measure), and a module
called twice in one forward merged into its one column. The columns are the modules that ran at the
first logged step; at a later step where one of them did not run (an expert no token was routed
to), its cells say that no element was measured: min, max, mean and std NaN, nan and inf 0, the
figures of an empty output (readers skip such a cell: it is no non-finite value). The C++ Guard's
counterpart is core/torch/GuardRunLog's activationsRow."""
import torch

from . import stats


def _tensors_of(value):
    """The floating-point tensors in a module output (a tensor, or tuples/lists/dicts of them)."""
    if isinstance(value, torch.Tensor):
        return [value] if value.is_floating_point() or value.is_complex() else []
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors_of(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors_of(v)]
    return []


class ActivationHooks:
    def __init__(self, candidates, on_failure, measure=stats.range_stats):
        self.candidates = candidates  # [(name, module)] whose outputs may be logged
        # tensor -> its range statistics, or a note of where the writer child will compute them
        self._measure = measure
        self.columns = None           # indices into candidates, fixed at the first logged step
        self._calls = None            # this step's (candidate index, range part); None when not armed
        self._failed = False
        self._handles = []
        self._attached = None         # the candidate indices whose hooks are attached
        self._recording = False
        self._on_failure = on_failure  # called with (module name, error) when a hook fails

    def due(self, step, every):
        """Step `step` logs activations: the first one that may, then every `every` steps (0: never)."""
        if every <= 0 or not self.candidates:
            return False
        return self.columns is None or step % every == 0

    def arm(self):
        """Records this step's outputs. The hooks stay attached from the last logged step when they
        are the same modules' (every step logged: no attaching and removing each step)."""
        self._calls = []
        self._failed = False
        self._recording = True
        indices = list(range(len(self.candidates)) if self.columns is None else self.columns)
        if indices != self._attached:
            self.disarm()
            self._handles = [self.candidates[i][1].register_forward_hook(self._hook(i)) for i in indices]
            self._attached = indices

    def stop(self):
        """The step's forward and backward are over: the hooks record nothing until the next arm
        (an evaluation pass between steps is not logged)."""
        self._recording = False

    def disarm(self):
        """Removes the hooks: a step that logs no activations pays nothing for them."""
        for handle in self._handles:
            handle.remove()
        self._handles = []
        self._attached = None

    def captured(self):
        """The step's outputs were all measured: it was armed and no hook failed."""
        return self._calls is not None and not self._failed

    def take_calls(self):
        """The step's measured calls (none when a hook failed); the hooks start over at the next arm."""
        calls = (self._calls or []) if not self._failed else []
        self._calls = None
        return calls

    def fix_columns(self, fired):
        """The first logged step fixes the columns: the candidates that ran (indices in `fired`)."""
        self.columns = [i for i in range(len(self.candidates)) if i in fired]
        return [self.candidates[i] for i in self.columns]

    def row_parts(self, calls):
        """A step's calls grouped by column, as a table's append_ranges takes them (each column's
        calls are merged into its figures; a column that did not run has none, merged into the
        figures of no element), and the names of the columns that did not run."""
        by_module = {}
        for index, part in calls:
            by_module.setdefault(index, []).append(part)
        missing = [self.candidates[i][0] for i in self.columns if i not in by_module]
        return [by_module.get(i, []) for i in self.columns], missing

    def _hook(self, index):
        def record_output(module, inputs, output):
            if not self._recording:
                return
            try:
                # The measure reads detached values: no autograd graph, without a no_grad block.
                for t in _tensors_of(output):
                    self._calls.append((index, self._measure(t)))
            except Exception as error:  # noqa: BLE001 - measuring must never stop the training step
                self._failed = True
                self._on_failure(self.candidates[index][0], error)
        return record_output

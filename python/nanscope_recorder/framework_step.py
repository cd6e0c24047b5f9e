"""What the framework callbacks (hf.py, lightning.py) share: one optimizer step seen as the
micro-batches a framework runs for it, the batch as the model received it, and the rule that a
callback which fails to measure warns once and never stops the training."""
import math
import os
import warnings

import torch

from .run_file import log_path


def refuse_existing_run(run_dir):
    """A callback never writes over a run: it refuses at construction, before any training."""
    if os.path.exists(log_path(run_dir)):
        raise FileExistsError("%s already exists: nanscope does not write over a recorded run; give the callback "
                              "a new run directory" % log_path(run_dir))


# The Recorder options a framework callback decides itself: what its loop skips, how checkpoints
# replay, and the defences that would change the training it observes.
CALLBACK_OWN_OPTIONS = ("skipped_steps", "checkpoint_form", "model_factory", "batch_call", "rollback_after",
                        "restore_buffers_on_skip")


def refuse_own_options(options):
    for own in CALLBACK_OWN_OPTIONS:
        if own in options:
            raise TypeError("NanscopeCallback sets %s itself (the framework's loop decides what it skips)" % own)


def model_batch(args, kwargs):
    """The batch as the model received it: its keyword arguments (tensors, numbers, strings,
    None), or its positional ones when it took no keyword argument."""
    kept = {k: v for k, v in kwargs.items() if v is None or isinstance(v, (torch.Tensor, int, float, bool, str))}
    if kept or not args:
        return kept
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    return tensors[0] if len(tensors) == 1 else tensors


def output_loss(output):
    """The loss a model returned (ModelOutput.loss, a dict's "loss"), or None."""
    loss = output.get("loss") if isinstance(output, dict) else getattr(output, "loss", None)
    return loss if isinstance(loss, torch.Tensor) and loss.numel() == 1 else None


class MicroBatches:
    """The micro-batches of one optimizer step: their losses and whether the gradients summed so
    far had gone non-finite after each, kept on the device until the step ends (one read)."""

    def __init__(self):
        self.batches = []
        self.losses = []
        self._gradient_flags = []

    def __len__(self):
        return len(self.batches)

    def add(self, batch):
        self.batches.append(batch)

    def add_loss(self, loss):
        self.losses.append(loss.detach().float().reshape(()))

    def note_gradients(self, parameters):
        """After a micro-batch's backward: a device flag, whether any gradient so far is not finite."""
        grads = [p.grad for p in parameters if p.grad is not None]
        if not grads:
            return
        norms = torch._foreach_norm(grads)
        self._gradient_flags.append((len(self.batches) - 1, ~torch.isfinite(torch.stack([n.float() for n in norms]).sum())))

    def step_loss(self, summed):
        """The step's loss: the micro-batch losses summed (each already divided by the step's item
        count, as transformers does with num_items_in_batch) or averaged."""
        if not self.losses:
            return None
        stacked = torch.stack(self.losses)
        return stacked.sum() if summed else stacked.mean()

    def end_step(self, recorder, accumulating, summed, lr=None, loss_scale=None, gradient_scale=None):
        """Ends the recorder's step on these micro-batches: their loss (see step_loss) and, with
        gradient accumulation, `bad_microbatch`: the first that went non-finite (-1: none), whose
        batch is then the one saved."""
        scalars = {}
        if accumulating:
            bad = self.first_bad()
            scalars["bad_microbatch"] = float(bad)
            if bad > 0:
                recorder.use_batch(self.batches[bad])
        return recorder.end_step(self.step_loss(summed), lr=lr, loss_scale=loss_scale, gradient_scale=gradient_scale,
                                 **scalars)

    def first_bad(self):
        """The index of the first micro-batch whose loss, or the gradients summed after it, went
        non-finite; -1 when none did."""
        for index, loss in enumerate(self.losses):
            if not math.isfinite(float(loss)):
                loss_bad = index
                break
        else:
            loss_bad = -1
        grad_bad = next((index for index, flag in self._gradient_flags if bool(flag)), -1)
        candidates = [i for i in (loss_bad, grad_bad) if i >= 0]
        return min(candidates) if candidates else -1


class WarnOnce:
    """A callback's measuring failed: one warning and one note in the run, then recording stops
    and training goes on untouched."""

    def __init__(self, name):
        self.name = name
        self.failed = False

    def fail(self, recorder, what, error):
        if self.failed:
            return
        self.failed = True
        message = ("%s: recording stopped at %s (%s: %s); the training goes on unrecorded"
                   % (self.name, what, type(error).__name__, error))
        warnings.warn("nanscope: " + message, RuntimeWarning, stacklevel=3)
        if recorder is not None:
            try:
                recorder.abandon_step()
                recorder.note(message)
                recorder.close()
            except Exception:  # noqa: BLE001 - already failing: the warning above is the report
                pass

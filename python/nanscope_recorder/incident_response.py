"""What the recorder does when a step goes wrong (a mixin of Recorder, recorder.py): the events and
the warning of a non-finite step, the defences that change training when asked for (rollback to
the last good state, BatchNorm buffers put back), and incident capture (the checkpoint, the batch
and the ring's batches before it, and a healthy neighbour for triage). The state it works on is
the Recorder's own."""
import math
import os
import warnings

import numpy as np

from .capture import FIRST_NONFINITE, CapturePolicy
from .checkpoints import save_batch, step_file_name
from .defences import LastGoodState, UnsupportedOptimizer, check_optimizer
from .run_format import event_text


class IncidentResponse:
    """Recorder's handling of non-finite steps and incidents."""

    def _on_nonfinite(self, step, loss_value, grad_nonfinite, skipped, reason=None):
        self._skipped_streak += 1
        if reason is not None:
            pass  # the caller's reason (another rank's step was bad): this rank's values were finite
        elif not math.isfinite(loss_value):
            self._event(step, "nonfinite_loss", event_text("nonfinite_loss", loss=float(loss_value)))
            reason = event_text("reason_nonfinite_loss", loss=float(loss_value))
        else:
            bad = [self._params[i][0] for i in np.flatnonzero(grad_nonfinite)]
            if bad:
                reason = event_text("reason_nonfinite_gradients", count=len(bad), first=bad[0])
            else:
                reason = event_text("reason_norm_overflow")
        if skipped:
            self._event(step, "skipped_step", event_text("skipped_step", reason=reason))
        elif math.isfinite(loss_value):
            # The framework applied this update: its gradients went into the weights.
            self._event(step, "note", event_text("update_applied", reason=reason))
        capture = self._captures.decide(finite=False, spike=False)
        if capture is not None:
            self._capture_incident(step, reason, capture)
        if self.warn_after_skipped and self._skipped_streak == self.warn_after_skipped:
            warnings.warn("nanscope: %d consecutive %s (up to step %d, %s); see %s"
                          % (self._skipped_streak, "steps skipped" if skipped else "non-finite steps", step, reason,
                             self.run_dir), RuntimeWarning, stacklevel=3)
        if self._last_good is not None and self._skipped_streak >= self.rollback_after:
            self._roll_back(step)
        elif self.restore_buffers_on_skip and self._buffer_snapshot.taken:
            self._buffer_snapshot.restore()
            self._event(step, "buffers_restored",
                        event_text("buffers_restored", layers=[name for name, _ in self._norms], step=step))

    def _rollback_state(self, optimizer, allow_unguarded):
        """The in-memory last good state when rollback is on and the optimizer allows it."""
        if self.rollback_after <= 0:
            return None
        if not 0 < self.rollback_lr_factor <= 1:
            raise ValueError("rollback_lr_factor must be in (0, 1], not %g" % self.rollback_lr_factor)
        try:
            if optimizer is None:
                raise UnsupportedOptimizer("rollback_after=%d needs the optimizer (Recorder(..., optimizer=opt)) "
                                           "to restore its state" % self.rollback_after)
            check_optimizer(optimizer)
        except UnsupportedOptimizer as error:
            if not allow_unguarded:
                raise
            self._unguarded_note = "rollback is off: %s (allow_unguarded=True)" % error
            warnings.warn("nanscope: " + self._unguarded_note, RuntimeWarning, stacklevel=3)
            return None
        return LastGoodState(self.model, optimizer)

    def _keep_good_state(self, step):
        """The state a step starts from after good steps, every snapshot_every steps: a candidate
        that end_step keeps only when the step comes out finite (LastGoodState)."""
        last = self._last_good
        if last is None:
            return
        if last.step is None or step - last.step >= self.snapshot_every:
            last.take(step)

    def _roll_back(self, step):
        if self._last_good.step is None:
            if "rollback" not in self._warned:
                self._warned.add("rollback")
                self._event(step, "note", "no good state to roll back to: no step was good before step %d" % step)
            return
        streak = self._skipped_streak
        old, new = self._last_good.restore(self.rollback_lr_factor)
        self.lr_scale *= self.rollback_lr_factor
        self._skipped_streak = 0
        if self._ring is not None:
            self._ring.clear()  # its saved state is no longer what the next batches run on
        self._event(step, "rollback", event_text("rollback", good_step=self._last_good.step, streak=streak, step=step,
                                                 factor=float(self.rollback_lr_factor),
                                                 lrs=[(float(a), float(b)) for a, b in zip(old, new)]))

    def _capture_incident(self, step, reason, capture):
        """Writes checkpoint N (as step N's forward found it) and batch N, and, from the ring, the
        batches before step N and the state before them (the ring at most once every ring size
        steps, except for the run's first non-finite step, which is always captured whole); then
        an incident_capture event saying what was written. Which steps come here is the capture
        policy's call (capture.py)."""
        if not self._checkpoint_saved:
            self._save_checkpoint(step, overrides=self._buffer_snapshot.copies())
        written = []
        if not os.path.exists(os.path.join(self._batch_dir, step_file_name(step))):
            path = save_batch(self._batch_dir, step, self._inputs, self._targets, self.loss_name, self.batch_call)
            self._event(step, "batch_saved", os.path.relpath(path, self.run_dir))
            written.append(step)
        ring = self._ring
        captured = None
        if ring is not None and (capture == FIRST_NONFINITE or self._last_capture is None
                                 or step - self._last_capture >= ring.size):
            captured = ring.capture(step)
        self._last_capture = step
        detail = "checkpoint %d and batch %d" % (step, step)
        if captured is not None:
            anchor_step, anchor_state, batches = captured
            for batch_step, inputs, targets in batches:
                if not os.path.exists(os.path.join(self._batch_dir, step_file_name(batch_step))):
                    save_batch(self._batch_dir, batch_step, inputs, targets, self.loss_name, self.batch_call)
                    written.append(batch_step)
            checkpoint = "checkpoint %d was already saved" % anchor_step
            if not os.path.exists(os.path.join(self._checkpoint_dir, step_file_name(anchor_step))):
                anchor_inputs = next((x for s, x, _ in batches if s == anchor_step), None)
                self._save_checkpoint(anchor_step, anchor_state, inputs=anchor_inputs, event=False)
                checkpoint = "checkpoint %d (%s) written" % (anchor_step, self._checkpointer.kind)
            steps = [s for s, _, _ in batches]
            detail = "batches %d..%d (%d written) and %s" % (steps[0], steps[-1], len(written), checkpoint)
        healthy = self._save_healthy_neighbour(step, captured)
        if healthy is not None:
            detail += "; batch %d, the last healthy step's, for triage" % healthy
        self._event(step, "incident_capture", "%s at step %d (%s): %s"
                    % (CapturePolicy.describe(capture), step, reason, detail))

    def _save_healthy_neighbour(self, step, captured):
        """Triage tells a bad batch from bad weights by replaying healthy batches on the incident's
        checkpoint; another incident's batch is no evidence. When this capture wrote no healthy
        batch, the ring's latest healthy one is saved too (it may be older than the window).
        Returns its step when one was written."""
        ring = self._ring
        if ring is None:
            return None
        if captured is not None and any(ring.is_healthy(s) for s, _, _ in captured[2]):
            return None
        healthy = ring.last_healthy()
        if healthy is None or healthy[0] == step:
            return None
        batch_step, inputs, targets = healthy
        if os.path.exists(os.path.join(self._batch_dir, step_file_name(batch_step))):
            return None
        path = save_batch(self._batch_dir, batch_step, inputs, targets, self.loss_name, self.batch_call)
        self._event(step, "batch_saved", os.path.relpath(path, self.run_dir))
        return batch_step

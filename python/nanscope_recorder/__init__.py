"""nanscope's recorder for PyTorch training loops: writes the run directory nanscope reads
(run.h5, checkpoints/, batches/; see docs/run-format.md).

    from nanscope_recorder import Recorder
    rec = Recorder(run_dir, model, loss_name="cross_entropy")
    for step, (x, y) in enumerate(loader):
        rec.begin_step(step, inputs=x, targets=y)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward()
        if rec.end_step(loss, lr=lr):
            opt.step()
    rec.close()
"""
from .recorder import Recorder

__all__ = ["Recorder"]

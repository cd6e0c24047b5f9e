"""The optimizer's own count of the updates it applied, for the /scalars column optimizer_step
(run_format.json's optimizer_scalars): read from its state, never changing it. A count that starts
again at 0 while the training's step goes on is an optimizer whose state was lost: a resume that
loaded the weights and not optimizer.pt, after which Adam's first updates move every weight by
the whole learning rate (its moments start from zero)."""
import torch

# The optimizers of torch.optim that keep a per-parameter 'step' in their state; SGD keeps only
# its momentum buffer, so its state cannot say how many updates it made.
_COUNTING = tuple(getattr(torch.optim, name) for name in
                  ("Adam", "AdamW", "Adamax", "NAdam", "RAdam", "Adagrad", "RMSprop", "Adadelta", "ASGD", "Rprop",
                   "SparseAdam") if hasattr(torch.optim, name))


def unwrapped(optimizer):
    """The torch.optim optimizer inside a framework's wrapper (accelerate's AcceleratedOptimizer,
    itself a torch.optim.Optimizer, and Lightning's LightningOptimizer), or the optimizer itself."""
    for _ in range(4):
        inner = next((getattr(optimizer, name) for name in ("optimizer", "_optimizer")
                      if isinstance(getattr(optimizer, name, None), torch.optim.Optimizer)), None)
        if inner is None or inner is optimizer:
            break
        optimizer = inner
    return optimizer


def counts_updates(optimizer):
    """Whether the optimizer keeps a count of its updates in its state (Adam and its kin)."""
    inner = unwrapped(optimizer)
    if isinstance(inner, _COUNTING):
        return True
    # Another optimizer (a library's: bitsandbytes, apex) counts when its state already says so.
    return any(isinstance(state, dict) and "step" in state for state in getattr(inner, "state", {}).values())


def update_count(optimizer):
    """The largest 'step' in the optimizer's state (0 before its first update): the updates it
    applied. Parameters that got a state later (an unfrozen block, an expert no token reached yet)
    count fewer, so the largest over all of them. A 'step' kept on a device (capturable or fused
    Adam) is read with the others in one copy to the host."""
    largest = 0
    on_device = []
    for state in unwrapped(optimizer).state.values():
        step = state.get("step") if isinstance(state, dict) else None
        if isinstance(step, torch.Tensor):
            if step.device.type == "cpu":
                largest = max(largest, int(step.item()))
            else:
                on_device.append(step.reshape(()).float())
        elif step is not None:
            largest = max(largest, int(step))
    if on_device:
        largest = max(largest, int(torch.stack(on_device).max().item()))
    return largest

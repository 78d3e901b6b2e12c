"""A training loss robust to wrong labels, for a PyTorch script whose labels look noisy
(run_spec.debugger_robust_loss "generalized_cross_entropy", passed to the job as ``remediation_robust_loss``).

While the entry point runs, ``torch.nn.functional.cross_entropy`` (what ``nn.CrossEntropyLoss`` calls) computes, on
training calls, the generalized cross-entropy of Zhang and Sabuncu, "Generalized Cross Entropy Loss for Training Deep
Neural Networks with Noisy Labels" (NeurIPS 2018): ``(1 - p_y ** q) / q`` for the probability ``p_y`` the model gives
the sample's label, with the paper's ``q = 0.7``. As q goes to 0 it is the cross-entropy; at 1 it is the mean
absolute error, which a wrong label cannot pull far. Its gradient is the cross-entropy's times ``p_y ** q`` (here
divided by that factor's mean over the call, below): a sample the model finds unlikely (most wrong labels, once the
right ones are learnt) moves the weights less.

Only training calls change (gradients on, scores that need a gradient, class-index labels, no label smoothing or
legacy reduction argument): an evaluation under ``torch.no_grad()`` keeps the plain cross-entropy, so the held-out
loss stays comparable from job to job. The call's ``weight`` (the script's or the debugger's class weighting),
``ignore_index`` and ``reduction`` keep their meaning: a weighted mean divides by the summed weights, as PyTorch's does.

The call's gradient is kept at the cross-entropy's scale: the samples' factors ``p_y ** q`` are divided by their mean
over the call, so a wrong label still pulls less than a right one, but the step is not five times smaller while the
model is at chance. The loss's value stays the paper's. Why this loss, this scale, and when the planner uses it:
docs/decisions/010-robust-loss.md.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
from collections.abc import Iterator

from contracts.run_spec import GENERALIZED_CROSS_ENTROPY
from debugger.loss_patches.class_weighting import is_training_call

#: Zhang and Sabuncu's q: their experiments' value, not tuned here.
Q = 0.7
#: The smallest probability the loss reads: p ** q of 0 has an infinite gradient in q's direction.
SMALLEST_PROBABILITY = 1e-12


def generalized_cross_entropy(scores, labels, weight=None, ignore_index: int = -100, reduction: str = "mean",
                              q: float = Q):
    """``(1 - p_y ** q) / q`` per sample, reduced as ``F.cross_entropy`` reduces (scores N x C ..., labels N ...)."""
    import torch

    probabilities = torch.softmax(scores, dim=1)
    kept = labels != ignore_index
    indices = torch.where(kept, labels, torch.zeros_like(labels))
    label_probability = probabilities.gather(1, indices.unsqueeze(1)).squeeze(1).clamp_min(SMALLEST_PROBABILITY)
    losses = (1 - label_probability**q) / q
    weights = kept.to(scores.dtype)
    if weight is not None:
        weights = weights * weight.to(scores.dtype)[indices]
    # The call's gradient at the cross-entropy's scale, its value the paper's: each sample's gradient is the
    # cross-entropy's times p_y ** q, divided by that factor's mean over the call (a constant, not differentiated).
    pull = label_probability.detach() ** q
    scale = ((pull * weights).sum() / weights.sum().clamp_min(SMALLEST_PROBABILITY)).clamp_min(SMALLEST_PROBABILITY)
    rescaled = losses / scale
    losses = (rescaled + (losses - rescaled).detach()) * weights
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    if reduction != "mean":
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return losses.sum() / weights.sum()


@contextlib.contextmanager
def training_on_a_robust_loss(robust_loss: str | None) -> Iterator[None]:
    """With "generalized_cross_entropy": the entry point's training cross-entropy is that loss (above). Anything
    else: as the script wrote it."""
    if robust_loss != GENERALIZED_CROSS_ENTROPY:
        yield
        return
    import torch
    import torch.nn.functional as functional

    original = functional.cross_entropy
    signature = inspect.signature(original)

    def cross_entropy(*args, **kwargs):
        call = signature.bind(*args, **kwargs)
        call.apply_defaults()
        given = call.arguments
        plain = (
            not is_training_call(torch, given["input"], given["target"])
            or given["size_average"] is not None
            or given["reduce"] is not None
            or given["label_smoothing"]
        )
        if plain:
            return original(*args, **kwargs)
        return generalized_cross_entropy(
            given["input"], given["target"], given["weight"], given["ignore_index"], given["reduction"]
        )

    functional.cross_entropy = cross_entropy
    print(
        f"[debugger] robust loss: the training loss is the generalized cross-entropy (q={Q}), in place of the "
        "cross-entropy, so wrong labels pull the model less (run_spec.debugger_robust_loss = generalized_cross_entropy)",
        file=sys.stderr,
    )
    try:
        yield
    finally:
        functional.cross_entropy = original

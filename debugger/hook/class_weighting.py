"""The training loss weighted by class, for a PyTorch script with no class-weighting argument of its own
(run_spec.debugger_class_weighting "balanced", passed to the job as ``remediation_class_weighting``).

While the entry point runs, ``torch.nn.functional.cross_entropy`` (what ``nn.CrossEntropyLoss`` calls) weights
each class by the inverse of its share of the class-index labels seen so far in training calls:
``total / (classes seen * count of the class)``, scikit-learn's "balanced". Only training calls are weighted
(gradients on, scores that need a gradient, class-index labels, no weight of the script's own). An evaluation under
``torch.no_grad()`` keeps the plain loss, so the held-out loss stays comparable from job to job.

The counts are the job's own, not a list handed over from a failed job: any training script gets weights that match
the data it reads. In the first epoch they follow what was seen so far. The first sample of a rare class weighs as
much as the labels seen so far make it, so that class is learnt from its first appearance.

Measured (development seeds 20-22 of bench/zoo_random.py, a class kept at 2% of its samples, each script alone,
weights from the training labels' counts): 4 of the 11 configurations that missed their objective met it weighted
(0.675 to 0.807, 0.889 to 0.947, 0.773 to 0.850, 0.881 to 0.983). The 4 that met it unweighted still met it, each
higher. One that missed scored lower weighted (0.722 to 0.577).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

from contracts.run_spec import BALANCED_CLASS_WEIGHTING


class BalancedWeights:
    """Counts the class-index labels of the training calls; the weights that balance them."""

    def __init__(self) -> None:
        self.counts: list[int] = []

    def weights_for(self, scores, labels):
        """The weight tensor for these scores (N x C ...) and labels (N ...), counting the labels first."""
        import torch

        classes = int(scores.shape[1])
        with torch.no_grad():
            valid = labels[(labels >= 0) & (labels < classes)]  # not ignore_index
            batch = torch.bincount(valid.reshape(-1).cpu(), minlength=classes).tolist()
        if len(self.counts) != classes:
            self.counts = [0] * classes
        self.counts = [count + added for count, added in zip(self.counts, batch, strict=True)]
        seen = [count for count in self.counts if count]
        total = sum(seen)
        # a class not seen yet weighs 1: no label of it is in this call, so its weight changes nothing
        weights = [total / (len(seen) * count) if count else 1.0 for count in self.counts]
        return torch.tensor(weights, dtype=scores.dtype, device=scores.device)


def is_training_call(torch, scores, labels) -> bool:
    return (
        torch.is_grad_enabled()
        and isinstance(scores, torch.Tensor)
        and isinstance(labels, torch.Tensor)
        and scores.requires_grad
        and scores.dim() >= 2
        and labels.dtype in (torch.int64, torch.int32)
        and labels.dim() == scores.dim() - 1
    )


@contextlib.contextmanager
def weighting_the_training_loss(class_weighting: str | None) -> Iterator[None]:
    """With "balanced": the entry point's training cross-entropy is weighted by class (above). Anything else: as
    the script wrote it."""
    if class_weighting != BALANCED_CLASS_WEIGHTING:
        yield
        return
    import torch
    import torch.nn.functional as functional

    original = functional.cross_entropy
    balance = BalancedWeights()

    def cross_entropy(input, target, *args, **kwargs):  # noqa: A002 - torch's own parameter names
        given = kwargs.get("weight", args[0] if args else None)
        if given is None and is_training_call(torch, input, target):
            if args:
                args = (balance.weights_for(input, target), *args[1:])
            else:
                kwargs["weight"] = balance.weights_for(input, target)
        return original(input, target, *args, **kwargs)

    functional.cross_entropy = cross_entropy
    print(
        "[debugger] class weighting: the training loss (cross-entropy) is weighted by class, each class by the "
        "inverse of its share of the labels seen so far (run_spec.debugger_class_weighting = balanced)",
        file=sys.stderr,
    )
    try:
        yield
    finally:
        functional.cross_entropy = original

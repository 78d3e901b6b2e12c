"""The training loss corrected for how often each class occurs, for a PyTorch script with no class-weighting argument
of its own (run_spec.debugger_class_weighting "balanced" or "logit_adjusted", passed to the job as
``remediation_class_weighting``).

While the entry point runs, ``torch.nn.functional.cross_entropy`` (what ``nn.CrossEntropyLoss`` calls) counts the
class-index labels of its training calls, and with each class's share ``p`` of the labels seen so far:

* "balanced" weights each class by ``total / (classes seen * count of the class)``, scikit-learn's "balanced";
* "logit_adjusted" adds ``log p`` to each class's score before the cross-entropy: the logit-adjusted loss of Menon
  et al., "Long-tail learning via logit adjustment" (ICLR 2021), at their tau = 1. A rare class's scores must then
  beat the common ones by a margin its rarity sets, so the model's own scores (what evaluation reads) are those of a
  classifier trained on balanced classes. Every sample keeps weight 1, so the steps stay the size the script's rate
  was set for (a rare class weighted 40 times can make plain SGD diverge).

Only training calls change (gradients on, scores that need a gradient, class-index labels, no weight of the script's
own). An evaluation under ``torch.no_grad()`` keeps the plain loss, so the held-out loss stays comparable from job to
job.

The counts are the job's own, not a list handed over from a failed job: any training script gets a correction that
matches the data it reads. In the first epoch it follows what was seen so far. The first sample of a rare class
weighs as much as the labels seen so far make it, so that class is learnt from its first appearance.

Why balanced first and the logit-adjusted loss after it: docs/decisions/011-class-weighting-balanced-then-logit-adjusted.md.
"""

from __future__ import annotations

import contextlib
import math
import sys
from collections.abc import Iterator

from contracts.run_spec import BALANCED_CLASS_WEIGHTING, LOGIT_ADJUSTED_CLASS_WEIGHTING


class ClassCounts:
    """Counts the class-index labels of the training calls; the weights, or the log shares, that correct for them."""

    def __init__(self) -> None:
        self.counts: list[int] = []

    def count(self, scores, labels) -> list[int]:
        """The counts with these labels (scores N x C ..., labels N ...) added."""
        import torch

        classes = int(scores.shape[1])
        with torch.no_grad():
            valid = labels[(labels >= 0) & (labels < classes)]  # not ignore_index
            batch = torch.bincount(valid.reshape(-1).cpu(), minlength=classes).tolist()
        if len(self.counts) != classes:
            self.counts = [0] * classes
        self.counts = [count + added for count, added in zip(self.counts, batch, strict=True)]
        return self.counts

    def weights_for(self, scores, labels):
        """The "balanced" weight tensor for these scores and labels, counting the labels first."""
        import torch

        counts = self.count(scores, labels)
        seen = [count for count in counts if count]
        total = sum(seen)
        # a class not seen yet weighs 1: no label of it is in this call, so its weight changes nothing
        weights = [total / (len(seen) * count) if count else 1.0 for count in counts]
        return torch.tensor(weights, dtype=scores.dtype, device=scores.device)

    def adjusted(self, scores, labels):
        """The scores with each class's log share of the labels added (along dim 1), counting the labels first."""
        import torch

        counts = self.count(scores, labels)
        # a class not seen yet counts as one sample: the rarest it can be, and log 0 would be minus infinity
        total = sum(max(count, 1) for count in counts)
        log_shares = torch.tensor([math.log(max(count, 1) / total) for count in counts], dtype=scores.dtype,
                                  device=scores.device)
        return scores + log_shares.reshape(1, -1, *([1] * (scores.dim() - 2)))


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


#: What the job's log says the debugger does to the loss, for each weighting.
ANNOUNCEMENTS = {
    BALANCED_CLASS_WEIGHTING: "the training loss (cross-entropy) is weighted by class, each class by the inverse of "
    "its share of the labels seen so far",
    LOGIT_ADJUSTED_CLASS_WEIGHTING: "the training loss (cross-entropy) is logit-adjusted, each class's score raised "
    "by the log of its share of the labels seen so far (Menon et al. 2021)",
}


@contextlib.contextmanager
def weighting_the_training_loss(class_weighting: str | None) -> Iterator[None]:
    """With "balanced" or "logit_adjusted": the entry point's training cross-entropy is corrected for class
    frequencies (above). Anything else: as the script wrote it."""
    if class_weighting not in ANNOUNCEMENTS:
        yield
        return
    import torch
    import torch.nn.functional as functional

    original = functional.cross_entropy
    counts = ClassCounts()

    def cross_entropy(input, target, *args, **kwargs):  # noqa: A002 - torch's own parameter names
        given = kwargs.get("weight", args[0] if args else None)
        if given is None and is_training_call(torch, input, target):
            if class_weighting == LOGIT_ADJUSTED_CLASS_WEIGHTING:
                input = counts.adjusted(input, target)  # noqa: A001 - torch's own parameter name
            elif args:
                args = (counts.weights_for(input, target), *args[1:])
            else:
                kwargs["weight"] = counts.weights_for(input, target)
        return original(input, target, *args, **kwargs)

    functional.cross_entropy = cross_entropy
    print(
        f"[debugger] class weighting: {ANNOUNCEMENTS[class_weighting]} "
        f"(run_spec.debugger_class_weighting = {class_weighting})",
        file=sys.stderr,
    )
    try:
        yield
    finally:
        functional.cross_entropy = original

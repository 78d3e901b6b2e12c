"""What a job's training labels say about a missed objective. Standard library only.

A job can end quietly and miss its objective for a reason no learning rate, epoch count or layer fixes: its training
data. The job's debugger reads the inputs of the script's loss module at every training step (the model's class
scores and the class-index labels it trains on: ``nn.CrossEntropyLoss``, ``nn.NLLLoss``) and reports

* ``label_counts``: how many training labels of each class the job trained on (classes 0 to
  :data:`MAX_COUNTED_CLASSES` - 1; a job with more classes reports none), counted at every step (each epoch again);
* per loss window (:class:`contracts.loss_history.LossWindow`), the ``agreement``: the share of the step's training
  labels the model's top class matched before that step's update.

Three findings follow (:func:`label_finding`), read by the planner when a job missed its objective quietly:

* ``imbalanced``: the rarest class the job trained on has fewer than 1/:data:`IMBALANCE_RATIO` as many labels as
  the most common one. A model sees that class too rarely to learn it, and a held-out set that has its share of it
  is missed; more epochs or another rate do not change what it sees. Weighting the loss by class (or resampling)
  does. Not when the model has not learnt the other classes either: given the objective's target score, a model
  whose top class matched fewer of its training labels (nearly all of the common classes) than the target asks of
  held-out data on them, less :data:`FIT_GAP`, misses for a reason of its training, not the rare class
  (docs/decisions/009-rare-class-needs-a-learnt-model.md).
* ``noisy``: over the last quarter of the run the model's top class matched its own training labels at least
  :data:`FIT_GAP` less often than it matched the held-out labels (the objective's score). A model fits the labels
  it trains on at least as well as unseen ones unless many of those labels are wrong: it learned the rule the
  correct ones share and the wrong ones contradict it. Training longer only fits more of the wrong labels; smaller
  steps fit fewer of them in the same epochs (the evidence set's answer while the labels are being fixed).
* ``memorised``: the other way round, at least :data:`FIT_GAP` more often: the model fits its training labels far
  better than it generalises (too little data for its capacity, or wrong labels it learned by heart, as a large
  enough network does). More epochs widen the gap; regularisation (weight decay, dropout, early stopping) narrows
  it. The loss's course says the same thing only once the loss is near zero (``contracts.loss_history``'s
  ``memorised``); the labels say it while the loss is still falling. Learning by heart takes seeing the samples
  again and again: a job known to have trained fewer than :data:`MIN_EPOCHS_TO_MEMORISE` epochs is not read so (a
  young model's batch-norm statistics make its train-mode match say little).

Under dropout of probability p (``training_dropout``), ``noisy`` needs a gap of :data:`FIT_GAP` + p: dropout lowers
the match in train mode as wrong labels do, the more so the narrower the layer it thins, but by less than that
(:func:`dropout_explains`). ``memorised`` still holds with dropout: dropout only lowers the match. Nor is ``noisy`` read from a job whose training inputs changed between epochs
(``contracts.training_inputs``: augmented in the loader, or drawn afresh): harder training inputs lower the match too.

Both fit findings need a job of :data:`MIN_EPOCHS_TO_MEMORISE` epochs or more when its epochs are known, and
``noisy`` a match that stopped rising (the last quarter no more than :data:`STILL_LEARNING_RISE` above the quarter
before): a model still learning matches its training labels, measured before each update, less often than the model
at the end scores held out. The measurements behind each bound: docs/decisions/007-noisy-label-gap.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from contracts.hyperparameter_values import show
from contracts.loss_history import LossWindow, last_quarter
from contracts.training_inputs import inputs_changed

#: Classes counted (a job whose labels reach this index reports no counts: too many classes to judge balance here).
MAX_COUNTED_CLASSES = 100
#: SageMaker Debugger's ClassImbalance rule documents threshold_imbalance=10: the same ratio, on the labels a job
#: trained on.
IMBALANCE_RATIO = 10
#: Fewer labels than this say nothing about balance.
MIN_COUNTED_LABELS = 200
#: How much less (noisy) or more (memorised) often the model matches its training labels than held-out ones: well
#: past a healthy model's few points, well short of what 40% wrong labels do. Why 0.15: docs/decisions/007-noisy-label-gap.md
FIT_GAP = 0.15
#: A settled match this much below the held-out score, short of FIT_GAP, is what a smaller share of wrong labels does
#: in a model that scores lower (:func:`short_match`): read only as the last thing left to try. Why 0.08:
#: docs/decisions/008-short-match-last-resort.md
SUSPECT_GAP = 0.08
#: A held-out score within this of the most common class's share of the training labels is what always guessing
#: that class scores: the model learned nothing that shows (a binomial standard error on a few hundred held-out
#: samples is about 0.02). Why: docs/decisions/208-jobs-that-learned-nothing-are-neither-better-nor-worse.md
CHANCE_MARGIN = 0.05
#: Fewer epochs than this are too few to judge how the model fits its training labels.
MIN_EPOCHS_TO_MEMORISE = 3
#: A match this much above the quarter before is still rising: the model is still learning its training labels.
STILL_LEARNING_RISE = 0.05
LABEL_FINDINGS = ("imbalanced", "noisy", "memorised")


@dataclasses.dataclass(frozen=True)
class LabelFinding:
    """A finding about the training labels, with the numbers behind it."""

    kind: str
    detail: str
    advice: str

    def describe(self) -> str:
        return self.detail


def label_finding(
    label_counts: Sequence[int] | None,
    windows: Sequence[LossWindow] | None,
    held_out_score: float | None,
    epochs: int | None = None,
    target_score: float | None = None,
    training_dropout: float | None = None,
    training_inputs_repeated: float | None = None,
) -> LabelFinding | None:
    """What the training labels say (None: nothing, or too little reported). ``held_out_score``: the objective's
    value when it is a score from 0 to 1 that a higher value betters (an accuracy), else None; ``epochs``: how many
    the job trained, when known; ``target_score``: the objective's target when it is such a score;
    ``training_dropout``: the largest dropout probability active while the model trained (None: none);
    ``training_inputs_repeated``: the share of its training inputs the job saw again unchanged (None: unknown)."""
    return _imbalance(label_counts, windows, target_score) or _fit(
        windows, held_out_score, epochs,
        lambda gap: _match_lowered_otherwise(training_dropout, training_inputs_repeated, epochs, gap),
    )  # fmt: skip


def _imbalance(
    label_counts: Sequence[int] | None, windows: Sequence[LossWindow] | None, target_score: float | None
) -> LabelFinding | None:
    if not label_counts or sum(label_counts) < MIN_COUNTED_LABELS:
        return None
    seen = [(count, label) for label, count in enumerate(label_counts) if count > 0]
    if len(seen) < 2:
        return None
    rarest, rare_label = min(seen)
    common, common_label = max(seen)
    if common < IMBALANCE_RATIO * rarest:
        return None
    total = sum(label_counts)
    if target_score is not None and windows:
        common_share = sum(count for count in label_counts if IMBALANCE_RATIO * count > common) / total
        agreement = _agreement(_with_labels_seen(last_quarter(windows)))
        if agreement is not None and agreement < target_score * common_share - FIT_GAP:
            return None  # the model has not learnt the common classes either: the rare one does not explain the miss
    return LabelFinding(
        "imbalanced",
        f"the training labels are imbalanced: class {rare_label} made {rarest:,} of the {total:,} labels the job "
        f"trained on ({rarest / total:.1%}), class {common_label} {common:,} ({common / rarest:.0f} to 1; "
        f"{IMBALANCE_RATIO} to 1 or more is imbalanced)",
        "weight the loss by class: give the script a class-weighting argument and map it in hyperparameter_names as "
        'class_weighting (the evidence remedies set it to "balanced"), or resample the rare classes in the training '
        "channel",
    )


def _match_lowered_otherwise(
    training_dropout: float | None, training_inputs_repeated: float | None, epochs: int | None, gap: float = 0.0
) -> bool:
    """Whether the job trained in a way that lowers its match with its training labels as wrong labels do, by as much
    as ``gap``: on inputs that changed between epochs (augmented: by any gap), or with dropout of probability p (by
    up to :data:`FIT_GAP` + p, :func:`dropout_explains`)."""
    return dropout_explains(training_dropout, gap) or inputs_changed(training_inputs_repeated, epochs)


def dropout_explains(training_dropout: float | None, gap: float) -> bool:
    """Whether dropout of probability ``training_dropout`` can explain a match ``gap`` below the held-out score: a clean
    model's train-mode match falls short by less than :data:`FIT_GAP` plus that probability (measured: 0.33 at 0.5 in
    a 2x16 MLP, 0.04 at 0.1 in small BERTs: docs/decisions/209-wrong-labels-under-light-dropout.md)."""
    return bool(training_dropout) and gap < FIT_GAP + training_dropout


def _fit(
    windows: Sequence[LossWindow] | None,
    held_out_score: float | None,
    epochs: int | None,
    lowered_otherwise: Callable[[float], bool],
) -> LabelFinding | None:
    if not windows or held_out_score is None or not 0 <= held_out_score <= 1:
        return None
    if epochs is not None and epochs < MIN_EPOCHS_TO_MEMORISE:
        return None
    late, agreement, rise = _late_match(windows)
    if agreement is None or abs(held_out_score - agreement) < FIT_GAP:
        return None
    matched = (
        f"over {late[0].span(late[-1], with_global=True)} the model's top class matched {agreement:.0%} of its "
        f"training labels, yet it scored {show(held_out_score)} on held-out data"
    )
    if agreement < held_out_score:
        if lowered_otherwise(held_out_score - agreement):
            return None  # dropout or augmented inputs lower the match as wrong labels do: it says nothing here
        if rise is None or rise > STILL_LEARNING_RISE:
            return None  # still learning: the match lags what the model at the end scores
        return LabelFinding(
            "noisy",
            f"the training labels look noisy: {matched}; a model fits the labels it trains on at least as well as "
            "unseen ones unless many of them are wrong",
            "check and correct the training labels (a share of them disagree with what the rest teach the model); "
            "more epochs would fit more of the wrong ones",
        )
    return LabelFinding(
        "memorised",
        f"the model learns its training labels by heart: {matched}",
        "regularise (give the script weight decay, dropout or early stopping and map them in hyperparameter_names as "
        "weight_decay, dropout, early_stopping_patience), add training data, or check the training labels (a network "
        "large enough learns wrong ones by heart too); more epochs would widen the gap",
    )


@dataclasses.dataclass(frozen=True)
class ShortMatch:
    """A match with the training labels settled at least :data:`SUSPECT_GAP` below the held-out score, under what
    names the labels noisy or explained by how the model trained: ``sentence`` says it with the numbers;
    ``labels_suspect``, whether wrong labels are the likeliest reading (nothing else seen to lower the match)."""

    sentence: str
    labels_suspect: bool


def short_match(
    windows: Sequence[LossWindow] | None,
    held_out_score: float | None,
    epochs: int | None = None,
    training_dropout: float | None = None,
    training_inputs_repeated: float | None = None,
) -> ShortMatch | None:
    """What a match settled at least :data:`SUSPECT_GAP` below the held-out score says (None: it is not, the job is
    too short or still learning, or the gap names the labels noisy: ``label_finding``).

    Nothing else lowering it, the labels are suspect. Wrong labels lower the match by about their share times the
    score, so 40% of labels drawn at random among 4 classes (30% wrong) in a model scoring 0.74 fall short by about
    0.1, under :data:`FIT_GAP` (docs/decisions/008-short-match-last-resort.md). Input augmentation lowers the
    match too; when the debugger did not see the inputs come back, the sentence names it, so the planner reads this
    only when no other remedy is left.

    A model that trained with dropout, or on inputs that changed between epochs, gets a sentence saying the match
    says nothing of the labels: a run that ends with no remedy left says it, so the user knows they were
    considered."""
    settled = _settled_short(windows, held_out_score, epochs)
    if settled is None:
        return None
    shortfall, agreement = settled
    if _match_lowered_otherwise(training_dropout, training_inputs_repeated, epochs, held_out_score - agreement):
        how = (
            f"with dropout {show(training_dropout)} active"
            if training_dropout
            else f"on inputs that changed between epochs ({training_inputs_repeated:.0%} of them seen again: augmented "
            "in the loader, or drawn afresh)"
        )
        return ShortMatch(
            f"{shortfall}; it trained {how}, which lowers that match as wrong labels do, so the match says nothing of "
            "the labels",
            labels_suspect=False,
        )
    if held_out_score - agreement >= FIT_GAP:
        return None  # the labels are called noisy (label_finding), or dropout cannot explain the gap (the same)
    # a share that did not read as changed means the inputs came back: augmentation is ruled out, and not named
    unchanged = training_inputs_repeated is not None
    return ShortMatch(
        f"{shortfall}, under the {100 * FIT_GAP:.0f} that name the labels noisy, but a model fits the labels it trains "
        "on at least as well as unseen ones unless some of them are wrong"
        + (
            f" (its training inputs came back unchanged: {training_inputs_repeated:.0%} of them were seen before)"
            if unchanged
            else " (or input augmentation makes its training inputs harder than held-out ones)"
        ),
        labels_suspect=True,
    )


def _settled_short(
    windows: Sequence[LossWindow] | None, held_out_score: float | None, epochs: int | None
) -> tuple[str, float] | None:
    """(what the match and the held-out score were, the match) for a match settled at least :data:`SUSPECT_GAP`
    below the held-out score in a job long enough to read; None otherwise."""
    if not windows or held_out_score is None or not 0 <= held_out_score <= 1:
        return None
    if epochs is not None and epochs < MIN_EPOCHS_TO_MEMORISE:
        return None
    late, agreement, rise = _late_match(windows)
    if agreement is None or rise is None or rise > STILL_LEARNING_RISE:
        return None
    if held_out_score - agreement < SUSPECT_GAP:
        return None
    return (
        f"over {late[0].span(late[-1], with_global=True)} the model's top class matched {agreement:.0%} of its "
        f"training labels, yet it scored {show(held_out_score)} on held-out data: "
        f"{100 * (held_out_score - agreement):.0f} points short",
        agreement,
    )


def _late_match(windows: Sequence[LossWindow]) -> tuple[list[LossWindow], float | None, float | None]:
    """(the last quarter's windows that saw labels, their mean match, how much it rose over the quarter before):
    None where no labels were seen."""
    quarter = len(last_quarter(windows))
    late = _with_labels_seen(last_quarter(windows))
    agreement = _agreement(late)
    before = _agreement(_with_labels_seen(windows[-2 * quarter : -quarter]))
    return late, agreement, None if agreement is None or before is None else agreement - before


def guessing_score(label_counts: Sequence[int] | None) -> float | None:
    """What always guessing the most common training class scores (its share of the labels); None: too few counted."""
    if not label_counts or sum(label_counts) < MIN_COUNTED_LABELS:
        return None
    return max(label_counts) / sum(label_counts)


def _with_labels_seen(windows: Sequence[LossWindow]) -> list[LossWindow]:
    """The windows whose steps saw labels (the others have no match to read)."""
    return [window for window in windows if window.agreement is not None and window.agreement_count]


def _agreement(windows: Sequence[LossWindow]) -> float | None:
    """The windows' mean match, over the steps whose labels were seen (None: none were)."""
    counted = sum(window.agreement_count for window in windows)
    return sum(window.agreement * window.agreement_count for window in windows) / counted if counted else None


class LabelTally:
    """The job's count of training labels by class (the debugger adds each training step's), and whether it saw a
    class beyond :data:`MAX_COUNTED_CLASSES`, after which it reports none."""

    def __init__(self, counts: Sequence[int] | None = None) -> None:
        self._counts = [int(count) for count in counts or ()][:MAX_COUNTED_CLASSES]
        self._too_many_classes = False

    def add(self, counts: Sequence[int]) -> None:
        """One step's labels, as counts by class index (``counts[i]``: labels of class i)."""
        if len(counts) > MAX_COUNTED_CLASSES:
            if any(counts[MAX_COUNTED_CLASSES:]):
                self._too_many_classes = True
            counts = counts[:MAX_COUNTED_CLASSES]
        if len(counts) > len(self._counts):
            self._counts.extend([0] * (len(counts) - len(self._counts)))
        for label, count in enumerate(counts):
            self._counts[label] += int(count)

    def counts(self) -> list[int] | None:
        return None if self._too_many_classes or not any(self._counts) else list(self._counts)

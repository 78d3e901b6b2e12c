"""Whether a job's training inputs came back unchanged from one epoch to the next. Standard library only.

A model in train mode matches its training labels less often than it scores held out when its training inputs are
harder than held-out ones: input augmentation in the data loader (random shifts, crops, flips, added noise) does that
as wrong labels do (``contracts.training_labels``). The debugger cannot see the loader, but it sees what the model is
given: a sample the loader hands over unchanged is the same bytes in every epoch, and an augmented one is new each
time. The hook fingerprints each training input row (up to :data:`FINGERPRINT_VALUES` values spread over the row) and
reports ``training_inputs_repeated``: the share of the rows it checked that it had seen before. A job of E epochs
without augmentation repeats (E - 1) / E of its rows (every row after its first epoch); an augmented one about none.

The rows checked are those whose fingerprint falls in a fixed share of all fingerprints (a distinct sample: a row is
checked every time it comes back or never), the share halved whenever more than :data:`MAX_KEPT` fingerprints are
kept, so the memory stays bounded on any data set and the estimate needs no knowledge of its size.

Read as changed, the inputs only take a finding away (the labels are not called noisy), never add one. So the cases
that read unchanged data as changed cost a finding, not a false one: a script that scales each batch by its own
statistics (a row's bytes then depend on its batch), a distributed job whose sampler deals each rank another shard
every epoch (with 8 ranks a rank has seen about 12% of its rows before after 3 epochs), a second model fed generated
inputs (a GAN's discriminator).
"""

from __future__ import annotations

from collections.abc import Iterable

#: Below this share of repeated training inputs (in a job of :data:`MIN_EPOCHS_TO_TELL` epochs or more, when its
#: epochs are known), the inputs are read as changed between epochs: a job of 3 epochs without augmentation repeats
#: 2/3 of them.
INPUTS_REPEATED_MIN = 0.25
#: A job of fewer epochs repeats too few of its inputs to tell augmentation from a first pass over the data.
MIN_EPOCHS_TO_TELL = 3
#: Values of a row its fingerprint reads, spread evenly over the row (all of a shorter row).
FINGERPRINT_VALUES = 256
#: Fingerprints kept at most (the sample's share halves beyond it).
MAX_KEPT = 8192
#: Rows checked before the share is reported (fewer say too little).
MIN_CHECKED = 64


class InputRepeats:
    """The tally behind ``training_inputs_repeated``: fingerprints (integers) of training input rows, a step's at a
    time, each kept with how often it came."""

    def __init__(self) -> None:
        self._seen: dict[int, int] = {}
        self._mask = 0  # a row is checked when its fingerprint & mask == 0: all rows, then half, a quarter...

    def add(self, fingerprints: Iterable[int]) -> None:
        for fingerprint in fingerprints:
            if not fingerprint & self._mask:
                self._seen[fingerprint] = self._seen.get(fingerprint, 0) + 1
        while len(self._seen) > MAX_KEPT:
            # the rows dropped are dropped with every time they came: the share stays that of the rows still kept
            self._mask = (self._mask << 1) | 1
            self._seen = {fingerprint: count for fingerprint, count in self._seen.items() if not fingerprint & self._mask}

    @property
    def kept(self) -> int:
        return len(self._seen)

    def share(self) -> float | None:
        """The share of checked rows seen before (None: too few checked)."""
        checked = sum(self._seen.values())
        return (checked - len(self._seen)) / checked if checked >= MIN_CHECKED else None


def inputs_changed(training_inputs_repeated: float | None, epochs: int | None) -> bool:
    """Whether a job's training inputs changed between epochs (augmented in the loader, or drawn afresh): it repeated
    under :data:`INPUTS_REPEATED_MIN` of them over :data:`MIN_EPOCHS_TO_TELL` epochs or more. A job whose epochs are
    unknown is read by its share alone: a first pass over the data repeats nothing either, so such a job is not read
    as having clean inputs."""
    if training_inputs_repeated is None or training_inputs_repeated >= INPUTS_REPEATED_MIN:
        return False
    return epochs is None or epochs >= MIN_EPOCHS_TO_TELL

"""The learning rates an optimizer trains at, so the ``evidence`` remedies judge a rate in its own optimizer's range.

A rate of 1e-3 is tiny for SGD with momentum (0.1 is where the reference ResNet starts) and the usual start for
Adam. The job's debugger reports the optimizer the script steps (``Evidence.optimizer``: its class name); the
planner takes that optimizer's usual starting rate and derives the rest of its range from it by the same ratios
the SGD range has (:class:`RateRange`).
"""

from __future__ import annotations

import dataclasses

from contracts.hyperparameter_values import show

#: Usual starting rates by optimizer class (torch.optim's names). SGD: the reference ResNet's 0.1 (with momentum;
#: Goyal et al. 2017 train ResNets from 0.1 at batch 256). The adaptive methods: their torch.optim defaults, which
#: are their papers' recommended settings (Adam, AdamW, RAdam 1e-3; NAdam, Adamax 2e-3; RMSprop, Adagrad,
#: Adafactor 1e-2; Adadelta and L-BFGS scale a step whose size the method itself sets: 1).
USUAL_RATES: dict[str, float] = {
    "SGD": 0.1,
    "ASGD": 0.1,
    "Adam": 1e-3,
    "AdamW": 1e-3,
    "SparseAdam": 1e-3,
    "RAdam": 1e-3,
    "NAdam": 2e-3,
    "Adamax": 2e-3,
    "RMSprop": 1e-2,
    "Rprop": 1e-2,
    "Adagrad": 1e-2,
    "Adafactor": 1e-2,
    "Adadelta": 1.0,
    "LBFGS": 1.0,
}
#: The optimizer assumed when the job reports none (a job from before the debugger reported it): the built-in
#: example's.
ASSUMED_OPTIMIZER = "SGD"

# The range around the usual rate, as ratios measured for SGD on the reference ResNet
# (docs/decisions/002-learning-rate-ranges.md): above 4x the
# usual rate training is unstable; a hundredth of it barely moves the weights; a thousandth is the least a remedy
# lowers it to; with batch norm the reference network was stable during warmup at the usual rate.
CEILING_RATIO = 4.0
TOO_SMALL_RATIO = 1e-2
RAISE_TO_RATIO = 1e-1
FLOOR_RATIO = 1e-3
STABLE_WARMUP_RATIO = 1.0


@dataclasses.dataclass(frozen=True)
class RateRange:
    """An optimizer's learning-rate range: ``usual`` is where it usually starts."""

    optimizer: str
    usual: float
    #: How the planner knows: "reported" (the job said), "assumed" (it did not: SGD's), "from the start" (an
    #: optimizer whose usual rate is not known here: judged around the rate the run started at), "unknown" (neither:
    #: SGD's).
    source: str = "reported"
    #: The targets' scale the range was divided by (a regression whose rate RateForTargetScale divided: its loss's
    #: steps are that many times larger, so is every rate its optimizer trains at); None: the optimizer's own range.
    target_scale: float | None = None

    @property
    def ceiling(self) -> float:
        """Above this a rate is out of range: remedies bring it back to ``usual`` and never raise one past it."""
        return _round(self.usual * CEILING_RATIO)

    @property
    def too_small(self) -> float:
        """Below this a rate barely moves the weights: raised to :attr:`raised_to`."""
        return _round(self.usual * TOO_SMALL_RATIO)

    @property
    def raised_to(self) -> float:
        return _round(self.usual * RAISE_TO_RATIO)

    @property
    def floor(self) -> float:
        """No remedy lowers a rate below this."""
        return _round(self.usual * FLOOR_RATIO)

    @property
    def stable_warmup(self) -> float:
        return _round(self.usual * STABLE_WARMUP_RATIO)

    def describe(self) -> str:
        """"Adam's range (usual start 0.001, out of range above 0.004, too small below 1e-05), as the job reported"."""
        how = {
            "reported": "the optimizer the job reported",
            "assumed": "assumed: the job reported no optimizer",
            "from the start": f"{self.optimizer}'s usual rate is not known here: the rate this run started at",
            "unknown": f"{self.optimizer}'s usual rate is not known here: SGD's",
        }[self.source]
        scaled = f", divided by the targets' scale {show(self.target_scale)}" if self.target_scale else ""
        return (
            f"{self.optimizer}'s range{scaled} (usual start {show(self.usual)}, out of range above {show(self.ceiling)}, "
            f"too small below {show(self.too_small)}; {how})"
        )

    def divided_by_target_scale(self, scale: float) -> RateRange:
        """The same range on a loss whose steps are ``scale`` times larger (targets that many times the outputs')."""
        return dataclasses.replace(self, usual=_round(self.usual / scale), target_scale=_round(scale))


def _round(value: float) -> float:
    return float(f"{value:.6g}")


SGD_RANGE = RateRange(ASSUMED_OPTIMIZER, USUAL_RATES[ASSUMED_OPTIMIZER], source="assumed")


def range_for(optimizer: str | None, starting_rate: float | None = None) -> RateRange:
    """The range of the optimizer the job reported; SGD's when it reported none; around ``starting_rate`` (the run's
    first learning rate) for an optimizer not in :data:`USUAL_RATES`."""
    if optimizer is None:
        return SGD_RANGE
    if optimizer in USUAL_RATES:
        return RateRange(optimizer, USUAL_RATES[optimizer])
    if starting_rate is not None and starting_rate > 0:
        return RateRange(optimizer, starting_rate, source="from the start")
    return RateRange(optimizer, USUAL_RATES[ASSUMED_OPTIMIZER], source="unknown")

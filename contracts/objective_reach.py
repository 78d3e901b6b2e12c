"""Whether a job can still reach its objective in the epochs it has left: what the ObjectiveOutOfReach rule
(debugger.rules.objective_rules) judges in the job, and what the planner's reason quotes. Standard library only.

The objective's metric, reported once per epoch (as SageMaker's tuning early stopping needs it: "the objective metric
after each epoch"), is ranked so that higher is better (``Objective.sign``) and judged from :data:`START_SHARE` of the
planned epochs on (half: a projection never reaches further ahead than the course it is drawn from), each time a value
comes:

* its best so far (a run whose metric met the objective once is never judged again);
* its pace: the faster of its recent rate (over the last half of its reports, at least :data:`MIN_RECENT_REPORTS`:
  the median slope between two of them, plus one standard error) and, unless that recent part is falling (by more
  than :data:`FALLING_ERRORS` standard errors), the pace its best kept on average since its first report; never
  below 0. A stopping rule must be right on every healthy run: a course that stalls on a plateau before it climbs
  again is underestimated by its recent rate alone, while one that gives back what it gained (wrong labels learnt by
  heart) is on no plateau;
* its noise: the spread of those recent reports around their line, read robustly (the median absolute deviation), so
  a few spikes to worse values widen neither the noise nor the rate of a flat course.

The objective is out of reach when the best so far, plus :data:`RATE_FACTOR` times the pace over every epoch left,
plus :data:`NOISE_FACTOR` times the noise, stays short of the target. Learning curves bend down as they go, so a
straight line at twice the pace overstates what is left to gain. The projection never passes the value the metric
cannot pass (``Objective.bound_for``: an error below 0, an accuracy above 1).

A near miss is never judged: the best so far must be short of the target by more than :data:`NEAR_MISS_SHARE` of the
target's magnitude, since a metric can stall a few points short and climb again, which no trend foresees.

The measurements behind each constant: docs/decisions/013-objective-out-of-reach.md and
docs/decisions/170-objective-reach-conservative-projection.md.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence

from contracts.objective import MIN_RECENT_REPORTS, Objective, recent_reports

#: The rule that judges it (debugger.rules.objective_rules), and the kind of issue it reports.
RULE_NAME = "ObjectiveOutOfReach"
OUT_OF_REACH = "out_of_reach"
#: A job is judged from this share of its planned epochs on (and never at its last: it has ended by then): a projection
#: never reaches further ahead than the course it is drawn from, since a slow start says little of where a curve goes
#: over twice its length ...
START_SHARE = 1 / 2
#: ... on at least MIN_RECENT_REPORTS reports (contracts.objective: the recent rate on the last half of them and at
#: least that many) ...
#: ... projected at this many times its pace over the epochs left ...
RATE_FACTOR = 2.0
#: ... and this many robust standard deviations of the reports' noise around their line.
NOISE_FACTOR = 1.0
#: A near miss is never judged: the best must be short of the target by more than this share of its magnitude.
NEAR_MISS_SHARE = 0.05
#: A recent part falls when its slope is below 0 by more than this many standard errors: a noisy plateau seldom does.
FALLING_ERRORS = 2.0
#: The median absolute deviation of normal noise times this is its standard deviation.
MAD_TO_SIGMA = 1.4826


def first_judged_report(planned: int) -> int:
    """The first report a job of ``planned`` epochs is judged at."""
    return max(MIN_RECENT_REPORTS, math.ceil(planned * START_SHARE))


def robust_line(values: Sequence[float]) -> tuple[float, float, float]:
    """(slope per report, noise, standard error of the slope) of at least three values, read so that a few spikes move
    none of them: the Theil-Sen slope (the median of the slopes between every two reports), the spread around that
    line as the median absolute deviation of the residuals times :data:`MAD_TO_SIGMA`, and that noise over the
    reports' spread."""
    count = len(values)
    slope = statistics.median(
        (values[j] - values[i]) / (j - i) for i in range(count) for j in range(i + 1, count)
    )
    residuals = [y - slope * x for x, y in enumerate(values)]
    centre = statistics.median(residuals)
    noise = MAD_TO_SIGMA * statistics.median(abs(residual - centre) for residual in residuals)
    mean_x = (count - 1) / 2
    spread = sum((x - mean_x) ** 2 for x in range(count))
    return slope, noise, noise / math.sqrt(spread)


@dataclasses.dataclass(frozen=True)
class Reach:
    """A job's course judged against its objective: after ``reports`` of ``planned`` epochs its best was ``best``, its
    pace ``rate`` an epoch (``pace``: "recent" or "average", whichever was faster) with ``noise`` around its line;
    ``projected`` is the best it can reach by its last epoch (capped at ``bound``, the value the metric cannot pass,
    when known). ``near_miss``: the best is within :data:`NEAR_MISS_SHARE` of the target, and is not judged.
    ``out_of_reach``: the projection stays short of the target."""

    reports: int
    planned: int
    best: float
    rate: float
    noise: float
    projected: float
    near_miss: bool
    out_of_reach: bool
    pace: str = "recent"
    bound: float | None = None

    @property
    def capped(self) -> bool:
        return self.bound is not None and self.projected == self.bound

    def describe(self, objective: Objective) -> str:
        left = self.planned - self.reports
        lately = "lately" if self.pace == "recent" else "on average since its first report"
        pace = (
            f"improving {self.rate:.3g} an epoch {lately} (noise {self.noise:.3g}); at {RATE_FACTOR:g} times that rate "
            f"for the {left} epochs left"
            if self.rate > 0
            else f"no longer improving (noise {self.noise:.3g}); in the {left} epochs left"
        )
        cap = f" (it cannot pass {self.bound:g})" if self.capped else ""
        return (
            f"{objective.metric_name} was at best {self.best:.4g} after {self.reports} of {self.planned} epochs, "
            f"{pace} it {reaches(objective)} {self.projected:.4g}{cap}, short of {objective.describe()}"
        )


def reaches(objective: Objective) -> str:
    """How a projection bounds the metric, in its better direction."""
    return "reaches at most" if objective.sign > 0 else "falls to no less than"


def judge_reach(objective: Objective, values: Sequence[float], planned: int) -> Reach | None:
    """The course of ``values`` (one per epoch) against ``objective`` with ``planned`` epochs in all; None when it
    cannot be judged yet or any more: too early, at or past the last epoch, met once, or a value not finite."""
    reports = len(values)
    if planned <= 0 or reports >= planned or reports < first_judged_report(planned):
        return None
    if not all(isinstance(value, (int, float)) and math.isfinite(value) for value in values):
        return None
    sign = objective.sign
    ranked = [sign * float(value) for value in values]
    best, target = max(ranked), sign * objective.target_value
    if best >= target:
        return None
    slope, noise, error = robust_line(recent_reports(ranked))
    recent_rate = max(0.0, slope + error)
    falling = slope + FALLING_ERRORS * error < 0  # past its peak, not on a plateau: it gives back what it gained
    average_rate = 0.0 if falling else max(0.0, (best - ranked[0]) / (reports - 1))
    rate, pace = (recent_rate, "recent") if recent_rate >= average_rate else (average_rate, "average")
    projected = best + RATE_FACTOR * rate * (planned - reports) + NOISE_FACTOR * noise
    bound = objective.bound_for(values)
    if bound is not None:
        projected = min(projected, sign * bound)
    near_miss = target - best <= NEAR_MISS_SHARE * abs(objective.target_value)
    return Reach(
        reports=reports,
        planned=planned,
        best=sign * best,
        rate=rate,
        noise=noise,
        projected=sign * projected,
        near_miss=near_miss,
        out_of_reach=projected < target and not near_miss,
        pace=pace,
        bound=bound,
    )

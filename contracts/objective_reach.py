"""Whether a job can still reach its objective in the epochs it has left: what the ObjectiveOutOfReach rule
(debugger.rules.objective_rules) judges in the job, and what the planner's reason quotes. Standard library only.

The objective's metric, reported once per epoch (as SageMaker's tuning early stopping needs it: "the objective metric
after each epoch"), is judged from a third of the planned epochs on, each time a value comes:

* its best so far (a run whose metric met the objective once is never judged again);
* its recent rate: the least-squares slope over the last half of its reports (at least :data:`MIN_RECENT_REPORTS`),
  plus one standard error, never below 0;
* its noise: the standard deviation of those reports around that line.

The objective is out of reach when the best so far, plus :data:`RATE_FACTOR` times the recent rate over every epoch
left, plus :data:`NOISE_FACTOR` times the noise, stays short of the target. Learning curves bend down as they go, so
a straight line at twice the recent rate overstates what is left to gain.

A near miss is never judged: the best so far must be short of the target by more than :data:`NEAR_MISS_SHARE` of the
target's magnitude. A metric can stall a few points short and climb again, which no trend foresees: a rare class
learned late (report seed 1030 of the random zoo, configuration 7: held-out accuracy flat at 0.86-0.87 from epoch 2 to
7, then 0.93 at epoch 12 against 0.9; the rule without this allowance stopped it after epoch 6).

Measured on 369 jobs of the random zoo's development seeds 20-34 (bench/zoo_random.py, every fault and its remedied
relaunches; one report per epoch): of 149 that met their objective at the end, none was judged out of reach; of 200
that missed, 115 were, at a median of 58% of their epochs. At the rate's factor 1 three jobs that met were judged out
of reach (two creeping up by 0.005 an epoch to 0.908 and 0.933 against 0.9). On development seeds 40-43 (117 jobs, not
used to set these): none of 50 that met, 36 of 67 that missed.

The near-miss allowance, on 661 jobs of development seeds 20-43 (the same probe, rerun): the rule stops 123 of 313
misses instead of 172, and keeps 77% of the epochs it saved. Without it, three jobs that met came within 0.005 of being
judged out of reach (all three stalled 0.02-0.04 short of the target, two of them a rare class), and a projection
0.01 lower would have stopped them; with it, none that met is stopped even with a projection 0.02 lower.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from contracts.objective import MIN_RECENT_REPORTS, Objective, recent_reports, trend_line

#: The rule that judges it (debugger.rules.objective_rules), and the kind of issue it reports.
RULE_NAME = "ObjectiveOutOfReach"
OUT_OF_REACH = "out_of_reach"
#: A job is judged from this share of its planned epochs on (and never at its last: it has ended by then) ...
START_SHARE = 1 / 3
#: ... on at least MIN_RECENT_REPORTS reports (contracts.objective: the recent rate on the last half of them and at
#: least that many) ...
#: ... projected at this many times the recent rate (plus one standard error) over the epochs left ...
RATE_FACTOR = 2.0
#: ... and this many standard deviations of the reports' noise around their line.
NOISE_FACTOR = 1.0
#: A near miss is never judged: the best must be short of the target by more than this share of its magnitude.
NEAR_MISS_SHARE = 0.05


@dataclasses.dataclass(frozen=True)
class Reach:
    """A job's course judged against its objective: after ``reports`` of ``planned`` epochs its best was ``best``,
    improving at most ``rate`` an epoch with ``noise`` around that; ``projected`` is the most it can reach by its
    last epoch. ``near_miss``: the best is within :data:`NEAR_MISS_SHARE` of the target, so it is not judged.
    ``out_of_reach``: the projection stays short of the target, and the best is not a near miss."""

    reports: int
    planned: int
    best: float
    rate: float
    noise: float
    projected: float
    near_miss: bool
    out_of_reach: bool

    def describe(self, objective: Objective) -> str:
        left = self.planned - self.reports
        pace = (
            f"improving {self.rate:.3g} an epoch lately (noise {self.noise:.3g}); at {RATE_FACTOR:g} times that rate for "
            f"the {left} epochs left"
            if self.rate > 0
            else f"no longer improving (noise {self.noise:.3g}); in the {left} epochs left"
        )
        return (
            f"{objective.metric_name} was at best {self.best:.4g} after {self.reports} of {self.planned} epochs, "
            f"{pace} it reaches at most {self.projected:.4g}, short of {objective.describe()}"
        )


def judge_reach(objective: Objective, values: Sequence[float], planned: int) -> Reach | None:
    """The course of ``values`` (one per epoch) against ``objective`` with ``planned`` epochs in all; None when it
    cannot be judged yet or any more: too early, at or past the last epoch, met once, or a value not finite."""
    reports = len(values)
    if planned <= 0 or reports >= planned or reports < max(MIN_RECENT_REPORTS, math.ceil(planned * START_SHARE)):
        return None
    if not all(isinstance(value, (int, float)) and math.isfinite(value) for value in values):
        return None
    sign = objective.sign
    ranked = [sign * float(value) for value in values]
    best, target = max(ranked), sign * objective.target_value
    if best >= target:
        return None
    slope, noise, error = trend_line(recent_reports(ranked))
    rate = max(0.0, slope + error)
    projected = best + RATE_FACTOR * rate * (planned - reports) + NOISE_FACTOR * noise
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
    )

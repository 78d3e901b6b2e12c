"""The hook under torch.distributed: which worker a process is, where it records, and one stop for every rank.

As smdebug does, a process is ``worker_<rank>`` (``torch.distributed.get_rank()`` once the process group exists,
else the rank its launcher or SageMaker's SM_HOSTS give it: :func:`contracts.distributed.placement_from_environment`).
The chief, ``worker_0``, writes the job's debug output as a single process would, rule-status document included.
The others write only with smdebug's ``include_workers="all"``, each its own tensors under
``<out_dir>/workers/worker_<rank>/`` (and its S3 mirror), which a trial reads as that worker's values
(``trial.workers()``, ``tensor.value(step, worker="worker_1")``); they never write a rule-status document.

Each rank evaluates the rules on its own tensors. At every training step's check the ranks exchange one small
tensor (an all_reduce): if a rule with a StopTraining action fired on any rank, every rank learns it at that step,
the lowest such rank broadcasts its finding, and all of them raise StopTrainingRequested at that very step, so no
rank waits forever in the next collective for one that stopped. The chief records the finding in the document.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from contracts.distributed import CHIEF_WORKER, WORKERS_DIR, Ranked, placement_from_environment
from contracts.rule_status import ISSUES_FOUND, ActionRecord, RuleIssue
from debugger.hook.stop_training import StopTrainingRequested

LOGGER = logging.getLogger("debugger.hook")


@dataclasses.dataclass(frozen=True)
class WorkerRole(Ranked):
    """This process's place among the job's training processes (rank 0 of 1 for a single process)."""

    rank: int = 0
    world_size: int = 1

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    @classmethod
    def of_this_process(cls, environ: Mapping[str, str] = os.environ) -> WorkerRole:
        """The process group's rank when it exists (as smdebug asks torch.distributed), else the environment's."""
        group = _process_group()
        if group is not None:
            return cls(group.get_rank(), group.get_world_size())
        placement = placement_from_environment(environ)
        return cls() if placement is None else cls(placement.rank, placement.world_size)

    def output_dir(self, out_dir: Path) -> Path:
        return out_dir if self.is_chief else out_dir / WORKERS_DIR / self.worker

    def s3_output_path(self, path: str | None) -> str | None:
        if path is None or self.is_chief:
            return path
        return f"{path.rstrip('/')}/{WORKERS_DIR}/{self.worker}/"

    def records(self, include_workers: str) -> bool:
        """Whether this worker writes tensors: the chief always, the others with include_workers="all"."""
        return self.is_chief or include_workers == "all"


def _process_group():
    """torch.distributed when its default process group is initialized, else None. A process that never imported
    torch (an XGBoost job) has no process group: torch is not imported for it."""
    if "torch" not in sys.modules:
        return None
    import torch.distributed as dist

    return dist if dist.is_available() and dist.is_initialized() else None


class StopExchange:
    """One all_reduce per training step: the lowest rank whose rule stops training, if any."""

    def __init__(self, role: WorkerRole):
        self.role = role
        self._warned = False

    def lowest_stopping_rank(self, stopping: bool) -> int | None:
        """All ranks call this at the same step; each learns the lowest rank that is stopping (None: none)."""
        if not self.role.distributed:
            return self.role.rank if stopping else None
        dist = _process_group()
        if dist is None:
            if not self._warned:
                self._warned = True
                LOGGER.warning(
                    "%s of %d: torch.distributed has no process group, so a rule stop on another rank cannot "
                    "reach this one; initialise it (init_process_group) before training",
                    self.role.worker, self.role.world_size,
                )
            return self.role.rank if stopping else None
        import torch

        world = self.role.world_size
        # world - rank for a stopping rank, 0 otherwise: the maximum names the lowest stopping rank.
        flag = torch.tensor([world - self.role.rank if stopping else 0], dtype=torch.int64, device=_device(dist))
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        value = int(flag.item())
        return None if value == 0 else world - value

    def share(self, finding: dict | None, source: int) -> dict:
        """The finding of rank ``source`` on every rank (a broadcast, only at the step a rank stops)."""
        dist = _process_group()
        if dist is None:
            return finding or {}
        objects = [finding]
        dist.broadcast_object_list(objects, src=source, device=_device(dist))
        return objects[0]


def _device(dist):
    """NCCL exchanges CUDA tensors; gloo CPU ones."""
    import torch

    if dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def exchange_stop(hook, step: int) -> None:
    """At a training step's check, after this rank's rules ran: stop every rank if any rank's rule stops training.

    ``hook`` is the :class:`debugger.hook.pytorch.hook.Hook` (its ``_stop``, ``_rules``, ``evidence``, ``actions``)."""
    exchange: StopExchange = hook._stop_exchange
    source = exchange.lowest_stopping_rank(hook._stop is not None)
    if source is None or not exchange.role.distributed:
        return
    own = _finding_of(hook) if source == exchange.role.rank else None
    finding = exchange.share(own, source)
    if source != exchange.role.rank:
        _adopt(hook, finding, step)
    if exchange.role.is_chief and source != exchange.role.rank:
        hook.write_status()


def _finding_of(hook) -> dict:
    stop: StopTrainingRequested = hook._stop
    state = next((state for state in hook._rules if state.spec.name == stop.rule_name), None)
    issue = state.issue if state is not None else None
    return {
        "worker": hook.worker_role.worker,
        "world_size": hook.worker_role.world_size,
        "rule": stop.rule_name,
        "step": stop.step,
        "message": stop.message,
        "issue": dataclasses.asdict(issue) if issue is not None else None,
    }


def _adopt(hook, finding: dict, step: int) -> None:
    """Record another rank's stop as this rank's own: the same rule, step and evidence of the issue."""
    where = f"on {finding['worker']} (rank {finding['worker'].split('_')[-1]} of {finding['world_size']})"
    message = f"{finding['message']} {where}"
    rule_step = int(finding["step"])
    if hook._stop is None:
        hook._stop = StopTrainingRequested(finding["rule"], rule_step, message)
    if hook.worker_role.worker != CHIEF_WORKER:
        return  # only the chief's document is written
    from debugger.hook.rule_runner import _now

    state = next((state for state in hook._rules if state.spec.name == finding["rule"]), None)
    if state is None or state.status == ISSUES_FOUND:
        return
    issue = finding.get("issue") or {}
    state.status, state.details, state.modified = ISSUES_FOUND, message, _now()
    state.issue = RuleIssue(
        step=rule_step,
        tensor=issue.get("tensor", ""),
        value=issue.get("value"),
        message=message,
        phase=issue.get("phase"),
        kind=issue.get("kind"),
        optimizer_step=issue.get("optimizer_step"),
        evaluation_pass=bool(issue.get("evaluation_pass", False)),
    )
    evidence = hook.evidence
    if evidence.first_issue_step is None:
        evidence.first_issue_step = rule_step
        evidence.first_issue_optimizer_step = issue.get("optimizer_step")
        evidence.phase = issue.get("phase")
        evidence.learning_rate_at_issue = hook._learning_rate()
    for action in state.spec.actions:
        detail = action.get("endpoint", "") if action["name"] != "StopTraining" else message
        hook.actions.append(ActionRecord(action=action["name"], rule=state.spec.name, step=rule_step, at=_now(), detail=detail))

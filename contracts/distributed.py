"""Training on several instances: the run_spec's ``instance_count`` and ``distribution``, and where a process
stands in the job (its rank). Standard library only: the workflow, the local platform and the job all read it.

The run_spec says it as the SageMaker Python SDK's PyTorch estimator does::

    "instance_count": 2, "distribution": {"torch_distributed": {"enabled": true}}

and the request carries what the estimator sends: ``ResourceConfig.InstanceCount`` and the hyperparameter the
PyTorch container's training toolkit reads to pick its launcher (:func:`distribution_hyperparameters`):

* ``torch_distributed`` -> ``sagemaker_torch_distributed_enabled``: the toolkit runs ``torchrun --nnodes H
  --nproc_per_node P --master_addr <first host> --master_port 7777 --node_rank i <program>`` on every host;
* ``pytorchddp`` -> ``sagemaker_pytorch_ddp_enabled``: ``python -m torch.distributed.launch`` with master port 55555;
* neither: every host runs the program once (``SM_HOSTS``, ``SM_CURRENT_HOST``) and the script forms its process
  group itself, with the first host as master.

P, the processes per host, is the host's GPU count, 1 on a CPU instance (the toolkit's default). Both launchers give
each process ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT`` (torch's env:// init);
:func:`placement_from_environment` reads a process's place from them, or from ``SM_HOSTS`` / ``SM_CURRENT_HOST``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from contracts import ContractError

#: How many instances one training job may ask for. SageMaker's own ceiling is the account's quota; this is the
#: product's: every attempt of a run launches the whole cluster again (up to max_num_retraining times).
INSTANCE_COUNT_LOW = 1
INSTANCE_COUNT_HIGH = 20
#: The local training platform runs every instance as a process on this one machine.
LOCAL_INSTANCE_COUNT_HIGH = 4

#: The SageMaker Python SDK's ``distribution`` keys for PyTorch that this product launches, and the hyperparameter
#: each sets to true (sagemaker.pytorch.estimator.PyTorch.LAUNCH_*_ENV_NAME).
TORCH_DISTRIBUTED = "torch_distributed"
PYTORCH_DDP = "pytorchddp"
DISTRIBUTION_HYPERPARAMETERS = {
    TORCH_DISTRIBUTED: "sagemaker_torch_distributed_enabled",
    PYTORCH_DDP: "sagemaker_pytorch_ddp_enabled",
}
#: The estimator sends the instance type with either (sagemaker.pytorch.estimator.PyTorch.INSTANCE_TYPE_ENV_NAME).
INSTANCE_TYPE_HYPERPARAMETER = "sagemaker_instance_type"
#: The SDK's other distribution keys: another framework's or a library this product does not launch.
UNSUPPORTED_DISTRIBUTIONS = (
    "smdistributed", "mpi", "parameter_server", "pytorchxla", "multi_worker_mirrored_strategy", "instance_groups",
)  # fmt: skip
#: The master port each launcher uses (the training toolkit's torch_distributed.py and vanilla_ddp.py).
LAUNCHER_MASTER_PORTS = {TORCH_DISTRIBUTED: 7777, PYTORCH_DDP: 55555}
DEFAULT_MASTER_PORT = LAUNCHER_MASTER_PORTS[TORCH_DISTRIBUTED]

# ------------------------------------------------------------------ the environment of a process in the job

HOSTS_ENV = "SM_HOSTS"
CURRENT_HOST_ENV = "SM_CURRENT_HOST"
RANK_ENV, WORLD_SIZE_ENV, LOCAL_RANK_ENV = "RANK", "WORLD_SIZE", "LOCAL_RANK"
MASTER_ADDR_ENV, MASTER_PORT_ENV = "MASTER_ADDR", "MASTER_PORT"
#: SageMaker's host names: algo-1, algo-2, ... in the order of SM_HOSTS.
HOST_NAME_PREFIX = "algo-"
#: smdebug's worker names: worker_<rank>; the chief (worker_0) writes what is written once.
CHIEF_WORKER = "worker_0"
#: Where a worker other than the chief writes its own debug output, under the job's (smdebug's include_workers="all").
WORKERS_DIR = "workers"


def host_names(count: int) -> list[str]:
    return [f"{HOST_NAME_PREFIX}{index + 1}" for index in range(count)]


def worker_name(rank: int) -> str:
    return f"worker_{rank}"


def check_instance_count(value: Any, *, local: bool = False) -> int:
    """A whole number of instances within the bounds above. Raises ContractError naming instance_count."""
    high = LOCAL_INSTANCE_COUNT_HIGH if local else INSTANCE_COUNT_HIGH
    if isinstance(value, bool) or not isinstance(value, int):
        raise ContractError("instance_count", f"must be a whole number from {INSTANCE_COUNT_LOW} to {high} (got {value!r})")
    if not INSTANCE_COUNT_LOW <= value <= high:
        where = "on the local training platform (one process per instance on this machine)" if local else "per job"
        raise ContractError(
            "instance_count",
            f"must be from {INSTANCE_COUNT_LOW} to {high} {where} (got {value}); each attempt launches them all again",
        )
    return value


def check_distribution(value: Any) -> dict[str, dict[str, bool]]:
    """The SDK's ``distribution`` for PyTorch: ``{}`` or one of ``{"torch_distributed": {"enabled": true}}``,
    ``{"pytorchddp": {"enabled": true}}``. Raises ContractError naming the entry and what is allowed."""
    allowed = ' or '.join(f'{{"{key}": {{"enabled": true}}}}' for key in DISTRIBUTION_HYPERPARAMETERS)
    if not isinstance(value, Mapping):
        raise ContractError("distribution", f"must be a JSON object such as {allowed} (got {type(value).__name__})")
    if len(value) > 1:
        raise ContractError("distribution", f"names one launcher; got {', '.join(sorted(map(str, value)))}")
    checked: dict[str, dict[str, bool]] = {}
    for key, options in value.items():
        where = f"distribution.{key}"
        if key in UNSUPPORTED_DISTRIBUTIONS:
            raise ContractError(
                where, f"is not a launcher this product runs your PyTorch script with; use {allowed}"
            )
        if key not in DISTRIBUTION_HYPERPARAMETERS:
            raise ContractError(where, f"is not a distribution of SageMaker's PyTorch estimator; use {allowed}")
        if not isinstance(options, Mapping) or set(options) - {"enabled"}:
            raise ContractError(where, 'must be {"enabled": true} or {"enabled": false} and nothing else')
        enabled = options.get("enabled", False)
        if not isinstance(enabled, bool):
            raise ContractError(f"{where}.enabled", f"must be true or false (got {enabled!r})")
        checked[key] = {"enabled": enabled}
    return checked


def launcher_of(distribution: Mapping[str, Mapping[str, Any]]) -> str | None:
    """TORCH_DISTRIBUTED, PYTORCH_DDP or None (each host runs the program once)."""
    for key, options in distribution.items():
        if options.get("enabled"):
            return key
    return None


def distribution_hyperparameters(distribution: Mapping[str, Mapping[str, Any]], instance_type: str) -> dict[str, Any]:
    """The hyperparameters the SDK's PyTorch estimator adds for ``distribution`` (before JSON-encoding)."""
    launcher = launcher_of(distribution)
    if launcher is None:
        return {}
    return {DISTRIBUTION_HYPERPARAMETERS[launcher]: True, INSTANCE_TYPE_HYPERPARAMETER: instance_type}


def launcher_from_hyperparameters(hyperparameters: Mapping[str, str]) -> str | None:
    """Which launcher the container picks from a job's (decoded) hyperparameters, as the training toolkit does."""
    for launcher, name in DISTRIBUTION_HYPERPARAMETERS.items():
        if str(hyperparameters.get(name, "")).lower() == "true":
            return launcher
    return None


class Ranked:
    """A training process known by its ``rank`` (set by the subclass): its worker name and whether it is the chief."""

    rank: int

    @property
    def worker(self) -> str:
        return worker_name(self.rank)

    @property
    def is_chief(self) -> bool:
        return self.rank == 0


@dataclasses.dataclass(frozen=True)
class Placement(Ranked):
    """Where one training process stands: its rank among world_size, and the rendezvous (env:// init)."""

    rank: int
    world_size: int
    local_rank: int
    master_addr: str
    master_port: int


def _whole(environ: Mapping[str, str], name: str) -> int:
    text = environ.get(name, "")
    if not text.strip().isdigit():
        raise ContractError(name, f"must be a whole number >= 0 as torchrun sets it (got {text!r})")
    return int(text)


def read_hosts(environ: Mapping[str, str]) -> tuple[list[str], str | None]:
    """(SM_HOSTS, SM_CURRENT_HOST); ([], None) outside SageMaker. Raises ContractError when they disagree."""
    text = environ.get(HOSTS_ENV)
    if not text:
        return [], None
    try:
        hosts = json.loads(text)
    except json.JSONDecodeError:
        hosts = None
    if not isinstance(hosts, list) or not hosts or not all(isinstance(host, str) for host in hosts):
        raise ContractError(HOSTS_ENV, f'must be a JSON list of host names such as ["algo-1", "algo-2"] (got {text!r})')
    current = environ.get(CURRENT_HOST_ENV)
    if current is not None and current not in hosts:
        raise ContractError(CURRENT_HOST_ENV, f"{current!r} is not one of {HOSTS_ENV} {hosts}")
    return hosts, current


def placement_from_environment(environ: Mapping[str, str]) -> Placement | None:
    """This process's place in a multi-process job, or None for a job of one process.

    torchrun and torch.distributed.launch set RANK and WORLD_SIZE; without a launcher, SageMaker's SM_HOSTS and
    SM_CURRENT_HOST give one process per host, ranked in the order of SM_HOSTS, the first host as master
    (MASTER_ADDR / MASTER_PORT when set: the local platform sets them, as algo-1 resolves only inside SageMaker)."""
    hosts, current = read_hosts(environ)
    if RANK_ENV in environ and WORLD_SIZE_ENV in environ:
        rank, world_size = _whole(environ, RANK_ENV), _whole(environ, WORLD_SIZE_ENV)
        local_rank = _whole(environ, LOCAL_RANK_ENV) if LOCAL_RANK_ENV in environ else 0
    elif len(hosts) > 1:
        if current is None:
            raise ContractError(CURRENT_HOST_ENV, f"is not set, so this host's rank among {HOSTS_ENV} {hosts} is unknown")
        rank, world_size, local_rank = hosts.index(current), len(hosts), 0
    else:
        return None
    if world_size < 1 or rank >= world_size:
        raise ContractError(RANK_ENV, f"must be below {WORLD_SIZE_ENV} ({rank} of {world_size})")
    if world_size == 1:
        return None
    master_addr = environ.get(MASTER_ADDR_ENV) or (hosts[0] if hosts else "127.0.0.1")
    master_port = _whole(environ, MASTER_PORT_ENV) if environ.get(MASTER_PORT_ENV) else DEFAULT_MASTER_PORT
    return Placement(rank, world_size, local_rank, master_addr, master_port)


def host_environment(hosts: list[str], index: int, launcher: str | None, master_addr: str, master_port: int) -> dict[str, str]:
    """The variables one host's single training process gets (one process per host: a CPU instance): SageMaker's
    SM_HOSTS / SM_CURRENT_HOST, and with a launcher the ones torchrun or torch.distributed.launch sets."""
    env = {HOSTS_ENV: json.dumps(hosts), CURRENT_HOST_ENV: hosts[index]}
    if len(hosts) > 1 or launcher is not None:
        env.update({MASTER_ADDR_ENV: master_addr, MASTER_PORT_ENV: str(master_port)})
    if launcher is not None:
        env.update(
            {
                RANK_ENV: str(index),
                WORLD_SIZE_ENV: str(len(hosts)),
                LOCAL_RANK_ENV: "0",
                "LOCAL_WORLD_SIZE": "1",
                "GROUP_RANK": str(index),
                "ROLE_RANK": str(index),
                "ROLE_WORLD_SIZE": str(len(hosts)),
            }
        )
    return env

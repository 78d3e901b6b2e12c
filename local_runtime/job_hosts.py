"""A local training job's instances: one process per host (algo-1, algo-2, ...), as SageMaker runs a job with
ResourceConfig.InstanceCount > 1 on CPU instances (one training process per host).

Each host gets SageMaker's view of the cluster (SM_HOSTS, SM_CURRENT_HOST, its own resourceconfig.json) and, when
the job's hyperparameters ask for a launcher (contracts.distributed), the variables torchrun sets (RANK, WORLD_SIZE,
LOCAL_RANK, MASTER_ADDR, MASTER_PORT). Here every host is 127.0.0.1 and the master port a free one: algo-1 resolves
only inside SageMaker's network, and two local jobs must not share a port. The torch backend is the script's choice
(gloo on CPU).

algo-1 keeps the job folder's own layout (training.log, model/, output/failure); every other host has the same under
``hosts/<host>/``: its own log, model and output directories, and input/config. Data channels, the source code and
the checkpoint directory are shared, as each host downloads the same channels and syncs the same checkpoint URI.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from contracts.distributed import host_environment, host_names
from local_runtime.job_process import peak_memory_so_far, reap

LOG_FILE = "training.log"
HOSTS_DIR = "hosts"
LOCAL_HOST_ADDRESS = "127.0.0.1"


@dataclasses.dataclass
class HostProcess:
    """One host of a job and its training process."""

    name: str
    index: int
    directory: Path
    process: subprocess.Popen | None = None
    exit_code: int | None = None  # as subprocess reports it: -N when signal N ended the process
    peak_memory_bytes: int = 0
    ended_at: float | None = None  # time.monotonic()

    @property
    def log_path(self) -> Path:
        return self.directory / LOG_FILE

    @property
    def failure_file(self) -> Path:
        return self.directory / "output" / "failure"

    @property
    def running(self) -> bool:
        return self.process is not None and self.exit_code is None


def job_hosts(job_dir: Path, count: int) -> list[HostProcess]:
    return [
        HostProcess(name, index, job_dir if index == 0 else job_dir / HOSTS_DIR / name)
        for index, name in enumerate(host_names(count))
    ]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((LOCAL_HOST_ADDRESS, 0))
        return probe.getsockname()[1]


def prepare_host_directories(hosts: list[HostProcess], config_dir: Path) -> None:
    """Each host's model, output and input/config directories; input/config as algo-1's with its own resourceconfig."""
    names = [host.name for host in hosts]
    for host in hosts:
        for directory in (host.directory / "model", host.directory / "output" / "data"):
            directory.mkdir(parents=True, exist_ok=True)
        own_config = host.directory / "input" / "config"
        if own_config != config_dir:
            shutil.copytree(config_dir, own_config, dirs_exist_ok=True)
        resource = {"current_host": host.name, "hosts": names, "network_interface_name": "lo"}
        (own_config / "resourceconfig.json").write_text(json.dumps(resource, indent=2))


def host_variables(
    host: HostProcess, hosts: list[HostProcess], launcher: str | None, master_port: int, threads: int
) -> dict[str, str]:
    """What differs per host in a job's environment: its directories, the cluster, its share of the CPU threads."""
    env = host_environment([item.name for item in hosts], host.index, launcher, LOCAL_HOST_ADDRESS, master_port)
    env.update(
        {
            "SM_MODEL_DIR": str(host.directory / "model"),
            "SM_OUTPUT_DIR": str(host.directory / "output"),
            "SM_OUTPUT_DATA_DIR": str(host.directory / "output" / "data"),
            "SM_INPUT_CONFIG_DIR": str(host.directory / "input" / "config"),
            "TRAINING_FAILURE_FILE": str(host.failure_file),
            "SM_NUM_CPUS": str(threads),
            "TRAINING_NUM_THREADS": str(threads),
            "OMP_NUM_THREADS": str(threads),
        }
    )
    return env


class HostGroup:
    """The processes of one job's hosts: reaped together, signalled together."""

    def __init__(self, hosts: list[HostProcess]):
        self.hosts = hosts

    @property
    def processes(self) -> list[subprocess.Popen]:
        return [host.process for host in self.hosts if host.process is not None]

    def poll(self) -> None:
        """Reap the hosts whose process ended; note each one's peak memory."""
        for host in self.hosts:
            if not host.running:
                continue
            ended = reap(host.process)
            if ended is None:
                host.peak_memory_bytes = max(host.peak_memory_bytes, peak_memory_so_far(host.process.pid))
                continue
            host.exit_code, peak = ended
            host.peak_memory_bytes = max(host.peak_memory_bytes, peak)
            host.ended_at = time.monotonic()

    @property
    def all_ended(self) -> bool:
        return all(host.exit_code is not None for host in self.hosts if host.process is not None)

    def first_failure(self) -> HostProcess | None:
        """The host whose process ended first with a non-zero code (it decides the job's failure), or None."""
        failed = [host for host in self.hosts if host.exit_code not in (None, 0)]
        return min(failed, key=lambda host: (host.ended_at, host.index)) if failed else None

    def signal(self, sig: int, *, running_only: bool = True) -> None:
        """``sig`` to each host's process group (each job process leads its own session)."""
        for host in self.hosts:
            if host.process is None or (running_only and not host.running):
                continue
            try:
                os.killpg(host.process.pid, sig)
            except ProcessLookupError:
                pass

    def kill(self) -> None:
        """SIGKILL every group, ended or not: a process's children end with the job."""
        self.signal(signal.SIGKILL, running_only=False)

    @property
    def peak_memory_bytes(self) -> int:
        return max((host.peak_memory_bytes for host in self.hosts), default=0)

"""A local SageMaker training platform: CreateTrainingJob / DescribeTrainingJob / StopTrainingJob.

It answers the same requests (already validated by botocore against the real
schema, see ``local_runtime.sagemaker_api``) with the same response shapes and
status vocabulary, and runs the job for real: the entry point from
``sagemaker_submit_directory`` runs as ``python train.py --name value ...`` in its
own process session, with the SageMaker container contract mapped to
directories of one job folder (``input/config``, ``input/data/<channel>``,
``model``, ``output``).

S3 is whatever S3 the given client talks to (moto's in local mode). Inputs are
read from it; outputs the job writes under the local mirror of a bucket
(``<root>/buckets/<bucket>/<key>``: debug output, checkpoints, model.tar.gz)
are copied into it on every Describe and when the job ends, as SageMaker's
uploads would make them appear.

This module is the API and each job's lifecycle; the parts it runs a job with:

    training_job      the job's record: request, statuses, S3 locations, the bucket mirror
    job_staging       the container contract: config files, code, channels, checkpoints restored, environment
    job_supervisor    the processes: start, watch (max runtime, grace periods), stop, kill
    job_interruptions spot interruptions a local job asked for: when its instance is reclaimed
    job_log           the job's log: metrics (MetricDefinitions) and progress lines
    job_outputs       what it leaves in S3: the outputs mirrored, model.tar.gz
    job_description   DescribeTrainingJob's answer (and legacy mode's rule statuses)
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from contracts import ContractError
from contracts.bucket_layout import split_s3_uri
from contracts.distributed import LOCAL_INSTANCE_COUNT_HIGH, launcher_from_hyperparameters
from contracts.job import decode_hyperparameter, killed_process_failure_text, script_mode_arguments
from contracts.rule_status import RULE_STATUS_FILE, RuleStatusDocument
from local_runtime import job_outputs, job_staging, job_supervisor
from local_runtime.botocore_dispatch import ServiceError
from local_runtime.job_description import describe
from local_runtime.job_hosts import HostGroup, HostProcess, free_port, host_variables, job_hosts
from local_runtime.job_interruptions import InterruptionSchedule, note_restart, requested_interruptions
from local_runtime.job_log import log_tail
from local_runtime.job_process import format_bytes
from local_runtime.offline_aws import ACCOUNT_ID
from local_runtime.training_job import (
    COMPLETED,
    FAILED,
    STOPPED,
    STOPPING,
    BucketMirror,
    TrainingJobRecord,
    debug_output_uri,
    now,
)

DEFAULT_STOP_GRACE_SECONDS = 10.0


class SageMakerError(ServiceError):
    """An error as SageMaker returns it: through the dispatch seam botocore raises ClientError with this code."""


class LocalTrainingPlatform:
    """Runs training jobs as local subprocesses behind SageMaker's training API."""

    def __init__(
        self,
        root: Path,
        s3_client_factory: Callable[[], Any],
        *,
        region: str = "us-east-1",
        num_threads: int | None = None,
        stop_grace_seconds: float = DEFAULT_STOP_GRACE_SECONDS,
        python: str = sys.executable,
        on_status_change: Callable[[dict[str, Any]], None] | None = None,
    ):
        self.root = Path(root).resolve()  # jobs run in their own working directory
        self.mirror = BucketMirror(self.root)
        #: Called with the job's description when its TrainingJobStatus changes (to Stopping, and to its final status
        #: once its outputs are in S3), as SageMaker sends "SageMaker Training Job State Change" to EventBridge.
        #: Called with the job's lock held (Stopping): it must only hand the description on.
        self.on_status_change = on_status_change
        self.region = region
        self.num_threads = num_threads or max(1, os.cpu_count() or 1)
        self.stop_grace_seconds = stop_grace_seconds
        self.python = python
        self._s3_client_factory = s3_client_factory
        self._s3 = None
        self._s3_lock = threading.Lock()
        self._lock = threading.RLock()
        self._jobs: dict[str, TrainingJobRecord] = {}
        self._shutting_down = False

    # ------------------------------------------------------------------ paths and S3

    def bucket_dir(self, bucket: str) -> Path:
        return self.mirror.bucket_dir(bucket)

    def local_path_for(self, s3_uri: str) -> Path:
        return self.mirror.local_path(s3_uri)

    def job_dir(self, name: str) -> Path:
        return self.root / "jobs" / name

    def _client(self):
        with self._s3_lock:
            if self._s3 is None:
                self._s3 = self._s3_client_factory()
            return self._s3

    # ------------------------------------------------------------------ the API

    def create_training_job(self, **request: Any) -> dict[str, Any]:
        name = request["TrainingJobName"]
        hyperparameters = {
            key: decode_hyperparameter(value) for key, value in request.get("HyperParameters", {}).items()
        }
        for required in ("sagemaker_submit_directory", "sagemaker_program"):
            if required not in hyperparameters:
                raise SageMakerError(
                    "ValidationException",
                    f"HyperParameters.{required} is required by the local platform (script mode): "
                    "set it to the source archive's s3:// URI and the entry point file",
                )
        try:
            split_s3_uri(hyperparameters["sagemaker_submit_directory"])
        except ValueError as error:
            raise SageMakerError(
                "ValidationException", f"HyperParameters.sagemaker_submit_directory: {error}"
            ) from None
        instance_count = request.get("ResourceConfig", {}).get("InstanceCount", 1)
        if not 1 <= instance_count <= LOCAL_INSTANCE_COUNT_HIGH:
            raise SageMakerError(
                "ValidationException",
                f"ResourceConfig.InstanceCount: the local platform runs 1 to {LOCAL_INSTANCE_COUNT_HIGH} instances, each "
                f"a process on this machine (got {instance_count})",
            )
        try:
            spot_interruptions = requested_interruptions(request)
        except ContractError as error:
            raise SageMakerError("ValidationException", str(error)) from None
        arn = f"arn:aws:sagemaker:{self.region}:{ACCOUNT_ID}:training-job/{name.lower()}"
        with self._lock:
            if self._shutting_down:
                raise SageMakerError("ThrottlingException", "the local training platform is shutting down")
            if name in self._jobs:
                raise SageMakerError(
                    "ResourceInUse",
                    f"Training job names must be unique within an AWS account and region, and a training job with "
                    f"this name already exists ({arn})",
                )
            job = TrainingJobRecord(
                name=name,
                arn=arn,
                request=request,
                job_dir=self.job_dir(name),
                created=now(),
                hyperparameters=hyperparameters,
                debug_output_uri=debug_output_uri(request, hyperparameters),
                hosts=job_hosts(self.job_dir(name), instance_count),
                spot_interruptions=spot_interruptions,
            )
            job.transition("Starting")
            self._jobs[name] = job
        job.worker = threading.Thread(target=self._run_job, args=(job,), name=f"training-job-{name}", daemon=True)
        job.worker.start()
        return {"TrainingJobArn": arn}

    def describe_training_job(self, TrainingJobName: str) -> dict[str, Any]:
        job = self._job(TrainingJobName)
        self.sync_outputs(job)
        self.read_progress(job)
        with job.lock:
            return self._describe(job)

    def stop_training_job(self, TrainingJobName: str) -> dict[str, Any]:
        job = self._job(TrainingJobName)
        with job.lock:
            if job.ended or job.status == STOPPING:
                raise SageMakerError(
                    "ValidationException",
                    f"The request was rejected because the training job is in status {job.status}.",
                )
            self._request_stop(job, "StopTrainingJob")
        return {}

    def list_tags(self, ResourceArn: str) -> dict[str, Any]:  # noqa: N803 - SageMaker's parameter name
        """The tags a training job was created with (the workflow reads them to prove a job is its own)."""
        with self._lock:
            job = next((job for job in self._jobs.values() if job.arn == ResourceArn), None)
        if job is None:
            raise SageMakerError("ValidationException", f"Requested resource not found: {ResourceArn}")
        return {"Tags": [dict(tag) for tag in job.request.get("Tags", [])]}

    # ------------------------------------------------------------------ queries for the runtime and CLI

    def job_names(self) -> list[str]:
        with self._lock:
            return list(self._jobs)

    def job(self, name: str) -> TrainingJobRecord:
        return self._job(name)

    def running_process_ids(self) -> list[int]:
        with self._lock:
            jobs = list(self._jobs.values())
        return [process.pid for job in jobs for process in HostGroup(job.hosts).processes if process.poll() is None]

    def seconds_with_a_process_running(self) -> float:
        """Wall seconds during which at least one training process ran (the union of their lifetimes).

        A stopped job may still be exiting while the next one starts; the union counts that overlap once.
        """
        with self._lock:
            jobs = list(self._jobs.values())
        now_ = time.monotonic()
        return job_supervisor.seconds_with_a_process_running(
            [(job.process_started, job.process_ended or now_) for job in jobs if job.process_started is not None]
        )

    def read_progress(self, job: TrainingJobRecord) -> dict[str, Any]:
        """Parse the log lines written since the last call; return the latest step and epoch records."""
        with job.lock:
            job.log.read(job.request.get("AlgorithmSpecification", {}).get("MetricDefinitions", []))
            return job.log.latest()

    def debug_output_dir(self, job: TrainingJobRecord) -> Path:
        """Where the job's debugger writes (the local mirror of its S3 debug output)."""
        if job.debug_output_uri:
            return self.local_path_for(job.debug_output_uri)
        return job.job_dir / "output" / "tensors"

    def rule_status_document(self, job: TrainingJobRecord) -> RuleStatusDocument | None:
        """The job's rule-status document as its debugger last wrote it, or None (not written, or unreadable)."""
        try:
            return RuleStatusDocument.from_json((self.debug_output_dir(job) / RULE_STATUS_FILE).read_bytes())
        except (OSError, ContractError):
            return None

    def tensorboard_dir(self, job: TrainingJobRecord) -> Path | None:
        """The job's TensorBoard LocalPath here (see ``job_outputs.tensorboard_dir``)."""
        return job_outputs.tensorboard_dir(job, self.mirror)

    def sync_outputs(self, job: TrainingJobRecord) -> None:
        """Copy new or changed files of the job's output directories into S3; delete vanished ones."""
        job_outputs.sync_outputs(job, self._client)

    def shutdown(self, timeout: float | None = None) -> None:
        """Refuse new jobs, stop every running one (SIGTERM, SIGKILL after the grace period), wait for them."""
        with self._lock:
            self._shutting_down = True
            jobs = list(self._jobs.values())
        for job in jobs:
            with job.lock:
                if not job.ended and job.status != STOPPING:
                    self._request_stop(job, "shutdown")
        deadline = time.monotonic() + (timeout if timeout is not None else self.stop_grace_seconds + 10)
        for job in jobs:
            if job.worker is not None:
                job.worker.join(max(0.0, deadline - time.monotonic()))
            for process in HostGroup(job.hosts).processes:
                if process.poll() is None:
                    job_supervisor.kill_group(process, signal.SIGKILL)
                    process.wait()

    # ------------------------------------------------------------------ a job's lifecycle

    def _job(self, name: str) -> TrainingJobRecord:
        with self._lock:
            job = self._jobs.get(name)
        if job is None:
            raise SageMakerError("ValidationException", "Requested resource not found.")
        return job

    def _describe(self, job: TrainingJobRecord) -> dict[str, Any]:
        return describe(job, self.region, self.mirror)

    def _request_stop(self, job: TrainingJobRecord, reason: str) -> None:
        """Caller holds job.lock."""
        job.stop_reason = reason
        job.status = STOPPING
        if reason != "MaxRuntimeExceeded":  # SageMaker goes straight to its MaxRuntimeExceeded secondary status
            job.transition("Stopping")
        HostGroup(job.hosts).signal(signal.SIGTERM)  # every host's process: the job stops as one
        self._announce(job)

    def _announce(self, job: TrainingJobRecord) -> None:
        if self.on_status_change is not None:
            with job.lock:
                described = self._describe(job)
            try:
                self.on_status_change(described)
            except Exception:  # noqa: BLE001 - a listener's failure must not change the job
                pass

    def _run_job(self, job: TrainingJobRecord) -> None:
        try:
            self._prepare(job)
            self._train(job)
        except Exception as error:  # the platform's own failure: the job fails with a reason, as SageMaker's would
            with job.lock:
                HostGroup(job.hosts).kill()
                if not job.ended:
                    job.failure_reason = f"ClientError: {error}"
                    job.finish(FAILED, "Failed", f"Training job failed. Reason: {job.failure_reason}")
        finally:
            try:
                self.read_progress(job)
                self.sync_outputs(job)
            except Exception:  # noqa: BLE001 - outputs are best effort once the job has ended
                pass
            self._announce(job)  # its final status, now that what it wrote is in S3

    def _prepare(self, job: TrainingJobRecord) -> None:
        with job.lock:
            if job.status == STOPPING:
                return
            job.transition("Downloading")
        job_staging.stage_inputs(job, self.mirror, self._client)
        with job.lock:
            job.outputs = job_outputs.output_locations(job, self.mirror)
            for output in job.outputs:
                output.local_dir.mkdir(parents=True, exist_ok=True)

    def _train(self, job: TrainingJobRecord) -> None:
        hyperparameters = job.hyperparameters
        debug_dir = self.debug_output_dir(job)
        debug_dir.mkdir(parents=True, exist_ok=True)
        program = hyperparameters["sagemaker_program"]
        arguments = script_mode_arguments(job.request.get("HyperParameters", {}))
        env = job_staging.environment(job, self.mirror, debug_dir, self.num_threads, os.getpid())
        max_runtime = job.request.get("StoppingCondition", {}).get("MaxRuntimeInSeconds")
        hosts = job.hosts
        launcher = launcher_from_hyperparameters(hyperparameters)
        master_port = free_port() if len(hosts) > 1 or launcher else 0
        threads = max(1, self.num_threads // len(hosts))  # the hosts share this machine's cores
        schedule = InterruptionSchedule(job.spot_interruptions, debug_dir)
        started: float | None = None
        while True:  # once, and again after each spot interruption
            with job.lock:
                if job.status == STOPPING and started is None:  # stopped before the process could start
                    job.finish(STOPPED, "Stopped")
                    return
                if job.status == STOPPING:  # stopped while it was restarting: it ends as it was left
                    break
                job.transition("Training")
                if started is None:
                    job.training_start = now()
                    started = time.monotonic()
                    job.process_started = started
                schedule.start_run()
                for host in hosts:
                    host_env = {**env, **host_variables(host, hosts, launcher, master_port, threads),
                                **job_staging.opt_ml_variables(job, self.mirror, host.directory)}  # fmt: skip
                    host.process = job_supervisor.start_process(
                        self.python, program, arguments, job.job_dir / "code", host_env, host.log_path
                    )
                job.process = hosts[0].process
            reclaimed = job_supervisor.watch(
                job,
                started=started,
                max_runtime=max_runtime,
                stop_grace_seconds=self.stop_grace_seconds,
                request_stop=lambda reason: self._request_stop(job, reason),
                reclaim_due=lambda: self._interruption_due(job, schedule),
            )
            if not reclaimed:
                break
            self._restart(job)
        group = HostGroup(hosts)
        failed = group.first_failure()
        exit_code = failed.exit_code if failed is not None else 0
        with job.lock:
            job.exit_code = exit_code
            job.peak_memory_bytes = group.peak_memory_bytes or None
            job.process_ended = time.monotonic()
            job.process_seconds = job.process_ended - started
        self._conclude(job, exit_code, failed or hosts[0])

    def _interruption_due(self, job: TrainingJobRecord, schedule: InterruptionSchedule) -> bool:
        """Whether the job's next spot interruption is due (it is then recorded as happened)."""
        return schedule.reclaim_due(job, lambda: self.read_progress(job))

    def _restart(self, job: TrainingJobRecord) -> None:
        """After a spot interruption: what the reclaimed instance had written is in S3 (SageMaker uploads the
        checkpoint directory as the job writes it), the job's new instance gets its checkpoint directory from the
        checkpoint S3Uri, and the job trains again (SecondaryStatus Interrupted, Restarting, then Training)."""
        self.read_progress(job)
        with job.lock:
            interruption = job.interruptions[-1]
            job.transition("Interrupted")
            self.sync_outputs(job)
            job.transition("Restarting")
            restored = job_staging.restore_checkpoints(job, self.mirror, self._client)
            interruption["restored_files"] = restored
            for host in job.hosts:
                host.process, host.exit_code, host.ended_at = None, None, None
            job.log.restarted()
            note_restart(job)

    def _conclude(self, job: TrainingJobRecord, exit_code: int, host: HostProcess) -> None:
        """The job's end from the exit code of ``host``: the first host that failed, else algo-1."""
        with job.lock:
            stop_reason = job.stop_reason
        if stop_reason is None and exit_code < 0:
            # A signal the platform did not send: the kernel's out-of-memory killer (SIGKILL) is the common case.
            killer = signal.Signals(-exit_code)
            with job.lock:
                job.killed_by_signal = killer.name
                peak = format_bytes(job.peak_memory_bytes) if job.peak_memory_bytes else None
            reason = (
                f"{killed_process_failure_text(killer.name, killer.value, peak)}. {log_tail(host.log_path)}".strip()
            )
            with job.lock:
                job.failure_reason = reason[:1024]
                job.finish(FAILED, "Failed", f"Training job failed. Reason: {job.failure_reason}")
            return
        if stop_reason is None and exit_code != 0:
            failure_file = host.failure_file
            reason = failure_file.read_text(errors="replace").strip() if failure_file.exists() else ""
            if not reason:
                reason = (
                    f"AlgorithmError: the entry point exited with code {exit_code}. {log_tail(host.log_path)}".strip()
                )
            if len(job.hosts) > 1:  # several hosts ran: say which one failed first
                reason = f"{reason} (on {host.name})"
            with job.lock:
                job.failure_reason = reason[:1024]
                job.finish(FAILED, "Failed", f"Training job failed. Reason: {job.failure_reason}")
            return
        if stop_reason is None:
            with job.lock:
                job.transition("Uploading")
        job_outputs.package_model(job, self.mirror)
        self.sync_outputs(job)
        with job.lock:
            if stop_reason is None:
                job.finish(COMPLETED, "Completed")
            else:
                job.finish(STOPPED, "MaxRuntimeExceeded" if stop_reason == "MaxRuntimeExceeded" else "Stopped")

"""The local training platform with ResourceConfig.InstanceCount > 1: one process per host, started, stopped and
concluded together, each with SageMaker's view of the cluster and its own log."""

from __future__ import annotations

import json
import time

import pytest
from botocore.exceptions import ClientError

from contracts.distributed import LOCAL_INSTANCE_COUNT_HIGH

from .conftest import BUCKET, process_alive
from .test_training_platform import request, wait_for, wait_for_secondary


def reports(sagemaker, s3, name: str, count: int, timeout: float = 20.0) -> dict[str, dict]:
    """Each host's report (the fixture writes report.json on algo-1, report-algo-N.json on the others), in S3 once a
    Describe has synced the job's outputs."""
    keys = {"algo-1": f"debug-output/{name}/report.json"}
    keys.update({f"algo-{index}": f"debug-output/{name}/report-algo-{index}.json" for index in range(2, count + 1)})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sagemaker.describe_training_job(TrainingJobName=name)
        try:
            return {host: json.loads(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()) for host, key in keys.items()}
        except ClientError:
            time.sleep(0.1)
    raise AssertionError(f"not every host of {name} reported in {timeout}s")


def two_hosts(name: str, **hyperparameters: str) -> dict:
    body = request(name, mode=hyperparameters.pop("mode", "complete"))
    body["HyperParameters"].update(hyperparameters)
    body["ResourceConfig"]["InstanceCount"] = 2
    return body


def test_each_host_runs_with_sagemakers_view_of_the_cluster_and_the_launchers_rendezvous(platform_env):
    platform, sagemaker, s3 = platform_env
    name = "remediation-hosts-1"
    body = two_hosts(name, sagemaker_torch_distributed_enabled=json.dumps("true"))
    sagemaker.create_training_job(**body)
    described = wait_for(sagemaker, name)
    assert described["TrainingJobStatus"] == "Completed"
    assert described["ResourceConfig"]["InstanceCount"] == 2
    found = reports(sagemaker, s3, name, 2)
    first, second = found["algo-1"]["cluster"], found["algo-2"]["cluster"]
    assert first["SM_HOSTS"] == second["SM_HOSTS"] == json.dumps(["algo-1", "algo-2"])
    assert (first["SM_CURRENT_HOST"], second["SM_CURRENT_HOST"]) == ("algo-1", "algo-2")
    assert (first["RANK"], second["RANK"], first["WORLD_SIZE"]) == ("0", "1", "2")  # as torchrun sets them
    assert first["MASTER_ADDR"] == second["MASTER_ADDR"] == "127.0.0.1"
    assert first["MASTER_PORT"] == second["MASTER_PORT"] and int(first["MASTER_PORT"]) > 0
    assert found["algo-2"]["resourceconfig"]["current_host"] == "algo-2"
    assert found["algo-2"]["resourceconfig"]["hosts"] == ["algo-1", "algo-2"]
    job = platform.job(name)
    assert job.hosts[1].log_path.read_text().count("training_step") == 3  # each host its own log
    assert [host.exit_code for host in job.hosts] == [0, 0]


def test_without_a_launcher_the_hosts_get_no_rank_but_a_reachable_master(platform_env):
    _, sagemaker, s3 = platform_env
    sagemaker.create_training_job(**two_hosts("remediation-hosts-2"))
    wait_for(sagemaker, "remediation-hosts-2")
    cluster = reports(sagemaker, s3, "remediation-hosts-2", 2)["algo-2"]["cluster"]
    assert cluster["RANK"] is None and cluster["WORLD_SIZE"] is None  # SageMaker runs the program once per host
    assert cluster["MASTER_ADDR"] == "127.0.0.1"  # algo-1 resolves only inside SageMaker's network


def test_stopping_a_job_stops_every_hosts_process(platform_env):
    platform, sagemaker, s3 = platform_env
    name = "remediation-hosts-stop"
    sagemaker.create_training_job(**two_hosts(name, mode="run_until_stopped"))
    wait_for_secondary(sagemaker, name, "Training")
    found = reports(sagemaker, s3, name, 2)
    pids = [found[host]["pid"] for host in ("algo-1", "algo-2")]
    children = [found[host]["child_pid"] for host in ("algo-1", "algo-2")]
    assert sorted(platform.running_process_ids()) == sorted(pids)
    sagemaker.stop_training_job(TrainingJobName=name)
    described = wait_for(sagemaker, name, timeout=300)
    assert described["TrainingJobStatus"] == "Stopped"
    assert not any(process_alive(pid) for pid in pids + children)


def test_a_host_that_fails_fails_the_job_and_its_peers_are_stopped(platform_env):
    platform, sagemaker, s3 = platform_env
    name = "remediation-hosts-fail"
    sagemaker.create_training_job(**two_hosts(name, mode="run_until_stopped", mode_algo_2=json.dumps("fail")))
    described = wait_for(sagemaker, name, timeout=300)
    assert described["TrainingJobStatus"] == "Failed"
    assert described["FailureReason"] == "ValueError: the fixture was asked to fail (on algo-2)"
    job = platform.job(name)
    assert job.hosts[1].exit_code == 1 and job.hosts[0].exit_code == 143  # algo-1 got SIGTERM after the grace period
    assert platform.running_process_ids() == []


def test_more_instances_than_the_local_platform_runs_are_refused(platform_env):
    _, sagemaker, _ = platform_env
    body = request("remediation-hosts-many")
    body["ResourceConfig"]["InstanceCount"] = LOCAL_INSTANCE_COUNT_HIGH + 1
    with pytest.raises(ClientError) as refused:
        sagemaker.create_training_job(**body)
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert "ResourceConfig.InstanceCount" in refused.value.response["Error"]["Message"]

"""instance_count and distribution in a run_spec, and where a training process stands (contracts.distributed)."""

from __future__ import annotations

import json

import pytest

from contracts import ContractError
from contracts.distributed import (
    INSTANCE_COUNT_HIGH,
    LOCAL_INSTANCE_COUNT_HIGH,
    check_instance_count,
    distribution_hyperparameters,
    host_environment,
    launcher_from_hyperparameters,
    placement_from_environment,
)
from contracts.job import decode_hyperparameter, encode_hyperparameters
from lambdas.remediation.execution_input import InvalidExecutionInput, initial_state

INPUT = {
    "bucket": "remediation-artifacts",
    "region": "eu-west-1",
    "sm_role": "arn:aws:iam::123456789012:role/SageMakerExecutionRole",
}


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (0, "must be from 1 to 20 per job (got 0)"),
        (INSTANCE_COUNT_HIGH + 1, f"must be from 1 to 20 per job (got {INSTANCE_COUNT_HIGH + 1})"),
        (-2, "(got -2)"),
        ("2", "must be a whole number from 1 to 20 (got '2')"),
        (True, "must be a whole number"),
        (1.5, "(got 1.5)"),
        (None, "(got None)"),
    ],
)
def test_a_bad_instance_count_is_refused_naming_the_field_and_the_bounds(value, says):
    with pytest.raises(InvalidExecutionInput) as raised:
        initial_state({**INPUT, "instance_count": value})
    assert "instance_count" in raised.value.problems
    assert says in raised.value.problems["instance_count"]


def test_the_local_platform_takes_fewer_instances_than_the_cloud():
    assert check_instance_count(LOCAL_INSTANCE_COUNT_HIGH, local=True) == LOCAL_INSTANCE_COUNT_HIGH
    with pytest.raises(ContractError, match="on the local training platform") as raised:
        check_instance_count(LOCAL_INSTANCE_COUNT_HIGH + 1, local=True)
    assert raised.value.field == "instance_count"


@pytest.mark.parametrize(
    ("distribution", "field", "says"),
    [
        ({"mpi": {"enabled": True}}, "distribution.mpi", "not a launcher this product runs"),
        ({"smdistributed": {"dataparallel": {"enabled": True}}}, "distribution.smdistributed", "torch_distributed"),
        ({"torch_distributed": True}, "distribution.torch_distributed", 'must be {"enabled": true}'),
        ({"torch_distributed": {"enabled": "true"}}, "distribution.torch_distributed.enabled", "true or false"),
        ({"torch_distributed": {"enabled": True, "nproc": 2}}, "distribution.torch_distributed", "nothing else"),
        ({"torchrun": {"enabled": True}}, "distribution.torchrun", "not a distribution of SageMaker's PyTorch"),
        (
            {"torch_distributed": {"enabled": True}, "pytorchddp": {"enabled": True}},
            "distribution",
            "names one launcher",
        ),
        ("torchrun", "distribution", "must be a JSON object"),
    ],
)
def test_a_bad_distribution_is_refused_naming_the_entry(distribution, field, says):
    with pytest.raises(InvalidExecutionInput) as raised:
        initial_state({**INPUT, "distribution": distribution})
    assert field in raised.value.problems, raised.value.problems
    assert says in raised.value.problems[field]


def test_the_run_spec_keeps_instance_count_and_distribution_and_defaults_to_one_instance():
    state = initial_state({**INPUT, "instance_count": 2, "distribution": {"pytorchddp": {"enabled": True}}})
    assert state.run_spec.instance_count == 2
    assert state.run_spec.distribution == {"pytorchddp": {"enabled": True}}
    single = initial_state(INPUT).run_spec
    assert (single.instance_count, single.distribution) == (1, {})


def test_the_launcher_hyperparameters_round_trip_through_the_containers_encoding():
    sent = encode_hyperparameters(distribution_hyperparameters({"torch_distributed": {"enabled": True}}, "ml.c5.xlarge"))
    decoded = {name: decode_hyperparameter(value) for name, value in sent.items()}
    assert decoded == {"sagemaker_torch_distributed_enabled": "true", "sagemaker_instance_type": "ml.c5.xlarge"}
    assert launcher_from_hyperparameters(decoded) == "torch_distributed"
    assert distribution_hyperparameters({"torch_distributed": {"enabled": False}}, "ml.c5.xlarge") == {}
    assert launcher_from_hyperparameters({}) is None


def test_a_process_placed_by_torchrun_reads_its_rank_and_rendezvous():
    env = host_environment(["algo-1", "algo-2"], 1, "torch_distributed", "10.0.0.1", 7777)
    placement = placement_from_environment(env)
    assert (placement.rank, placement.world_size, placement.worker, placement.is_chief) == (1, 2, "worker_1", False)
    assert (placement.master_addr, placement.master_port) == ("10.0.0.1", 7777)


def test_without_a_launcher_each_host_is_ranked_in_the_order_of_sm_hosts_with_the_first_as_master():
    env = {"SM_HOSTS": json.dumps(["algo-1", "algo-2", "algo-3"]), "SM_CURRENT_HOST": "algo-3"}
    placement = placement_from_environment(env)
    assert (placement.rank, placement.world_size, placement.master_addr, placement.master_port) == (2, 3, "algo-1", 7777)
    assert placement_from_environment({"SM_HOSTS": '["algo-1"]', "SM_CURRENT_HOST": "algo-1"}) is None
    assert placement_from_environment({}) is None


@pytest.mark.parametrize(
    ("env", "field"),
    [
        ({"SM_HOSTS": '["algo-1", "algo-2"]', "SM_CURRENT_HOST": "algo-9"}, "SM_CURRENT_HOST"),
        ({"SM_HOSTS": '["algo-1", "algo-2"]'}, "SM_CURRENT_HOST"),
        ({"SM_HOSTS": "algo-1,algo-2"}, "SM_HOSTS"),
        ({"RANK": "one", "WORLD_SIZE": "2"}, "RANK"),
        ({"RANK": "2", "WORLD_SIZE": "2"}, "RANK"),
    ],
)
def test_an_inconsistent_environment_is_named(env, field):
    with pytest.raises(ContractError) as raised:
        placement_from_environment(env)
    assert raised.value.field == field

"""Real training jobs in subprocesses, through the container contract (python -m model.train)."""

from __future__ import annotations

import json
import math
import re
import signal
import subprocess

import pytest
import torch
from example_job import launcher_arguments

from contracts.rule_status import ISSUES_FOUND, NO_ISSUES_FOUND, RULE_STATUS_FILE, RuleStatusDocument
from model.data import load_channel
from model.train import EXIT_ERROR, EXIT_RULE_STOP, EXIT_SUCCESS, EXIT_TERMINATED, load_model, to_model_input

#: StopTrainingJob: SageMaker sends SIGTERM, then ends the container 120 s later.
STOP_GRACE_SECONDS = 120

pytestmark = pytest.mark.training

STOP_TRAINING = re.compile(r"^StopTraining: rule (\w+) found an issue at step (\d+): \S")

LAMBDA_HOOK_CONFIG = {
    "S3OutputPath": "s3://artifacts/debug-output/test-job/",
    "HookParameters": {"save_interval": "500"},
    "CollectionConfigurations": [{"CollectionName": "gradients"}, {"CollectionName": "losses"}],
}
LAMBDA_RULE_CONFIGS = [
    {
        "RuleConfigurationName": "ExplodingTensor",
        "RuleParameters": {"rule_to_invoke": "ExplodingTensor", "action_json": '[{"name":"StopTraining"}]'},
    },
    {"RuleConfigurationName": "LossNotDecreasing", "RuleParameters": {"rule_to_invoke": "LossNotDecreasing"}},
]


def first_non_finite_gradient_step(job) -> int:
    return next(line["step"] for line in job.steps if not math.isfinite(line["gradient_norm"]))


def read_rule_status(job_dirs) -> RuleStatusDocument:
    return RuleStatusDocument.from_json((job_dirs.debug_output / RULE_STATUS_FILE).read_text())


@pytest.mark.parametrize("configured_by", ["defaults", "train_lambda"])
def test_no_batch_norm_at_warmup_0_1_explodes_and_is_stopped_at_the_first_non_finite_gradient(
    small_channels, job_dirs, configured_by, run_training_job
):
    arguments = ["--warmup_learning_rate", "0.1", "--num_epochs", "2"]
    launcher = configured_by == "train_lambda"
    if launcher:
        arguments = launcher_arguments(LAMBDA_HOOK_CONFIG, LAMBDA_RULE_CONFIGS) + arguments
    job = run_training_job(arguments, job_dirs.environment(small_channels), cwd=job_dirs.root, launcher=launcher)

    assert job.exit_code == EXIT_RULE_STOP, job.stderr
    if configured_by == "defaults":
        assert "the default rule ExplodingTensor with action StopTraining" in job.stdout
    else:
        assert "debugger: hook configuration" in job.stdout and "rules ExplodingTensor, LossNotDecreasing" in job.stdout
    explosion_step = first_non_finite_gradient_step(job)
    assert explosion_step < 4  # within the first epoch (4 steps of 128 over 512 samples)
    failure = job_dirs.failure.read_text()
    match = STOP_TRAINING.match(failure)
    assert match, failure
    assert (match.group(1), int(match.group(2))) == ("ExplodingTensor", explosion_step)
    assert job.steps[-1]["step"] == explosion_step  # no step after the stop
    assert [line["step"] for line in job.steps] == list(range(explosion_step + 1))
    assert all(math.isfinite(line["gradient_norm"]) for line in job.steps[:-1])
    assert job.steps[0]["loss"] > 3  # badly scaled at init: far above ln(10)
    assert job.epochs == []
    assert not (job_dirs.model / "model.pt").exists()

    status = read_rule_status(job_dirs)
    exploding = next(rule for rule in status.rules if rule.RuleConfigurationName == "ExplodingTensor")
    assert exploding.RuleEvaluationStatus == ISSUES_FOUND
    assert exploding.issue.step == explosion_step and exploding.issue.phase == "warmup"
    assert status.evidence.first_issue_step == explosion_step
    assert status.evidence.initial_loss == pytest.approx(job.steps[0]["loss"], rel=1e-4)
    assert status.evidence.initial_gradient_norm == pytest.approx(job.steps[0]["gradient_norm"], rel=1e-3)


def test_batch_norm_at_warmup_0_1_trains_two_epochs_and_no_rule_fires(medium_channels, job_dirs, run_training_job):
    arguments = launcher_arguments({"HookParameters": {"save_interval": "10"}}, LAMBDA_RULE_CONFIGS)
    arguments += ["--warmup_learning_rate", "0.1", "--add_batch_norm", "true", "--num_epochs", "2"]
    job = run_training_job(arguments, job_dirs.environment(medium_channels), cwd=job_dirs.root, launcher=True)

    assert job.exit_code == EXIT_SUCCESS, job.stderr
    assert not job_dirs.failure.exists()
    assert "device: cpu (torch sees no CUDA device)" in job.stdout  # this machine has no GPU, and says so
    assert [line["epoch"] for line in job.epochs] == [0, 1]
    assert [line["step"] for line in job.steps] == list(range(16))
    assert {line["phase"] for line in job.steps if line["epoch"] == 0} == {"warmup"}
    assert all(math.isfinite(line["gradient_norm"]) for line in job.steps)
    first_loss = job.steps[0]["loss"]
    last_losses = [line["loss"] for line in job.steps[-3:]]
    assert max(last_losses) < first_loss / 3
    assert job.epochs[1]["train_loss"] < job.epochs[0]["train_loss"] / 2
    assert job.epochs[1]["test_loss"] < job.epochs[0]["test_loss"]
    assert job.epochs[1]["test_accuracy"] > 0.6  # chance is 0.1; 0.85-1.0 over seeds 0-2 with 16 steps

    status = read_rule_status(job_dirs)
    assert status.training_ended
    assert {rule.RuleConfigurationName: rule.RuleEvaluationStatus for rule in status.rules} == {
        "ExplodingTensor": NO_ISSUES_FOUND,
        "LossNotDecreasing": NO_ISSUES_FOUND,
    }

    metrics = json.loads((job_dirs.model / "metrics.json").read_text())
    assert metrics["test_accuracy"] == pytest.approx(job.epochs[-1]["test_accuracy"], rel=1e-5)
    model, channel_mean = load_model(job_dirs.model / "model.pt")
    x_test, y_test = load_channel(medium_channels["test"])
    with torch.no_grad():
        predictions = model(to_model_input(x_test, channel_mean)).argmax(dim=1)
    assert (predictions == torch.as_tensor(y_test)).float().mean().item() == pytest.approx(metrics["test_accuracy"])


def test_the_job_log_says_which_device_it_trains_on_and_why(small_channels, job_dirs, run_training_job):
    """SageMaker gives the container SM_NUM_GPUS; the job uses the GPU when torch sees one. On a GPU instance type
    whose torch sees none (a CPU image) it trains on the CPU and its log says what to fix."""
    arguments = ["--warmup_learning_rate", "0.1", "--num_epochs", "1"]
    environment = {**job_dirs.environment(small_channels), "SM_NUM_GPUS": "1"}
    job = run_training_job(arguments, environment, cwd=job_dirs.root)
    assert job.exit_code == EXIT_RULE_STOP, job.stderr
    assert "device: cpu (SM_NUM_GPUS=1 but torch sees no CUDA device: training on the CPU" in job.stdout


def test_sigterm_stops_at_once_and_a_restart_resumes_at_the_next_epoch(
    small_channels, job_dirs, run_training_job, train_command
):
    arguments = ["--add_batch_norm", "true", "--num_epochs", "2", "--warmup_learning_rate", "0.05"]
    environment = job_dirs.environment(small_channels)
    process = subprocess.Popen(
        train_command + arguments,
        env=environment,
        cwd=job_dirs.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first_run = []
        for line in process.stdout:
            first_run.append(line)
            if line.startswith("epoch_end epoch=0"):
                break
        process.send_signal(signal.SIGTERM)
        # SageMaker's StopTrainingJob sends SIGTERM and kills the container 120 s later: the job ends within that.
        exit_code = process.wait(timeout=STOP_GRACE_SECONDS)
        first_run += process.stdout.readlines()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert exit_code == EXIT_TERMINATED, process.stderr.read()
    assert not job_dirs.failure.exists()
    assert not job_dirs.model.exists()
    assert sorted(path.name for path in job_dirs.checkpoints.iterdir()) == [
        "checkpoint-epoch-0000.pt"
    ]  # nothing partial

    job = run_training_job(arguments, environment, cwd=job_dirs.root)
    assert job.exit_code == EXIT_SUCCESS, job.stderr
    assert "continuing at epoch 1" in job.stdout
    assert [line["epoch"] for line in job.epochs] == [1]
    assert [line["step"] for line in job.steps] == [4, 5, 6, 7]
    assert {line["phase"] for line in job.steps} == {"main"}
    metrics = json.loads((job_dirs.model / "metrics.json").read_text())
    assert metrics["resumed_from_epoch"] == 0
    assert (job_dirs.model / "model.pt").is_file()


def test_an_unexpected_error_writes_the_failure_text_and_exits_1(small_channels, job_dirs, run_training_job):
    job_dirs.model.parent.mkdir(parents=True, exist_ok=True)
    job_dirs.model.write_text("a file where the model directory should be")
    arguments = ["--add_batch_norm", "true", "--num_epochs", "1"]
    job = run_training_job(arguments, job_dirs.environment(small_channels), cwd=job_dirs.root)
    assert job.exit_code == EXIT_ERROR
    assert job_dirs.failure.read_text().startswith("AlgorithmError: ")
    assert str(job_dirs.model) in job_dirs.failure.read_text()

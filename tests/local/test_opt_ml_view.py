"""SageMaker's /opt/ml paths as a local job's own folders (local_runtime.opt_ml_view): a script written for SageMaker
that names /opt/ml/checkpoints itself (it has no environment variable) finds its job's checkpoints there locally."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

from local_runtime.opt_ml_view import FALLBACK_HINT, opt_ml_mounts

from .conftest import BUCKET
from .test_training_platform import request, wait_for

REPO = Path(__file__).resolve().parents[2]


def view_refused(tmp_path: Path) -> str | None:
    """Why this machine gives a job no /opt/ml view (None: it does), asked in a process of its own: the namespace is
    that process's."""
    staging = tmp_path / "probe-staging"
    staging.mkdir()
    probe = (
        "import sys; from local_runtime.opt_ml_view import enter_opt_ml_view; "
        f"print(enter_opt_ml_view({{}}, {str(staging)!r}) or '')"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True)
    return done.stdout.strip() or None


def test_each_host_sees_its_own_folders_and_the_jobs_shared_channels_and_code(tmp_path):
    job, second = tmp_path / "job", tmp_path / "job" / "hosts" / "algo-2"
    mounts = opt_ml_mounts(job, second, tmp_path / "bucket" / "checkpoints" / "job")
    assert mounts == {
        "/opt/ml/input/config": str(second / "input" / "config"),
        "/opt/ml/input/data": str(job / "input" / "data"),
        "/opt/ml/model": str(second / "model"),
        "/opt/ml/output": str(second / "output"),
        "/opt/ml/code": str(job / "code"),
        "/opt/ml/checkpoints": str(tmp_path / "bucket" / "checkpoints" / "job"),
    }


def test_a_script_that_names_sagemakers_paths_itself_reads_and_writes_its_jobs_folders(platform_env, tmp_path):
    platform, sagemaker, s3 = platform_env
    name = "remediation-opt-ml-1"
    # a checkpoint the job resumes from, as a relaunch that carries the failed job's checkpoints over finds it
    s3.put_object(Bucket=BUCKET, Key=f"checkpoints/{name}/checkpoint-0.txt", Body=b"epoch 0")
    sagemaker.create_training_job(**request(name, mode="sagemaker_paths"))
    described = wait_for(sagemaker, name)
    log = (platform.job_dir(name) / "training.log").read_text()
    refused = view_refused(tmp_path)
    if refused is not None:  # another OS, or user namespaces off: the job runs without the view and says so
        assert f"local platform: /opt/ml is not this job's folders here ({refused}); {FALLBACK_HINT}" in log
        assert described["TrainingJobStatus"] == "Failed"
        return
    assert described["TrainingJobStatus"] == "Completed", log
    found = json.loads((platform.job_dir(name) / "output" / "data" / "found.json").read_text())
    assert found["train"] == ["x.npy", "y.npy"] and found["code"] == ["train.py"]
    assert found["hyperparameters"]["mode"] == "sagemaker_paths"
    assert found["checkpoints"] == ["checkpoint-0.txt"]
    # what it wrote under /opt/ml reached S3 as SageMaker's uploads would carry it
    assert s3.get_object(Bucket=BUCKET, Key=f"checkpoints/{name}/checkpoint-opt-ml.txt")["Body"].read() == b"epoch 1"
    body = s3.get_object(Bucket=BUCKET, Key=f"jobs/{name}/output/model.tar.gz")["Body"].read()
    with tarfile.open(fileobj=io.BytesIO(body)) as archive:
        assert archive.extractfile("model.pt").read() == b"weights at /opt/ml/model"
    # and nothing of it outside the run's folders
    assert not Path("/opt/ml/checkpoints/checkpoint-opt-ml.txt").exists()
    assert "/opt/ml is not this job's" not in log

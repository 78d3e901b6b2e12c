"""What stands in locally for a job's framework image: named in the job's log, refused with the fix when missing."""

from __future__ import annotations

import importlib.metadata

import pytest

from lambdas.remediation.job.training_images import training_image_uri
from local_runtime import framework_images
from local_runtime.framework_images import FrameworkMissing, local_stand_in


def test_the_xgboost_image_is_stood_in_for_by_the_installed_xgboost():
    note = local_stand_in(training_image_uri("us-east-1", "ml.m5.xlarge", None, "xgboost"))
    installed = importlib.metadata.version("xgboost-cpu")
    assert note.startswith("image sagemaker-xgboost:3.2-0 (XGBoost 3.2.0): runs here on this machine's Python 3.")
    assert note.endswith(f"with XGBoost {installed}")


def test_an_older_image_says_the_local_release_differs():
    note = local_stand_in(training_image_uri("eu-west-1", "ml.m5.xlarge", "1.7-1", "xgboost"))
    assert "(XGBoost 1.7.4)" in note and "not the image's 1.7.4: results may differ from the cloud's" in note


def test_the_pytorch_image_names_torch():
    note = local_stand_in(training_image_uri("us-east-1", "ml.m5.xlarge"))
    assert note.startswith("image pytorch:2.13.0-cpu-amzn2023-sagemaker (PyTorch 2.13.0): runs here")


def test_an_image_of_no_known_framework_runs_on_this_python():
    assert local_stand_in("123456789012.dkr.ecr.us-east-1.amazonaws.com/mine:1").startswith(
        "image 123456789012.dkr.ecr.us-east-1.amazonaws.com/mine:1: runs here on this machine's Python"
    )


def test_a_framework_missing_here_is_refused_with_the_install_command(monkeypatch):
    # The one seam: this machine has xgboost installed, so its absence is what importlib.metadata reports.
    monkeypatch.setattr(framework_images, "installed_release", lambda distributions: None)
    with pytest.raises(FrameworkMissing, match=r"has no XGBoost installed: pip install xgboost-cpu"):
        local_stand_in(training_image_uri("us-east-1", "ml.m5.xlarge", None, "xgboost"))

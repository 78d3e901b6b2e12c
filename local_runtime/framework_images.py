"""A job's framework image, and what this machine runs in its place.

In the cloud a job's TrainingImage brings its framework (PyTorch's deep learning container, SageMaker's XGBoost
image); the local platform runs the very same script-mode contract with this machine's Python and the framework
installed into it. :func:`local_stand_in` says which release stands in for the image's (a line at the top of the
job's log) and refuses a job whose framework is not installed here, with the fix, before the script starts.
"""

from __future__ import annotations

import importlib.metadata
import platform
import re

from lambdas.remediation.job.training_images import PYTORCH_IMAGES
from lambdas.remediation.job.xgboost_images import XGBOOST_IMAGES, XGBOOST_REPOSITORY

_IMAGE = re.compile(r"^[^/]+/(?P<repository>[^:]+):(?P<tag>.+)$")
#: repository -> (the framework's name, the distributions that install it here, what requirements.txt pins).
_FRAMEWORKS = {
    XGBOOST_REPOSITORY: ("XGBoost", ("xgboost-cpu", "xgboost"), "xgboost-cpu"),
    "pytorch": ("PyTorch", ("torch",), "torch"),
}


class FrameworkMissing(RuntimeError):
    """The job's framework is not installed in the Python the local platform runs jobs with."""


def image_release(repository: str, tag: str) -> str | None:
    """The framework release an image holds: sagemaker-xgboost:3.2-0 -> 3.2.0, pytorch:2.13.0-cpu-... -> 2.13.0."""
    if repository == XGBOOST_REPOSITORY:
        return XGBOOST_IMAGES.get(tag)
    release = tag.split("-", 1)[0]
    return release if any(image.full_version == release for image in PYTORCH_IMAGES.values()) else None


def installed_release(distributions: tuple[str, ...]) -> str | None:
    for distribution in distributions:
        try:
            return importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def local_stand_in(training_image: str) -> str:
    """One line for the job's log: the image, and the Python and framework release that run the job here in its
    place. Raises FrameworkMissing when that framework is not installed."""
    match = _IMAGE.match(training_image or "")
    known = _FRAMEWORKS.get(match["repository"]) if match else None
    python = f"Python {platform.python_version()}"
    if known is None:
        return f"image {training_image or '(none)'}: runs here on this machine's {python}"
    name, distributions, pinned = known
    wanted = image_release(match["repository"], match["tag"])
    found = installed_release(distributions)
    image = f"{match['repository']}:{match['tag']}" + (f" ({name} {wanted})" if wanted else "")
    if found is None:
        raise FrameworkMissing(
            f"the job's image {image} brings {name}; the local platform runs jobs with this machine's {python}, "
            f"which has no {name} installed: pip install {pinned} (requirements.txt pins the release)"
        )
    note = f"image {image}: runs here on this machine's {python} with {name} {found}"
    if wanted and found.split("+")[0] != wanted:
        note += f", not the image's {wanted}: results may differ from the cloud's"
    return note

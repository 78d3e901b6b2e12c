"""The container images a remediation's SageMaker jobs run on: one home for their versions, registries and URIs.

A run_spec's ``framework`` picks the image: PyTorch's deep learning container (the tables below) or SageMaker's
XGBoost framework image (its tables, sources and versions in ``lambdas.remediation.job.xgboost_images``).

Standard library only: the train Lambda builds its image URIs from these tables, and the stack
(``infra/sagemaker_role.py``) grants the SageMaker role the pulls from the very same tables.

Sources, as checked on 2026-11-23 (:data:`TABLES_REVIEWED`):

* PyTorch training images (SageMaker flavour): aws/deep-learning-containers, ``docs/src/data/pytorch/
  <version>-{cpu,cuda}-sagemaker.yml`` (the "Available Images" table: tags, GA and end-of-patch dates) and its
  "Framework Support Policy" page. That page says the Ubuntu-based PyTorch 2.8-2.10 images
  (``pytorch-training:2.x.0-...-ubuntu22.04-sagemaker``) cannot be fully patched and recommends the Amazon
  Linux 2023 images of 2.11 and later, published in the ``pytorch`` repository with tags such as
  ``2.13.0-cpu-amzn2023-sagemaker`` / ``2.13.0-cu133-amzn2023-sagemaker``. PyTorch 2.8 reached its end of patch
  on 2026-08-06, 2.9 on 2026-10-15.
* Registry account per region: the same repository's "Region Availability" table
  (``docs/reference/region_availability.md``, 36 regions), account for account the same as the SageMaker Python
  SDK's ``image_uri_config/pytorch.json``. The SDK also lists the GovCloud regions, but only for the Ubuntu images
  up to 2.8; the current images are not listed there, so those regions are refused here.
* SageMaker Debugger's built-in rule evaluator (legacy mode): the SDK's ``image_uri_config/debugger.json``
  (sagemaker-core) and the SageMaker developer guide's "Amazon SageMaker Debugger image URIs for built-in rule
  evaluators" (repository ``sagemaker-debugger-rules``, tag ``latest``). The guide's table has no ap-northeast-3;
  the SDK's has it (479947661362, a registry of its own, not the DLC account of that region).
* The CUDA 13 images (cu130, cu133) carry no code for GPUs below compute capability 7.5 (CUDA 13.0 removed
  Maxwell, Pascal and Volta; Kepler went earlier): ml.p2 (K80) and ml.p3/ml.p3dn (V100) cannot run them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from contracts.run_spec import DEFAULT_FRAMEWORK, FRAMEWORKS
from lambdas.remediation.job.xgboost_images import (
    DEFAULT_XGBOOST_VERSION,
    XGBOOST_ACCOUNT_BY_REGION,
    XGBOOST_IMAGES,
    XGBOOST_REPOSITORY,
)

#: The date the tables below were last checked against their sources.
TABLES_REVIEWED = "2026-11-23"

TRAINING_REPOSITORY = "pytorch"
RULE_EVALUATOR_REPOSITORY = "sagemaker-debugger-rules"
RULE_EVALUATOR_TAG = "latest"


class TrainingImageError(ValueError):
    """No image for this run_spec; the message names the run_spec field and what is allowed."""


@dataclass(frozen=True)
class PyTorchImage:
    """One PyTorch training DLC (SageMaker flavour, x86_64), CPU and GPU variants."""

    framework_version: str  # what run_spec.framework_version names: "2.13"
    full_version: str  # the PyTorch release in the image and the tag's first part: "2.13.0"
    python_tag: str  # the image's Python (not part of the tag on the Amazon Linux 2023 images)
    cpu_tag_suffix: str
    gpu_tag_suffix: str
    repository: str
    general_availability: str
    end_of_patch: str
    #: Instance families whose GPUs the image's CUDA no longer supports.
    gpu_families_unsupported: tuple[str, ...]

    def tag(self, gpu: bool) -> str:
        return f"{self.full_version}-{self.gpu_tag_suffix if gpu else self.cpu_tag_suffix}"


_CUDA13_UNSUPPORTED = ("p2", "p3", "p3dn")

#: Supported PyTorch versions, newest first. Every one is within its end-of-patch date on TABLES_REVIEWED.
PYTORCH_IMAGES: dict[str, PyTorchImage] = {
    image.framework_version: image
    for image in (
        PyTorchImage(
            "2.13", "2.13.0", "py312", "cpu-amzn2023-sagemaker", "cu133-amzn2023-sagemaker",
            TRAINING_REPOSITORY, "2026-07-20", "2027-07-20", _CUDA13_UNSUPPORTED,
        ),
        PyTorchImage(
            "2.12", "2.12.1", "py312", "cpu-amzn2023-sagemaker", "cu130-amzn2023-sagemaker",
            TRAINING_REPOSITORY, "2026-07-02", "2027-07-02", _CUDA13_UNSUPPORTED,
        ),
        PyTorchImage(
            "2.11", "2.11.0", "py312", "cpu-amzn2023-sagemaker", "cu130-amzn2023-sagemaker",
            TRAINING_REPOSITORY, "2026-04-30", "2027-04-30", _CUDA13_UNSUPPORTED,
        ),
    )
}  # fmt: skip

#: The version a run_spec gets unless it names one: the same PyTorch release the local loop trains with
#: (torch==2.13.0 in requirements.txt), so a run that works locally runs on the same framework in the cloud.
DEFAULT_FRAMEWORK_VERSION = "2.13"

#: run_spec.framework -> the framework_version a run_spec gets unless it names one.
DEFAULT_FRAMEWORK_VERSIONS = {"pytorch": DEFAULT_FRAMEWORK_VERSION, "xgboost": DEFAULT_XGBOOST_VERSION}

#: The DLC registry (ECR account) of every region the PyTorch training images are published in.
DLC_ACCOUNT_BY_REGION: dict[str, str] = {
    "af-south-1": "626614931356",
    "ap-east-1": "871362719292",
    "ap-east-2": "975050140332",
    "ap-northeast-1": "763104351884",
    "ap-northeast-2": "763104351884",
    "ap-northeast-3": "364406365360",
    "ap-south-1": "763104351884",
    "ap-south-2": "772153158452",
    "ap-southeast-1": "763104351884",
    "ap-southeast-2": "763104351884",
    "ap-southeast-3": "907027046896",
    "ap-southeast-4": "457447274322",
    "ap-southeast-5": "550225433462",
    "ap-southeast-6": "633930458069",
    "ap-southeast-7": "590183813437",
    "ca-central-1": "763104351884",
    "ca-west-1": "204538143572",
    "cn-north-1": "727897471807",
    "cn-northwest-1": "727897471807",
    "eu-central-1": "763104351884",
    "eu-central-2": "380420809688",
    "eu-north-1": "763104351884",
    "eu-south-1": "692866216735",
    "eu-south-2": "503227376785",
    "eu-west-1": "763104351884",
    "eu-west-2": "763104351884",
    "eu-west-3": "763104351884",
    "il-central-1": "780543022126",
    "me-central-1": "914824155844",
    "me-south-1": "217643126080",
    "mx-central-1": "637423239942",
    "sa-east-1": "763104351884",
    "us-east-1": "763104351884",
    "us-east-2": "763104351884",
    "us-west-1": "763104351884",
    "us-west-2": "763104351884",
}

#: SageMaker Debugger's built-in rule evaluator registry per region (legacy mode only).
RULE_EVALUATOR_ACCOUNT_BY_REGION: dict[str, str] = {
    "af-south-1": "314341159256",
    "ap-east-1": "199566480951",
    "ap-northeast-1": "430734990657",
    "ap-northeast-2": "578805364391",
    "ap-northeast-3": "479947661362",
    "ap-south-1": "904829902805",
    "ap-southeast-1": "972752614525",
    "ap-southeast-2": "184798709955",
    "ca-central-1": "519511493484",
    "cn-north-1": "618459771430",
    "cn-northwest-1": "658757709296",
    "eu-central-1": "482524230118",
    "eu-north-1": "314864569078",
    "eu-south-1": "563282790590",
    "eu-west-1": "929884845733",
    "eu-west-2": "250201462417",
    "eu-west-3": "447278800020",
    "me-south-1": "986000313247",
    "sa-east-1": "818342061345",
    "us-east-1": "503895931360",
    "us-east-2": "915447279597",
    "us-gov-west-1": "515509971035",
    "us-west-1": "685455198987",
    "us-west-2": "895741380848",
}

#: SageMaker local mode's instance types (the SDK's convention): CPU and GPU.
LOCAL_CPU, LOCAL_GPU = "local", "local_gpu"
_INSTANCE_TYPE = re.compile(r"^ml\.(?P<family>[a-z0-9-]+)\.[a-z0-9-]+$")
#: NVIDIA GPU families: p (p2 ... p6-b300) and g (g4dn ... g7e).
_GPU_FAMILY = re.compile(r"^[pg]\d")
#: Families no x86_64 PyTorch image runs on: AWS Trainium/Inferentia (Neuron) and Grace (arm64) superchips.
_NEURON_FAMILY = re.compile(r"^(trn|inf)\d")
_ARM64_FAMILY = re.compile(r"^p\d+e-gb\d+")


def pytorch_image(framework_version: str = DEFAULT_FRAMEWORK_VERSION) -> PyTorchImage:
    """The image entry for "2.13" or "2.13.0"; a clear error for anything else."""
    key = str(framework_version).strip()
    image = PYTORCH_IMAGES.get(key) or next(
        (entry for entry in PYTORCH_IMAGES.values() if entry.full_version == key), None
    )
    if image is None:
        raise TrainingImageError(
            f"run_spec.framework_version: PyTorch {framework_version!r} has no supported SageMaker training image; "
            f"use one of {', '.join(PYTORCH_IMAGES)} (default {DEFAULT_FRAMEWORK_VERSION})"
        )
    return image


def check_framework_version(framework: str, framework_version: str | None) -> str:
    """The canonical framework_version ("2.13", "3.2-0") for the framework; its default when None. Raises
    TrainingImageError naming run_spec.framework_version and the versions allowed."""
    if framework not in FRAMEWORKS:
        raise TrainingImageError(f"run_spec.framework: must be one of {', '.join(FRAMEWORKS)} (got {framework!r})")
    if framework_version is None:
        return DEFAULT_FRAMEWORK_VERSIONS[framework]
    if framework == "pytorch":
        return pytorch_image(framework_version).framework_version
    key = str(framework_version).strip()
    if key not in XGBOOST_IMAGES:
        raise TrainingImageError(
            f"run_spec.framework_version: XGBoost {framework_version!r} has no supported SageMaker framework image "
            f"with script mode and the callback API the debugger uses; use one of {', '.join(XGBOOST_IMAGES)} "
            f"(default {DEFAULT_XGBOOST_VERSION}), as the SageMaker Python SDK names them"
        )
    return key


def is_gpu_instance(instance_type: str) -> bool:
    """True for NVIDIA GPU instance types (ml.p*, ml.g*) and local_gpu; raises for types no image runs on."""
    if instance_type == LOCAL_GPU:
        return True
    if instance_type == LOCAL_CPU:
        return False
    match = _INSTANCE_TYPE.match(instance_type)
    if match is None:
        raise TrainingImageError(
            f"run_spec.instance_type: {instance_type!r} is not a SageMaker instance type; use e.g. ml.m5.xlarge (CPU), "
            f"ml.g5.xlarge (GPU) or {LOCAL_CPU}/{LOCAL_GPU} in local mode"
        )
    family = match.group("family")
    if _NEURON_FAMILY.match(family):
        raise TrainingImageError(
            f"run_spec.instance_type: {instance_type!r} needs a Neuron image; use a CPU (ml.m5, ml.c5) or "
            "NVIDIA GPU (ml.g5, ml.g6, ml.p4d) type"
        )
    if _ARM64_FAMILY.match(family):
        raise TrainingImageError(
            f"run_spec.instance_type: {instance_type!r} is an arm64 (Grace) type and the PyTorch training images "
            "are x86_64; use ml.p5, ml.p6-b200 or another x86_64 GPU type"
        )
    return bool(_GPU_FAMILY.match(family))


def training_image_uri(
    region: str,
    instance_type: str,
    framework_version: str | None = None,
    framework: str = DEFAULT_FRAMEWORK,
) -> str:
    """The training image for the framework, region and version: PyTorch's DLC (CPU or GPU by instance family),
    or SageMaker's XGBoost framework image (one image for CPU and GPU).

    Without framework_version: the framework's default (DEFAULT_FRAMEWORK_VERSIONS).
    """
    version = check_framework_version(framework, framework_version)
    if framework == "xgboost":
        is_gpu_instance(instance_type)  # refuses the types no x86_64 image runs on, naming the field
        account = XGBOOST_ACCOUNT_BY_REGION.get(region)
        if account is None:
            raise TrainingImageError(
                f"run_spec.region: SageMaker's XGBoost images are not published in {region!r}; "
                f"use one of {', '.join(sorted(XGBOOST_ACCOUNT_BY_REGION))}"
            )
        return f"{ecr_registry(account, region)}/{XGBOOST_REPOSITORY}:{version}"
    image = pytorch_image(version)
    gpu = is_gpu_instance(instance_type)
    family = _INSTANCE_TYPE.match(instance_type).group("family") if gpu and instance_type != LOCAL_GPU else ""
    if family in image.gpu_families_unsupported:
        raise TrainingImageError(
            f"run_spec.instance_type: {instance_type!r} has GPUs older than compute capability 7.5, which the "
            f"CUDA build of PyTorch {image.framework_version} ({image.gpu_tag_suffix.split('-')[0]}) does not "
            "support; use ml.g4dn, ml.g5, ml.g6, ml.p4d, ml.p5 or a CPU type"
        )
    account = dlc_account(region)
    return f"{ecr_registry(account, region)}/{image.repository}:{image.tag(gpu)}"


def dlc_account(region: str) -> str:
    account = DLC_ACCOUNT_BY_REGION.get(region)
    if account is None:
        raise TrainingImageError(
            f"run_spec.region: the PyTorch training images are not published in {region!r}; "
            f"use one of {', '.join(sorted(DLC_ACCOUNT_BY_REGION))}"
        )
    return account


def rule_evaluator_image_uri(region: str) -> str:
    """SageMaker Debugger's built-in rule evaluator image for the region (legacy mode only)."""
    account = RULE_EVALUATOR_ACCOUNT_BY_REGION.get(region)
    if account is None:
        raise TrainingImageError(
            f"run_spec.legacy_sagemaker_debugger: SageMaker Debugger's rule evaluator is not published in "
            f"run_spec.region {region!r}; set legacy_sagemaker_debugger to false or use one of "
            f"{', '.join(sorted(RULE_EVALUATOR_ACCOUNT_BY_REGION))}"
        )
    return f"{ecr_registry(account, region)}/{RULE_EVALUATOR_REPOSITORY}:{RULE_EVALUATOR_TAG}"


#: The SDK's ALTERNATE_DOMAINS (sagemaker-core common_utils.py): the partitions whose ECR is not under amazonaws.com.
_PARTITION_DOMAINS = (
    ("cn-", "amazonaws.com.cn"),
    ("us-isob-", "sc2s.sgov.gov"),
    ("us-isof-", "csp.hci.ic.gov"),
    ("us-iso-", "c2s.ic.gov"),
)


def ecr_registry(account: str, region: str) -> str:
    domain = next((domain for prefix, domain in _PARTITION_DOMAINS if region.startswith(prefix)), "amazonaws.com")
    return f"{account}.dkr.ecr.{region}.{domain}"


def training_repositories() -> tuple[str, ...]:
    """Every PyTorch ECR repository a supported version pulls from (what the SageMaker role is granted)."""
    return tuple(sorted({image.repository for image in PYTORCH_IMAGES.values()}))

"""The Powertools layer of the three Lambdas: AWS's public layer where it is published, else one bundled here.

AWS publishes the Powertools for AWS Lambda (Python) v3 layer, and the public SSM parameter
``/aws/service/powertools/python/x86_64/python3.13/<version>`` naming it, region by region; a deployment that
resolves the parameter in a region without it fails. ``-c powertools_layer=`` chooses:

* ``public``: the SSM parameter (resolved by CloudFormation at deploy time);
* ``bundled``: a layer built on this machine without Docker: ``pip install --platform manylinux2014_x86_64
  --only-binary=:all: --python-version 3.13 --no-deps`` of ``infra/powertools_layer_source/requirements.txt``;
* ``auto`` (default): ``public`` in :data:`PUBLIC_LAYER_REGIONS`, ``bundled`` in any other region the synth
  knows (the stack's ``region`` context, or the region the CDK CLI targets: ``CDK_DEFAULT_REGION``), and
  ``public`` when no region is known (then deploy only into a listed region, or pass ``bundled``).

:data:`PUBLIC_LAYER_REGIONS` lists the regions Powertools' own layer pipeline deploys the v3 layer to
(aws-powertools/powertools-lambda-python, .github/workflows/reusable_deploy_v3_layer_stack.yml): the 29
commercial regions it names. AWS may have published it in more regions since (the docs say "all commercial
regions"); a region missing here only costs a bundled layer, never a failed deploy.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import jsii
from aws_cdk import BundlingOptions, DockerImage, ILocalBundling, Stack, Token
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_ssm as ssm
from constructs import Construct

REPO_ROOT = Path(__file__).resolve().parent.parent
LAYER_SOURCE = REPO_ROOT / "infra" / "powertools_layer_source"
LAYER_REQUIREMENTS = LAYER_SOURCE / "requirements.txt"
LAYER_PYTHON_VERSION = "3.13"
LAYER_PLATFORM = "manylinux2014_x86_64"

PUBLIC, BUNDLED, AUTO = "public", "bundled", "auto"
CHOICES = (AUTO, PUBLIC, BUNDLED)

PUBLIC_LAYER_REGIONS = frozenset(
    {
        "af-south-1",
        "ap-east-1",
        "ap-northeast-1",
        "ap-northeast-2",
        "ap-northeast-3",
        "ap-south-1",
        "ap-south-2",
        "ap-southeast-1",
        "ap-southeast-2",
        "ap-southeast-3",
        "ap-southeast-4",
        "ca-central-1",
        "ca-west-1",
        "eu-central-1",
        "eu-central-2",
        "eu-north-1",
        "eu-south-1",
        "eu-south-2",
        "eu-west-1",
        "eu-west-2",
        "eu-west-3",
        "il-central-1",
        "me-central-1",
        "me-south-1",
        "sa-east-1",
        "us-east-1",
        "us-east-2",
        "us-west-1",
        "us-west-2",
    }
)


def public_layer_parameter(version: str) -> str:
    """The public SSM parameter holding the Powertools v3 layer ARN (the v3 layer carries pydantic v2)."""
    return f"/aws/service/powertools/python/x86_64/python{LAYER_PYTHON_VERSION}/{version}"


def choose_layer(choice: str, stack_region: str) -> str:
    """public or bundled, for the powertools_layer context value and the region the stack deploys to."""
    if choice not in CHOICES:
        raise ValueError(
            f"powertools_layer: {choice!r} is not one of {', '.join(CHOICES)}; e.g. -c powertools_layer=bundled "
            "builds the layer here (no Docker) for a region without AWS's public layer"
        )
    if choice != AUTO:
        return choice
    region = stack_region if not Token.is_unresolved(stack_region) else os.environ.get("CDK_DEFAULT_REGION", "")
    if region and region not in PUBLIC_LAYER_REGIONS:
        return BUNDLED
    return PUBLIC


def bundled_powertools_version() -> str:
    for line in LAYER_REQUIREMENTS.read_text(encoding="utf-8").splitlines():
        name, _, version = line.partition("==")
        if name.strip().lower().replace("-", "_") == "aws_lambda_powertools":
            return version.strip()
    raise LayerBundleError(f"{LAYER_REQUIREMENTS}: no aws_lambda_powertools pin")


def pip_install_command(output_dir: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-deps",
        "--no-compile",  # no .pyc of this machine's Python in a python3.13 layer
        "--only-binary=:all:",
        "--platform",
        LAYER_PLATFORM,
        "--implementation",
        "cp",
        "--python-version",
        LAYER_PYTHON_VERSION,
        "--target",
        str(Path(output_dir) / "python"),
        "--requirement",
        str(LAYER_REQUIREMENTS),
    ]


class LayerBundleError(RuntimeError):
    """pip could not build the bundled layer; the message carries pip's output and the fix."""


@jsii.implements(ILocalBundling)
class PipLayerBundling:
    """Builds the layer with this interpreter's pip for Lambda's platform; CDK never falls back to Docker."""

    def __init__(self, command=pip_install_command):
        self._command = command

    def try_bundle(self, output_dir: str, *args, **kwargs) -> bool:
        result = subprocess.run(self._command(output_dir), capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise LayerBundleError(
                f"powertools_layer=bundled: pip could not build the layer (exit {result.returncode}); it needs the "
                f"package index for the wheels of {LAYER_REQUIREMENTS.name}, or use -c powertools_layer=public in a "
                f"region with AWS's layer.\n{result.stdout}{result.stderr}"
            )
        return True


def powertools_layer(scope: Construct, construct_id: str, *, choice: str, version: str) -> lambda_.ILayerVersion:
    """The layer for the three Lambdas, by :func:`choose_layer`."""
    if choose_layer(choice, Stack.of(scope).region) == PUBLIC:
        layer_arn = ssm.StringParameter.value_for_string_parameter(scope, public_layer_parameter(version))
        return lambda_.LayerVersion.from_layer_version_arn(scope, construct_id, layer_arn)
    pinned = bundled_powertools_version()
    if version != pinned:
        raise ValueError(
            f"powertools_version: the bundled layer installs Powertools {pinned} ({LAYER_REQUIREMENTS.relative_to(REPO_ROOT)}), "
            f"not {version}; leave powertools_version at {pinned} or change both"
        )
    return lambda_.LayerVersion(
        scope,
        construct_id,
        description=f"Powertools for AWS Lambda (Python) {version} with pydantic v2 and the X-Ray SDK, bundled",
        code=lambda_.Code.from_asset(
            str(LAYER_SOURCE),
            bundling=BundlingOptions(
                # Never pulled: PipLayerBundling always builds locally or fails with pip's reason.
                image=DockerImage.from_registry(f"public.ecr.aws/sam/build-python{LAYER_PYTHON_VERSION}"),
                local=PipLayerBundling(),
            ),
        ),
        compatible_runtimes=[lambda_.Runtime.PYTHON_3_13],
        compatible_architectures=[lambda_.Architecture.X86_64],
    )

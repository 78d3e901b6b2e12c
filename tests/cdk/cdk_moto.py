"""Deploys a synthesized cloud assembly into moto's CloudFormation, as `cdk deploy` would into a bootstrapped account.

Call inside an active moto mock: uploads the file assets to the default synthesizer's
assets bucket, puts the bootstrap version in SSM, publishes the public Powertools
layer parameter (AWS owns /aws/service/..., which PutParameter refuses, so it goes
into moto's parameter store the way moto loads its other public parameters) and
creates the stack from the template. A custom resource's Lambda (the stack's teardown) is invoked as CloudFormation
would, with the real handler, in process (moto would run it in Docker); its answer is delivered to moto's stack.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import json
import os
import re
import threading
import time
import warnings
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3

ACCOUNT = "123456789012"  # moto's default account
REGION = "us-east-1"
BOOTSTRAP_QUALIFIER = "hnb659fds"
BOOTSTRAP_VERSION = "30"
UNSUPPORTED = re.compile(r"Tried to parse (\S+) but it's not supported")
POWERTOOLS_LAYER_ARN = f"arn:aws:lambda:{REGION}:017000801446:layer:AWSLambdaPowertoolsPythonV3-python313-x86_64:27"


def zip_directory(directory: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(directory.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(directory).as_posix())
    return buffer.getvalue()


def upload_assets(outdir: Path, stack_name: str) -> list[str]:
    s3 = boto3.client("s3", region_name=REGION)
    bucket = f"cdk-{BOOTSTRAP_QUALIFIER}-assets-{ACCOUNT}-{REGION}"
    s3.create_bucket(Bucket=bucket)
    manifest = json.loads((outdir / f"{stack_name}.assets.json").read_text())
    keys = []
    for asset in manifest["files"].values():
        source = outdir / asset["source"]["path"]
        body = zip_directory(source) if asset["source"].get("packaging") == "zip" else source.read_bytes()
        for destination in asset["destinations"].values():
            s3.put_object(Bucket=bucket, Key=destination["objectKey"], Body=body)
            keys.append(destination["objectKey"])
    return keys


def publish_public_parameter(name: str, value: str) -> None:
    from moto.ssm.models import Parameter, ssm_backends

    store = ssm_backends[ACCOUNT][REGION]._parameters
    store[name].append(
        Parameter(
            account_id=ACCOUNT,
            name=name,
            value=value,
            parameter_type="String",
            description=None,
            allowed_pattern=None,
            keyid=None,
            last_modified_date=dt.datetime.now(dt.UTC).timestamp(),
            version=1,
            data_type="text",
        )
    )


def deploy(outdir: Path, stack_name: str, template: dict) -> dict:
    """Create the stack; DescribeStacks' entry plus SkippedByMoto: the resource types moto only pretends to create."""
    upload_assets(outdir, stack_name)
    ssm = boto3.client("ssm", region_name=REGION)
    ssm.put_parameter(Name=f"/cdk-bootstrap/{BOOTSTRAP_QUALIFIER}/version", Value=BOOTSTRAP_VERSION, Type="String")
    for parameter in template.get("Parameters", {}).values():
        default = parameter.get("Default", "")
        if parameter["Type"].startswith("AWS::SSM::Parameter::Value") and default.startswith(
            "/aws/service/powertools/"
        ):
            publish_public_parameter(default, POWERTOOLS_LAYER_ARN)
    cloudformation = boto3.client("cloudformation", region_name=REGION)
    with warnings.catch_warnings(record=True) as caught, custom_resources_answered() as answered:
        warnings.simplefilter("always")
        cloudformation.create_stack(
            StackName=stack_name,
            TemplateBody=json.dumps(template),
            Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM"],
        )
        deadline = time.monotonic() + 120
        while cloudformation.describe_stacks(StackName=stack_name)["Stacks"][0]["StackStatus"] == "CREATE_IN_PROGRESS":
            assert time.monotonic() < deadline, f"a custom resource never answered: {answered}"
            time.sleep(0.05)
    description = cloudformation.describe_stacks(StackName=stack_name)["Stacks"][0]
    description["CustomResourcesAnswered"] = answered
    description["SkippedByMoto"] = sorted(
        {match.group(1) for w in caught if (match := UNSUPPORTED.search(str(w.message)))}
    )
    return description


@contextlib.contextmanager
def custom_resources_answered() -> Iterator[list[dict[str, Any]]]:
    """While open, a custom resource's Lambda that moto invokes runs its real handler in process (with the function's
    environment), and the handler's answer to CloudFormation's ResponseURL is delivered to moto's stack as moto's
    own cfnresponse endpoint would (SUCCESS marks the resource created). Yields the answers."""
    from moto.awslambda.models import LambdaFunction
    from moto.cloudformation import cloudformation_backends

    from lambdas import stack_teardown_handler
    from local_runtime.botocore_dispatch import LambdaContext

    answered: list[dict[str, Any]] = []
    original_invoke = LambdaFunction.invoke
    lock = threading.Lock()

    def deliver(url: str, body: dict[str, Any]) -> None:
        answered.append(body)
        if body["Status"] == "SUCCESS":
            stack = cloudformation_backends[ACCOUNT][REGION].get_stack(body["StackId"])
            stack.get_custom_resource(body["LogicalResourceId"]).set_data(body["Data"])
            stack.verify_readiness()

    def invoke(function: Any, body: str, request_headers: Any, response_headers: Any) -> Any:
        if function.handler != "lambdas.stack_teardown_handler.handler":
            return original_invoke(function, body, request_headers, response_headers)
        with lock:
            saved = dict(os.environ)
            os.environ.update(function.environment_vars)
            saved_send, stack_teardown_handler.send_response = stack_teardown_handler.send_response, deliver
            try:
                context = LambdaContext(
                    function_name=function.function_name,
                    invoked_function_arn=function.function_arn,
                    aws_request_id="cloudformation",
                    timeout_seconds=float(function.timeout),
                )
                return json.dumps(stack_teardown_handler.handler(json.loads(body), context))
            finally:
                stack_teardown_handler.send_response = saved_send
                os.environ.clear()
                os.environ.update(saved)

    LambdaFunction.invoke = invoke
    try:
        yield answered
    finally:
        LambdaFunction.invoke = original_invoke

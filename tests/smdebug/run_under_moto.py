"""Run corpus scripts one after the other inside one in-process moto S3 (``mock_aws``), as ``python -S
run_under_moto.py SOURCE_DIR BUCKET '[["train.py", "arg"], ["analyse.py", "arg"]]'``. moto's standalone server
needs Flask, which is not installed; the scripts themselves run unchanged (runpy, as ``__main__``), with the
source directory first on sys.path as in a job."""

import json
import os
import runpy
import sys

source, bucket, scripts = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
sys.path[0] = source
os.chdir(source)

import boto3  # noqa: E402
from moto import mock_aws  # noqa: E402

with mock_aws():
    boto3.client("s3").create_bucket(Bucket=bucket)
    for script, *arguments in scripts:
        sys.argv = [script, *arguments]
        runpy.run_path(script, run_name="__main__")

"""A read of an S3 object that another request replaces meanwhile answers the object whole, as S3 does
(local_runtime/s3_reads.py): locally, the monitor Lambda reads rule-status.json while the job's output mirror puts a
newer one. The race is made to happen every time: the read is held just after moto found the object, and the
replacing write is started then."""

from __future__ import annotations

import threading

import boto3
import pytest
from moto import mock_aws
from moto.s3.responses import S3Response

from local_runtime import s3_reads
from local_runtime.offline_aws import OFFLINE_AWS_ENVIRONMENT
from local_runtime.s3_reads import s3_reads_as_in_aws

BUCKET, KEY = "artifacts-bucket", "jobs/job-1/debug-output/rule-status.json"
OLD, NEW = b'{"rules": "as of step 10"}', b'{"rules": "as of step 20"}'


@pytest.fixture
def s3(monkeypatch):
    for name, value in {**OFFLINE_AWS_ENVIRONMENT, "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        client = boto3.client("s3")
        client.create_bucket(Bucket=BUCKET)
        client.put_object(Bucket=BUCKET, Key=KEY, Body=OLD)
        yield client


def _read_while_replaced(s3, monkeypatch, *, writer_may_finish_first: bool) -> tuple[object, object]:
    """Read KEY on one thread and replace it on another once moto has found the object for the read; return what the
    read answered (bytes or the exception) and the object's bytes afterwards."""
    found, go_on = threading.Event(), threading.Event()
    find_object = S3Response._get_key  # GetObject's lookup, just before it reads the object's bytes

    def find_object_then_wait(self, *args, **kwargs):
        found_key = find_object(self, *args, **kwargs)
        if not found.is_set():
            found.set()
            go_on.wait()  # the read stays here until the test lets it go on
        return found_key

    monkeypatch.setattr(S3Response, "_get_key", find_object_then_wait)
    answer: dict[str, object] = {}

    def read() -> None:
        try:
            answer["read"] = s3.get_object(Bucket=BUCKET, Key=KEY)["Body"].read()
        except Exception as error:  # noqa: BLE001 - what the read answered is the finding
            answer["read"] = error

    reader = threading.Thread(target=read)
    writer = threading.Thread(target=lambda: s3.put_object(Bucket=BUCKET, Key=KEY, Body=NEW))
    reader.start()
    assert found.wait(60), "the read never reached moto"
    writer.start()
    if writer_may_finish_first:
        writer.join()  # unpatched, nothing holds the write back
    else:
        writer.join(0.2)  # the write waits for the read: let the read go on whether or not it got here yet
    go_on.set()
    reader.join()
    writer.join()
    return answer["read"], s3.get_object(Bucket=BUCKET, Key=KEY)["Body"].read()


def test_a_read_answers_the_whole_object_it_found_while_a_write_replaces_it(s3, monkeypatch):
    with s3_reads_as_in_aws():
        read, after = _read_while_replaced(s3, monkeypatch, writer_may_finish_first=False)
    assert read == OLD
    assert after == NEW


def test_without_the_patch_moto_fails_that_read_on_a_closed_file(s3, monkeypatch):
    """The moto behaviour the patch exists for: should a moto upgrade fix it, this fails and the patch can go."""
    assert not s3_reads.installed()
    read, after = _read_while_replaced(s3, monkeypatch, writer_may_finish_first=True)
    assert isinstance(read, Exception) and "closed file" in str(read)
    assert after == NEW


def test_the_patch_holds_until_its_last_holder_leaves():
    original = S3Response.key_response
    with s3_reads_as_in_aws():
        patched = S3Response.key_response
        assert patched is not original
        with s3_reads_as_in_aws():  # a LocalRuntime inside a test that also holds it
            assert S3Response.key_response is patched
        assert S3Response.key_response is patched
    assert S3Response.key_response is original and not s3_reads.installed()

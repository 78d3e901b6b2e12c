"""S3 in moto, made to answer a read whole while another request replaces the same object, as S3 does.

moto 5.2 keeps each object's bytes in a temporary file and closes it when a PutObject replaces the object (its key
store disposes of the versions it no longer keeps). A GetObject that found the old object just before reads a closed
file and answers ``ValueError: I/O operation on closed file``. S3 instead answers the object as it was when the read
began. Locally the job's output mirror puts rule-status.json, TensorBoard files and checkpoints while the monitor
Lambda reads them on another thread (docs/decisions/024-local-s3-reads-one-at-a-time.md). While
:func:`s3_reads_as_in_aws` is open, moto answers one S3 request at a time, so a read always finishes before a write
replaces what it reads (moto answers from memory: the wait is short).

The patch points are moto 5.2's ``S3Response`` request entry points (``bucket_response``, ``ambiguous_response``,
``key_response``: its URL map calls them on a new instance per request); they are checked, so a moto upgrade that moves
them fails here.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable

from local_runtime.process_patch import ProcessWidePatch

ENTRY_POINTS = ("bucket_response", "ambiguous_response", "key_response")

# Re-entrant: ambiguous_response answers a key request by calling key_response on the same thread.
_one_request_at_a_time = threading.RLock()


def _install() -> Callable[[], None]:
    response_class = _patch_point()
    originals = {name: getattr(response_class, name) for name in ENTRY_POINTS}
    for name, original in originals.items():
        setattr(response_class, name, _serialised(original))

    def restore() -> None:
        for name, original in originals.items():
            setattr(response_class, name, original)

    return restore


_PATCH = ProcessWidePatch(_install)


def s3_reads_as_in_aws() -> contextlib.AbstractContextManager[None]:
    """While open (in any thread), moto answers S3 requests one at a time; nests and overlaps freely."""
    return _PATCH.opened()


def installed() -> bool:
    return _PATCH.installed()


def _patch_point() -> type:
    from moto.s3 import responses

    for name in ENTRY_POINTS:
        if not callable(getattr(responses.S3Response, name, None)):
            raise AssertionError(f"moto moved {responses.__name__}.S3Response.{name}: update {__name__}")
    return responses.S3Response


def _serialised(original: Callable) -> Callable:
    @functools.wraps(original)
    def answer(self, *args, **kwargs):
        with _one_request_at_a_time:
            return original(self, *args, **kwargs)

    return answer

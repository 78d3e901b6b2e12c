"""The Lambda client moto's Step Functions interpreter invokes a task with, made once per set of botocore handlers
instead of once per task.

moto 5.2's interpreter makes a new boto3 client for every Lambda task it runs (lambda_eval_utils.boto_client_for),
and a botocore client costs milliseconds of CPU to make (its event handlers copied, its endpoint rules and request
signer set up): a workflow test ran a dozen tasks and so made a dozen identical clients, a fifth of the workflow
tests' CPU time with the harness's own clients (yappi). Here a client is kept and handed out again while nothing
it was made from has changed: the region and service, the fake credentials and settings moto always gives it,
whether moto intercepts the calls, boto3's default session and every handler botocore copies into a new client
(``BUILTIN_HANDLERS``, where the local dispatch and a test's interceptors register theirs). A change to any of them
makes a new client, as before; botocore's clients are thread-safe, and these keep no state between calls (moto
builds them with no retries and no parameter validation).

The patch point is moto 5.2's lambda_eval_utils.boto_client_for (the name the module looks up at each task); it is
checked, so a moto upgrade that moves it fails here instead of silently making clients again.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def lambda_clients_kept() -> Iterator[dict[tuple[Any, ...], Any]]:
    """While open, moto's interpreter reuses its Lambda client while nothing it was made from has changed; yields
    the clients kept (one per set of handlers)."""
    import boto3
    from botocore import handlers as botocore_handlers
    from moto.core.models import botocore_stubber
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils

    if not callable(getattr(lambda_eval_utils, "boto_client_for", None)):
        raise AssertionError(
            f"moto's interpreter moved {lambda_eval_utils.__name__}.boto_client_for: update tests/{__name__}.py"
        )
    original = lambda_eval_utils.boto_client_for
    kept: dict[tuple[Any, ...], Any] = {}
    lock = threading.Lock()

    def boto_client_for(region: str, service: str, state_credentials: Any = None) -> Any:
        with lock:  # boto3's default session is not safe for making clients from several threads at once
            if boto3.DEFAULT_SESSION is None:
                boto3.setup_default_session()  # what boto3.client does first: the key names the session it uses
            # The handlers themselves, not their ids: a handler removed and another made at its address is a change.
            key = (
                region,
                service,
                botocore_stubber.enabled,
                boto3.DEFAULT_SESSION,
                tuple(botocore_handlers.BUILTIN_HANDLERS),
            )
            client = kept.get(key)
            if client is None:
                client = kept[key] = original(region=region, service=service, state_credentials=state_credentials)
            return client

    lambda_eval_utils.boto_client_for = boto_client_for
    try:
        yield kept
    finally:
        lambda_eval_utils.boto_client_for = original
        kept.clear()

"""moto's SNS signing key, made once per test process instead of once per subscription.

moto signs every message SNS delivers (the SQS envelope's Signature) with a 2048-bit RSA key it generates for each
subscription: about 50 ms of CPU, and every workflow test subscribes the queue the notifications are read from, so
each paid it again (cProfile over the workflow's threads). Here every subscription signs with one key made on first
use: each message is still signed, the same way; nothing the tests read (Message, Subject, MessageAttributes)
changes.

The patch point is moto 5.2's sns Subscription.private_key; it is checked, so a moto upgrade that moves it fails here
instead of silently making keys again.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def signing_key_made_once() -> Iterator[None]:
    from moto.sns import models

    subscription_class = models.Subscription
    if not callable(getattr(subscription_class, "private_key", None)):
        raise AssertionError(f"moto moved {models.__name__}.Subscription.private_key: update {__name__}")
    original = subscription_class.private_key
    made: list = []
    lock = threading.Lock()

    def private_key(self):
        with lock:
            if not made:
                made.append(original(self))
            return made[0]

    subscription_class.private_key = private_key
    try:
        yield
    finally:
        subscription_class.private_key = original

"""Fixtures every test area shares, and the clock the suite runs on."""

import atexit
import datetime as dt
import os
import sys

# One compute thread per test process, set before anything imports torch: two xdist workers with a thread pool of
# two each on two cores spin against each other (a 32-sample MLP step took 25 ms instead of 4). Training jobs the
# tests start get their own setting from the local platform (--num-threads) or the test.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402

from local_runtime.offline_aws import OFFLINE_AWS_ENVIRONMENT  # noqa: E402

#: `make test` runs the suite with the clock a year ahead (`make test-fast` at today's date): a test that holds only
#: on the day it was written (a literal date that ages, a deadline counted from one) fails there, not on the day it
#: ages.
CLOCK_SHIFT_ENVIRONMENT = "REMEDIATION_TEST_CLOCK_SHIFT_DAYS"


def pytest_addoption(parser):
    parser.addoption(
        "--clock-shift-days",
        type=int,
        default=int(os.environ.get(CLOCK_SHIFT_ENVIRONMENT) or 0),
        help="run every test with the wall clock (time.time, datetime.now, date.today) moved this many days ahead; "
        "it keeps ticking. Processes the tests start keep the real clock.",
    )


def _end_worker_without_finalizing() -> None:
    """An xdist worker's last step: its results are with the controller, its threads joined and the exit handlers
    registered after this one (the temporary directories', the libraries') have run; what is left is the
    interpreter's teardown of every module, which the controller waits for before it reports: 1.9 s after the last
    exit handler in a process that ran the workflow and hook tests (0.6 s for ``import torch`` alone)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def pytest_configure(config):
    from botocore_models_once import models_read_once

    if hasattr(config, "workerinput"):  # an xdist worker; registered before the tests import anything
        atexit.register(_end_worker_without_finalizing)

    # botocore's service models, read once per test process (tests/botocore_models_once.py)
    reading_once = models_read_once()
    reading_once.__enter__()
    config.stash[_MODELS_READ_ONCE] = reading_once
    days = config.getoption("--clock-shift-days")
    if days:
        import time_machine  # only the shifted run needs it

        traveller = time_machine.travel(dt.datetime.now(dt.UTC) + dt.timedelta(days=days), tick=True)
        traveller.start()
        config.stash[_TRAVELLER] = traveller


def pytest_unconfigure(config):
    traveller = config.stash.get(_TRAVELLER, None)
    if traveller is not None:
        traveller.stop()
    reading_once = config.stash.get(_MODELS_READ_ONCE, None)
    if reading_once is not None:
        reading_once.__exit__(None, None, None)


def pytest_report_header(config):
    days = config.getoption("--clock-shift-days")
    return f"clock: {days} days ahead, now reads {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC" if days else None


_TRAVELLER = pytest.StashKey()
_MODELS_READ_ONCE = pytest.StashKey()


@pytest.fixture(scope="session")
def asl_parsed_once():
    """moto's interpreter parses each state machine definition once per test process (tests/asl_parse_cache.py)."""
    from asl_parse_cache import parse_each_definition_once

    with parse_each_definition_once():
        yield


@pytest.fixture(scope="session")
def sns_signing_key_made_once():
    """moto's SNS signs every delivery with one key per test process, not one per subscription
    (tests/sns_signing_key_once.py)."""
    from sns_signing_key_once import signing_key_made_once

    with signing_key_made_once():
        yield


@pytest.fixture(autouse=True)
def handler_clients_per_test():
    """The handlers keep their AWS clients (lambdas.remediation.handler_support.client); each test has its own fake
    account, dispatch and environment, so each starts and ends with none kept."""
    support = sys.modules.get("lambdas.remediation.handler_support")  # only where a test imported the handlers
    if support is not None:
        support.forget_clients()
    yield
    support = sys.modules.get("lambdas.remediation.handler_support")
    if support is not None:
        support.forget_clients()


@pytest.fixture
def offline_aws_credentials(monkeypatch):
    """The local runtime's offline AWS identity, for tests that talk to moto: fake credentials, no
    config files, no metadata lookups, no profile. Tests set their own region."""
    for name, value in OFFLINE_AWS_ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


@pytest.fixture(scope="session")
def xgb():
    """xgboost, imported by the first test that asks for it. At a test module's top it would cost every xdist worker
    a second of collection (it imports scikit-learn and scipy); the tests that use it carry
    ``xdist_group("xgboost")``, so that under ``--dist loadgroup`` (make test-fast) one worker imports it."""
    import xgboost

    return xgboost

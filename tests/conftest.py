"""Fixtures every test area shares."""

import pytest

from local_runtime.offline_aws import OFFLINE_AWS_ENVIRONMENT


@pytest.fixture
def offline_aws_credentials(monkeypatch):
    """The local runtime's offline AWS identity, for tests that talk to moto: fake credentials, no
    config files, no metadata lookups, no profile. Tests set their own region."""
    for name, value in OFFLINE_AWS_ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)

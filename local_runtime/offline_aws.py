"""The AWS identity of everything that runs offline (the local runtime, and the tests): fake
credentials, no configuration files and no instance-metadata lookups, so no call can reach AWS
or pick up a developer's real profile."""

from __future__ import annotations

import os

OFFLINE_AWS_ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_SECURITY_TOKEN": "testing",
    "AWS_EC2_METADATA_DISABLED": "true",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
}

#: The account every local resource belongs to (moto's default account).
ACCOUNT_ID = "123456789012"

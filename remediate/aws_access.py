"""How `remediate cloud` talks to AWS: a session for the stack's region, and every call's failure as one
clear line (no traceback) with the exit code."""

from __future__ import annotations

EXIT_BAD_INPUT = 2
EXIT_AWS_ERROR = 1


class CloudCommandError(Exception):
    """A problem the user can fix; the message names it and the fix."""

    def __init__(self, message: str, exit_code: int = EXIT_BAD_INPUT):
        super().__init__(message)
        self.exit_code = exit_code



def aws_session(region: str | None):
    import boto3

    session = boto3.session.Session(region_name=region) if region else boto3.session.Session()
    if not session.region_name:
        raise CloudCommandError("no AWS region: pass --region or set AWS_REGION / AWS_DEFAULT_REGION")
    return session


def aws_call(what: str, call, *args, **kwargs):
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

    try:
        return call(*args, **kwargs)
    except NoCredentialsError:
        raise CloudCommandError(
            f"{what}: no AWS credentials found; configure them (aws configure, AWS_PROFILE, or environment variables)",
            EXIT_AWS_ERROR,
        ) from None
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "")
        message = error.response.get("Error", {}).get("Message", str(error))
        raise CloudCommandError(f"{what}: {code}: {message}", EXIT_AWS_ERROR) from None
    except BotoCoreError as error:
        raise CloudCommandError(f"{what}: {error}", EXIT_AWS_ERROR) from None



"""Answer AWS operations with in-process Python code, through botocore's own event system.

botocore emits ``before-call.<service>.<Operation>`` after it has validated and
serialised a request and before it sends anything; a handler that returns
``(AWSResponse, parsed)`` ends the call there, and the client treats the pair as
the service's answer (a status >= 300 with ``{"Error": {"Code": ...}}`` becomes
the modelled ``ClientError`` subclass). This module uses that seam to:

* run the real Lambda handlers for ``lambda.Invoke`` (a raised exception becomes
  Lambda's function-error answer, ``FunctionError: Unhandled`` with
  ``{"errorType": <exception class>, "errorMessage": ...}``, so Step Functions
  Retry/Catch match on the exception's name), and
* let the local runtime or a test put its own implementation behind any other
  operation (the SageMaker training API, say), and
* let a test look at every call first (:meth:`LocalDispatch.add_interceptor`),
  dispatched or answered by moto, and answer some with a fault: a throttle, a 5xx,
  a timeout, an action of its own (a fault-injection harness).

Every dispatched request is checked against the service model with
``botocore.validate.validate_parameters`` first, even from clients built with
``parameter_validation=False`` (moto's Step Functions interpreter builds those),
so a request the real service would reject is rejected here too.

Registrations go on botocore's ``BUILTIN_HANDLERS`` (copied into every botocore
session created afterwards, which covers the client moto's interpreter creates
per task on worker threads) and on boto3's current default session if there is
one. Clients that already existed before :meth:`LocalDispatch.install` keep
their copy of the handlers and are not affected; clients and sessions created
while it was installed keep inert handlers after :meth:`LocalDispatch.uninstall`
(they pass every call on to botocore's normal path). Register implementations
before install() where you can: one registered while installed reaches new
sessions and boto3's default session, not other sessions created in between.

    dispatch = LocalDispatch()
    dispatch.register_lambda_function("train", train_handler.handler)
    dispatch.register("sagemaker", "DescribeTrainingJob", describe_training_job)
    with dispatch:
        ...   # any boto3 client created here is answered in-process
"""

from __future__ import annotations

import dataclasses
import io
import json
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import boto3
from botocore import handlers as botocore_handlers
from botocore.awsrequest import AWSResponse
from botocore.response import StreamingBody
from botocore.validate import validate_parameters

#: Where the captured request parameters travel from ``before-parameter-build`` to ``before-call``.
_PARAMS_CONTEXT_KEY = "local_dispatch_params"
#: The same, for the interceptors' look at calls the dispatch does not answer itself.
_INTERCEPTED_PARAMS_CONTEXT_KEY = "local_dispatch_intercepted_params"


class ServiceError(Exception):
    """Raise from an implementation to answer with the service's error shape.

    The caller's botocore raises the modelled exception for ``code`` (for
    example ``client.exceptions.ResourceNotFound``) with ``message``.
    """

    def __init__(self, code: str, message: str, *, status_code: int = 400):
        if status_code < 300:
            raise ValueError(f"status_code for an error must be >= 300; got {status_code}")
        self.code = code
        self.message = message
        self.status_code = status_code
        super().__init__(f"{code}: {message}")


@dataclasses.dataclass(frozen=True)
class OperationCall:
    """One dispatched request: the service id (hyphenised, as in the event name), operation, parameters."""

    service: str
    operation: str
    params: dict[str, Any]
    region: str | None


Implementation = Callable[[OperationCall], Mapping[str, Any] | None]
LambdaHandler = Callable[[Any, Any], Any]
#: Called with every call before it is answered; raises ServiceError (the call answers that error), any botocore
#: exception (the caller sees it raised, as a timeout would be) or returns None (the call goes on).
Interceptor = Callable[[OperationCall], None]


@dataclasses.dataclass
class LambdaContext:
    """The attributes of AWS Lambda's context object that handlers and Powertools read."""

    function_name: str
    invoked_function_arn: str
    aws_request_id: str
    memory_limit_in_mb: int = 512
    function_version: str = "$LATEST"
    log_group_name: str = ""
    log_stream_name: str = "local"
    timeout_seconds: float = 900.0
    _started: float = dataclasses.field(default_factory=time.monotonic)

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.timeout_seconds - (time.monotonic() - self._started)) * 1000))


def function_name_from(function_name_or_arn: str) -> str:
    """'arn:aws:lambda:us-east-1:123456789012:function:train:live' -> 'train'; a plain name stays as it is."""
    if function_name_or_arn.startswith("arn:"):
        parts = function_name_or_arn.split(":")
        if len(parts) < 7 or parts[5] != "function":
            raise ValueError(f"not a Lambda function ARN: {function_name_or_arn!r}")
        return parts[6]
    if ":function:" in function_name_or_arn:  # partial ARN "123456789012:function:train"
        return function_name_or_arn.split(":function:", 1)[1].split(":", 1)[0]
    return function_name_or_arn.split(":", 1)[0]


class LocalDispatch:
    """A registry of in-process implementations, installed into botocore while active."""

    def __init__(self) -> None:
        self._implementations: dict[tuple[str, str], Implementation] = {}
        self._lambda_functions: dict[str, LambdaHandler] = {}
        self._lock = threading.Lock()
        self._installed: list[tuple[str, Callable[..., Any]]] = []
        self._sessions: list[Any] = []
        self._interceptors: list[Interceptor] = []
        self._lambda_timeouts: dict[str, float] = {}
        self._running_invocations: dict[str, int] = {}  # by function name
        self._invocations_ended = threading.Condition()
        self.calls: list[OperationCall] = []

    # ------------------------------------------------------------------ registration

    def register(self, service: str, operation: str, implementation: Implementation) -> None:
        """Answer ``service``'s ``operation`` (e.g. "sagemaker", "CreateTrainingJob") with ``implementation(call)``.

        The implementation returns the parsed response (a dict in the shape of the
        operation's output) or raises :class:`ServiceError`. Any other exception
        becomes an ``InternalFailure`` (HTTP 500) error answer.
        """
        key = (service, operation)
        with self._lock:
            self._implementations[key] = implementation
            if self._installed and not any(event.endswith(f".{service}.{operation}") for event, _ in self._installed):
                self._install_operation(service, operation)

    def register_lambda_function(
        self, function_name: str, handler: LambdaHandler, timeout_seconds: float | None = None
    ) -> None:
        """Run ``handler(event, context)`` for ``lambda.Invoke`` of this function (by name or any ARN of it);
        ``timeout_seconds`` is the function's timeout its context reports (default 900 s, Lambda's most)."""
        self._lambda_functions[function_name_from(function_name)] = handler
        if timeout_seconds is not None:
            self._lambda_timeouts[function_name_from(function_name)] = timeout_seconds
        if ("lambda", "Invoke") not in self._implementations:
            self.register("lambda", "Invoke", self.invoke_lambda_function)

    def lambda_functions(self) -> dict[str, LambdaHandler]:
        """The registered Lambda handlers by function name (to wrap one: register the wrapper under its name)."""
        return dict(self._lambda_functions)

    def lambda_timeout(self, function_name: str) -> float | None:
        return self._lambda_timeouts.get(function_name_from(function_name))

    def wait_for_invocations(self, function_name: str, timeout: float | None) -> bool:
        """Wait until no invocation of ``function_name`` runs (at most ``timeout`` seconds); True when none does."""
        name = function_name_from(function_name)
        with self._invocations_ended:
            return self._invocations_ended.wait_for(lambda: not self._running_invocations.get(name), timeout)

    def add_interceptor(self, interceptor: Interceptor) -> None:
        """Show ``interceptor`` every call from now on: the dispatched ones and those moto (or the network) answers.
        It runs before the call is answered and may answer it with a fault instead (see :data:`Interceptor`)."""
        with self._lock:
            first = not self._interceptors
            self._interceptors.append(interceptor)
            if first and self._installed:
                self._install_interception()

    def remove_interceptor(self, interceptor: Interceptor) -> None:
        with self._lock:
            if interceptor in self._interceptors:
                self._interceptors.remove(interceptor)

    def calls_to(self, service: str, operation: str) -> list[OperationCall]:
        with self._lock:
            return [call for call in self.calls if call.service == service and call.operation == operation]

    # ------------------------------------------------------------------ installation

    def install(self) -> None:
        with self._lock:
            if self._installed:
                return
            default_session = boto3.DEFAULT_SESSION
            self._sessions = [default_session._session] if default_session is not None else []
            for service, operation in list(self._implementations):
                self._install_operation(service, operation)
            if self._interceptors:
                self._install_interception()

    def uninstall(self) -> None:
        with self._lock:
            for spec in self._installed:
                try:
                    botocore_handlers.BUILTIN_HANDLERS.remove(spec)
                except ValueError:
                    pass
                for session in self._sessions:
                    session.unregister(spec[0], spec[1])
            self._installed = []
            self._sessions = []

    def __enter__(self) -> LocalDispatch:
        self.install()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.uninstall()

    def _install_interception(self) -> None:
        """Generic handlers (every service and operation): botocore calls a more specific handler first, so these
        see only the calls no registered implementation answers."""

        def capture_params(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
            if self._installed and self._interceptors:
                context[_INTERCEPTED_PARAMS_CONTEXT_KEY] = params

        def intercept(model: Any, context: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
            params = context.pop(_INTERCEPTED_PARAMS_CONTEXT_KEY, None)
            if not self._installed or not self._interceptors or params is None:
                return None
            call = OperationCall(
                service=model.service_model.service_id.hyphenize(),
                operation=model.name,
                params=params,
                region=context.get("client_region"),
            )
            try:
                self._intercept(call)
            except ServiceError as error:
                return _error_response(error.code, error.message, error.status_code)
            return None

        self._add_handlers([("before-parameter-build", capture_params), ("before-call", intercept)])

    def _intercept(self, call: OperationCall) -> None:
        with self._lock:
            interceptors = list(self._interceptors)
        for interceptor in interceptors:
            interceptor(call)

    def _add_handlers(self, specs: list[tuple[str, Callable[..., Any]]]) -> None:
        default_session = boto3.DEFAULT_SESSION
        if default_session is not None and default_session._session not in self._sessions:
            self._sessions.append(default_session._session)
        for spec in specs:
            botocore_handlers.BUILTIN_HANDLERS.append(spec)
            for session in self._sessions:
                session.register(spec[0], spec[1])
            self._installed.append(spec)

    def _install_operation(self, service: str, operation: str) -> None:
        # Sessions created while installed keep these closures after uninstall: they answer only while active.
        def capture_params(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
            if self._installed:
                context[_PARAMS_CONTEXT_KEY] = params

        def dispatch(model: Any, context: dict[str, Any], **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
            if not self._installed or _PARAMS_CONTEXT_KEY not in context:
                return None
            return self._dispatch(service, operation, model, context)

        # boto3's default session may have been created (from BUILTIN_HANDLERS) since install(): reach it too.
        self._add_handlers(
            [
                (f"before-parameter-build.{service}.{operation}", capture_params),
                (f"before-call.{service}.{operation}", dispatch),
            ]
        )

    # ------------------------------------------------------------------ dispatch

    def _dispatch(self, service: str, operation: str, model: Any, context: dict[str, Any]) -> tuple[AWSResponse, dict]:
        params = context.pop(_PARAMS_CONTEXT_KEY)
        # The real service rejects what its model rejects; so do we, whatever the client's own setting.
        validate_parameters(params, model.input_shape)
        call = OperationCall(service=service, operation=operation, params=params, region=context.get("client_region"))
        with self._lock:
            self.calls.append(call)
            implementation = self._implementations[(service, operation)]
        try:
            self._intercept(call)  # a ServiceError answers the call; a botocore exception reaches the caller raised
        except ServiceError as error:
            return _error_response(error.code, error.message, error.status_code)
        try:
            parsed = dict(implementation(call) or {})
        except ServiceError as error:
            return _error_response(error.code, error.message, error.status_code)
        except Exception as error:  # an implementation bug must surface as the service's own 500, not hang the caller
            return _error_response("InternalFailure", f"{type(error).__name__}: {error}", 500)
        status_code = int(parsed.pop("StatusCode", 200)) if service == "lambda" else 200
        if service == "lambda":
            parsed["StatusCode"] = status_code
        _wrap_streaming_payload(parsed, model)
        headers = {"x-amzn-requestid": str(uuid.uuid4())}
        if parsed.get("FunctionError"):
            headers["x-amz-function-error"] = parsed["FunctionError"]
        parsed["ResponseMetadata"] = {
            "RequestId": headers["x-amzn-requestid"],
            "HTTPStatusCode": status_code,
            "HTTPHeaders": headers,
            "RetryAttempts": 0,
        }
        return AWSResponse("local://dispatch", status_code, headers, _EmptyRaw()), parsed

    def invoke_lambda_function(self, call: OperationCall) -> dict[str, Any]:
        """The lambda.Invoke implementation (public so a test can wrap it, e.g. to inject a service error)."""
        requested = call.params["FunctionName"]
        name = function_name_from(requested)
        handler = self._lambda_functions.get(name)
        if handler is None:
            raise ServiceError(
                "ResourceNotFoundException",
                f"Function not found: {requested} (registered locally: {', '.join(sorted(self._lambda_functions)) or 'none'})",
                status_code=404,
            )
        if call.params.get("InvocationType") == "DryRun":
            return {"StatusCode": 204, "Payload": b""}
        raw_payload = call.params.get("Payload") or b"{}"
        if hasattr(raw_payload, "read"):
            raw_payload = raw_payload.read()
        try:
            event = json.loads(raw_payload)
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise ServiceError(
                "InvalidRequestContentException", f"Could not parse request body into json: {error}"
            ) from None
        arn = (
            requested if requested.startswith("arn:") else f"arn:aws:lambda:{call.region}:123456789012:function:{name}"
        )
        context = LambdaContext(
            function_name=name,
            invoked_function_arn=arn,
            aws_request_id=str(uuid.uuid4()),
            log_group_name=f"/aws/lambda/{name}",
            timeout_seconds=self._lambda_timeouts.get(name, 900.0),
        )
        response: dict[str, Any] = {"StatusCode": 202 if call.params.get("InvocationType") == "Event" else 200}
        with self._invocations_ended:
            self._running_invocations[name] = self._running_invocations.get(name, 0) + 1
        try:
            result = handler(event, context)
        except Exception as error:
            response["FunctionError"] = "Unhandled"
            response["Payload"] = json.dumps(
                {
                    "errorType": type(error).__name__,
                    "errorMessage": str(error),
                    "requestId": context.aws_request_id,
                    "stackTrace": traceback.format_exception(error)[-6:],
                }
            ).encode()
        else:
            response["Payload"] = json.dumps(result).encode()
        finally:
            with self._invocations_ended:
                self._running_invocations[name] -= 1
                self._invocations_ended.notify_all()
        response["ExecutedVersion"] = "$LATEST"
        return response


class _EmptyRaw:
    """The body stream of a dispatched response: the parsed dict already holds everything."""

    def stream(self, **_: Any):
        return iter(())


def _error_response(code: str, message: str, status_code: int) -> tuple[AWSResponse, dict[str, Any]]:
    request_id = str(uuid.uuid4())
    headers = {"x-amzn-requestid": request_id, "x-amzn-errortype": code}
    parsed = {
        "Error": {"Code": code, "Message": message},
        "Message": message,
        "ResponseMetadata": {
            "RequestId": request_id,
            "HTTPStatusCode": status_code,
            "HTTPHeaders": headers,
            "RetryAttempts": 0,
        },
    }
    return AWSResponse("local://dispatch", status_code, headers, _EmptyRaw()), parsed


def _wrap_streaming_payload(parsed: dict[str, Any], model: Any) -> None:
    """Turn bytes in a streaming output member (lambda Payload, s3 Body) into the StreamingBody callers expect."""
    if not model.has_streaming_output:
        return
    payload_member = model.output_shape.serialization["payload"]
    value = parsed.get(payload_member, b"")
    if isinstance(value, str):
        value = value.encode()
    if isinstance(value, (bytes, bytearray)):
        parsed[payload_member] = StreamingBody(io.BytesIO(bytes(value)), len(value))

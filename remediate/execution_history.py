"""Reading an execution back from Step Functions (the Lambdas' cleanup reads it the same way): see
``lambdas.remediation.state.execution_history``."""

from lambdas.remediation.state.execution_history import (  # noqa: F401 - the CLI's import path
    current_state_name,
    execution_start_time,
    latest_state_payload,
    read_history,
)

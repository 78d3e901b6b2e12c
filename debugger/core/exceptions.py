"""The exceptions a trial, a rule and the hook raise, with the names and meanings smdebug documents
(``smdebug.exceptions`` re-exports them). Our own implementation: smdebug's code is not used."""

from __future__ import annotations

from debugger.core.modes import ModeKeys


class SMDebugError(Exception):
    pass


class SMDebugCustomerError(SMDebugError):
    pass


class SMDebugTypeError(SMDebugError, TypeError):
    pass


class SMDebugRuntimeError(SMDebugError, RuntimeError):
    pass


class SMDebugNotImplementedError(SMDebugError, NotImplementedError):
    pass


class SMDebugValueError(SMDebugError, ValueError):
    pass


class InvalidCollectionConfiguration(SMDebugError):
    def __init__(self, c_name: str):
        self.c_name = c_name
        super().__init__(c_name)

    def __str__(self) -> str:
        return (
            f"Collection {self.c_name} has not been configured: give it tensors with "
            f"collection.include(regex) (or CollectionParameters.include_regex) before training starts"
        )


class TensorUnavailableForStep(SMDebugError, KeyError):
    """The tensor was not saved at that step (it may be at others). Also a KeyError: older callers catch that."""

    def __init__(self, tname: str, step: int, mode: ModeKeys = ModeKeys.GLOBAL, has_reductions: bool = False):
        self.tname, self.step, self.mode, self.has_reductions = tname, step, mode, has_reductions
        super().__init__(tname, step)

    def __str__(self) -> str:
        message = f"Value for tensor {self.tname} is not available for step {self.step} with mode {self.mode.name} as it was not saved."
        if self.has_reductions:
            message += " This tensor has reductions saved for this step. You might want to query for the reductions."
        return message


class ShapeUnavailableForStep(SMDebugError):
    def __init__(self, tname: str, step: int, mode: ModeKeys = ModeKeys.GLOBAL):
        self.tname, self.step, self.mode = tname, step, mode
        super().__init__(tname, step)

    def __str__(self) -> str:
        return f"Shape for tensor {self.tname} is not available for step {self.step} with mode {self.mode.name} as it was not saved."


class TensorUnavailable(SMDebugError, KeyError):
    """No tensor of that name was saved (yet). Also a KeyError, as our trial raised before."""

    def __init__(self, tname: str):
        self.tname = tname
        super().__init__(tname)

    def __str__(self) -> str:
        return f"Tensor {self.tname} was not saved."


class StepUnavailable(SMDebugError):
    def __init__(self, step: int, mode: ModeKeys):
        self.step, self.mode = step, mode
        super().__init__(step, mode)

    def __str__(self) -> str:
        return f"Step {self.step} of mode {self.mode.name} is not available as it was not saved"


class StepNotYetAvailable(SMDebugError):
    def __init__(self, step: int, mode: ModeKeys):
        self.step, self.mode = step, mode
        super().__init__(step, mode)

    def __str__(self) -> str:
        return f"Step {self.step} of mode {self.mode.name} not yet available"


class NoMoreData(SMDebugError):
    def __init__(self, step: int, mode: ModeKeys, last_step: int):
        self.step, self.mode, self.last_step = step, mode, last_step
        self.msg = (
            f"Looking for step {step} of mode {mode.name} and reached end of training. Max step available is {last_step}"
        )
        super().__init__(self.msg)

    def __str__(self) -> str:
        return self.msg


class MissingCollectionFiles(SMDebugError):
    def __str__(self) -> str:
        return "Training job has ended. All the collection files could not be loaded"


class IndexReaderException(SMDebugError):
    """The saved data could not be read (a step file that is not a complete step file, an S3 listing that failed)."""

    def __init__(self, message: str):
        self.message = message
        super().__init__(message)

    def __str__(self) -> str:
        return self.message


class InvalidWorker(SMDebugError):
    def __init__(self, worker: str):
        self.worker = worker
        super().__init__(worker)

    def __str__(self) -> str:
        return f"Invalid Worker: {self.worker}"


class RuleEvaluationConditionMet(SMDebugError):
    def __init__(self, rule_name: str, step: int, end_of_rule: bool = False):
        self.rule_name, self.step, self.end_of_rule = rule_name, step, end_of_rule
        super().__init__(rule_name, step)

    def __str__(self) -> str:
        return f"Evaluation of the rule {self.rule_name} at step {self.step} resulted in the condition being met"


class InsufficientInformationForRuleInvocation(SMDebugError):
    def __init__(self, rule_name: str, message: str):
        self.rule_name, self.message = rule_name, message
        super().__init__(rule_name, message)

    def __str__(self) -> str:
        return f"Insufficient information to invoke rule {self.rule_name}: {self.message}"

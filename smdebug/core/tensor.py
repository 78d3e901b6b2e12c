from debugger.trial.tensor import StepState, Tensor

__all__ = ["StepState", "Tensor"]

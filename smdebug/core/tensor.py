from debugger.tensor import StepState, Tensor

__all__ = ["StepState", "Tensor"]

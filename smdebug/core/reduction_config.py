from debugger.core.reductions import ALLOWED_NORMS, ALLOWED_REDUCTIONS, ReductionConfig

__all__ = ["ALLOWED_NORMS", "ALLOWED_REDUCTIONS", "ReductionConfig"]

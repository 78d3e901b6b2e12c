from debugger.core.modes import ALLOWED_MODE_NAMES, ModeKeys

ALLOWED_MODES = list(ModeKeys)

__all__ = ["ALLOWED_MODES", "ALLOWED_MODE_NAMES", "ModeKeys"]

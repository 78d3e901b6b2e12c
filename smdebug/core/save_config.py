from debugger.core.save_config import DEFAULT_SAVE_INTERVAL, SaveConfig, SaveConfigMode

__all__ = ["DEFAULT_SAVE_INTERVAL", "SaveConfig", "SaveConfigMode"]

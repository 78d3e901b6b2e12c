"""When tensors are saved: smdebug's SaveConfig / SaveConfigMode, with its documented semantics.

A step is saved when it is one of ``save_steps``, or when it lies in [start_step, end_step) and
``step % save_interval == 0`` (the two are a union: ``SaveConfig(save_steps=[3, 7])`` saves 0, 3, 7,
500, ...). Steps are mode steps: each mode (TRAIN, EVAL, PREDICT, GLOBAL) counts its own steps and can
have its own configuration; a mode left out falls back to the default configuration.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from contracts import ContractError
from debugger.core.modes import MODE_PREFIXES, ModeKeys, parse_mode

DEFAULT_SAVE_INTERVAL = 500
SAVE_CONFIG_KEYS = ("save_interval", "start_step", "end_step", "save_steps")


def _whole_number(value: Any, where: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ContractError(where, f"must be a whole number >= {minimum}; got {value!r}")
    try:
        number = int(str(value).strip())
    except ValueError:
        raise ContractError(where, f'must be a whole number >= {minimum}, such as "500"; got {value!r}') from None
    if number < minimum:
        raise ContractError(where, f"must be >= {minimum}; got {number}")
    return number


class SaveConfigMode:
    """One mode's save configuration: ``save_interval`` (default 500), ``start_step`` (0), ``end_step``
    (exclusive, None: no end), ``save_steps`` (list of steps saved besides the interval)."""

    def __init__(self, save_interval=None, start_step=None, end_step=None, save_steps=None):
        self.save_interval = DEFAULT_SAVE_INTERVAL if save_interval is None else _whole_number(save_interval, "save_interval", 1)
        self.start_step = 0 if start_step is None else _whole_number(start_step, "start_step", 0)
        self.end_step = None if end_step is None else _whole_number(end_step, "end_step", 0)
        if save_steps is None:
            save_steps = []
        if isinstance(save_steps, (str, bytes)) or not isinstance(save_steps, Iterable):
            raise ContractError("save_steps", f"must be a list of whole numbers such as [0, 10, 20]; got {save_steps!r}")
        self.save_steps = [_whole_number(step, "save_steps", 0) for step in save_steps]
        self._steps = frozenset(self.save_steps)

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name == "save_steps":
            super().__setattr__("_steps", frozenset(value))

    def should_save_step(self, step: int) -> bool:
        if step in self._steps:
            return True
        if step < self.start_step or (self.end_step is not None and step >= self.end_step):
            return False
        return step % self.save_interval == 0

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "save_interval": self.save_interval,
            "start_step": self.start_step,
            "end_step": self.end_step,
            "save_steps": list(self.save_steps),
        }

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SaveConfigMode) and self.to_json_dict() == other.to_json_dict()

    def __repr__(self) -> str:
        return (
            f"SaveConfigMode(save_interval={self.save_interval}, start_step={self.start_step}, "
            f"end_step={self.end_step}, save_steps={self.save_steps})"
        )


class SaveConfig:
    """Per-mode save configurations. ``SaveConfig(save_interval=10)`` applies to every mode;
    ``SaveConfig(mode_save_configs={modes.TRAIN: SaveConfigMode(...)})`` sets some modes, the others
    fall back to the default (the hook's configuration for a collection, else SaveConfigMode())."""

    def __init__(self, mode_save_configs=None, save_interval=None, start_step=None, end_step=None, save_steps=None):
        if mode_save_configs is None:
            configs = {
                mode: SaveConfigMode(save_interval, start_step, end_step, save_steps) for mode in ModeKeys
            }
        else:
            if not isinstance(mode_save_configs, Mapping):
                raise ContractError("mode_save_configs", "must be a dict of smd.modes.X -> smd.SaveConfigMode")
            configs = dict.fromkeys(ModeKeys)
            for key, value in mode_save_configs.items():
                mode = parse_mode(key, "mode_save_configs key")
                if isinstance(value, Mapping):
                    value = SaveConfigMode(**value)
                if value is not None and not isinstance(value, SaveConfigMode):
                    raise ContractError(f"mode_save_configs[{mode.name}]", f"must be a SaveConfigMode; got {value!r}")
                configs[mode] = value
        object.__setattr__(self, "mode_save_configs", configs)

    @classmethod
    def parse(cls, value: Any) -> SaveConfig:
        """SaveConfig, SaveConfigMode (every mode), a dict of modes, or None (the defaults)."""
        if value is None:
            return cls()
        if isinstance(value, SaveConfig):
            return value
        if isinstance(value, SaveConfigMode):
            return cls(mode_save_configs=dict.fromkeys(ModeKeys, value))
        if isinstance(value, Mapping):
            return cls(mode_save_configs=value)
        raise ContractError("save_config", f"must be a SaveConfig, a SaveConfigMode or a dict of modes; got {value!r}")

    def get_save_config(self, mode) -> SaveConfigMode:
        config = self.mode_save_configs[parse_mode(mode)]
        return config if config is not None else SaveConfigMode()

    def set_save_config(self, mode, save_config_mode: SaveConfigMode) -> None:
        if not isinstance(save_config_mode, SaveConfigMode):
            raise ContractError("save_config_mode", f"must be a SaveConfigMode; got {save_config_mode!r}")
        self.mode_save_configs[parse_mode(mode)] = save_config_mode

    def merged_with(self, default: SaveConfig) -> SaveConfig:
        """This configuration with the modes it leaves out taken from ``default``."""
        merged = {mode: config or default.mode_save_configs.get(mode) for mode, config in self.mode_save_configs.items()}
        return SaveConfig(mode_save_configs=merged)

    def should_save_step(self, mode, step: int) -> bool:
        return self.get_save_config(mode).should_save_step(step)

    # ``save_config.end_step = 0`` (smdebug's documented way to stop saving a collection) sets every mode.
    def __getattr__(self, name: str) -> Any:
        if name in SAVE_CONFIG_KEYS:
            values = {repr(getattr(self.get_save_config(mode), name)) for mode in ModeKeys}
            if len(values) == 1:
                return getattr(self.get_save_config(ModeKeys.GLOBAL), name)
            raise AttributeError(f"{name} differs between modes; read it with get_save_config(mode).{name}")
        raise AttributeError(name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in SAVE_CONFIG_KEYS:
            raise AttributeError(f"SaveConfig has no setting {name!r}; settings: {', '.join(SAVE_CONFIG_KEYS)}")
        for mode in ModeKeys:
            current = self.get_save_config(mode).to_json_dict()
            current[name] = value
            self.mode_save_configs[mode] = SaveConfigMode(**current)

    def to_json_dict(self) -> dict[str, Any]:
        return {mode.name: (config.to_json_dict() if config else None) for mode, config in self.mode_save_configs.items()}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SaveConfig) and all(
            self.get_save_config(mode) == other.get_save_config(mode) for mode in ModeKeys
        )

    def __repr__(self) -> str:
        return f"SaveConfig({self.to_json_dict()})"


# --------------------------------------------------------------------------- from the JSON configuration


def _split_steps(value: Any, where: str) -> list[int]:
    if isinstance(value, (list, tuple)):
        parts = list(value)
    else:
        parts = [part.strip() for part in str(value).split(",") if part.strip()]
    if not parts:
        raise ContractError(where, 'must be a comma-separated list of steps such as "0,10,20"')
    return [_whole_number(part, where, 0) for part in parts]


def _mode_parameters(parameters: Mapping[str, Any], prefix: str, where: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key in SAVE_CONFIG_KEYS:
        if prefix + key not in parameters:
            continue
        field = f"{where}.{prefix}{key}"
        raw = parameters[prefix + key]
        if key == "save_steps":
            values[key] = _split_steps(raw, field)
        else:
            values[key] = _whole_number(raw, field, 1 if key == "save_interval" else 0)
    return values


def save_parameters_by_mode(
    parameters: Mapping[str, Any], where: str, base: Mapping[ModeKeys, dict[str, Any]] | None = None
) -> dict[ModeKeys, dict[str, Any]]:
    """HookParameters / CollectionParameters -> {mode: explicit save settings}. Layering, as smdebug's
    configuration file does it: ``base`` (the hook's, for a collection) < plain keys < mode-prefixed keys."""
    plain = _mode_parameters(parameters, "", where)
    layered = {}
    for mode, prefix in MODE_PREFIXES.items():
        values = dict((base or {}).get(mode, {}))
        values.update(plain)
        values.update(_mode_parameters(parameters, prefix, where))
        start, end = values.get("start_step", 0), values.get("end_step")
        if end is not None and end < start:
            raise ContractError(f"{where}.end_step", f"must not be less than start_step ({start}); got {end}")
        layered[mode] = values
    return layered


def save_config_from_modes(by_mode: Mapping[ModeKeys, dict[str, Any]]) -> SaveConfig:
    return SaveConfig(mode_save_configs={mode: SaveConfigMode(**values) for mode, values in by_mode.items()})


def save_parameter_keys() -> tuple[str, ...]:
    """Every save key a hook or collection configuration accepts, plain and mode-prefixed."""
    return SAVE_CONFIG_KEYS + tuple(prefix + key for prefix in MODE_PREFIXES.values() for key in SAVE_CONFIG_KEYS)

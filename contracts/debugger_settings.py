"""The debugger's settings that change a job's training, as remedies name them. Standard library only.

Besides the script's hyperparameters, a job runs with settings of the product's own debugger. Two of them change
how a PyTorch script's training loss is computed, in the job, from step 0 (``debugger.loss_patches``):

* ``robust_loss``: "generalized_cross_entropy" trains on the generalized cross-entropy (Zhang and Sabuncu, NeurIPS
  2018) in place of the script's cross-entropy, so a label the model finds unlikely pulls the weights less;
* ``class_weighting``: "balanced" weights each class's cross-entropy by the inverse of its share of the labels;
  "logit_adjusted" raises each class's score by the log of that share before the loss (Menon et al., ICLR 2021).

Each is a run_spec field (``debugger_<name>``: what the first job trains with, "off" by default) and a setting a
remedy may change like a hyperparameter (``{"debugger_setting": "robust_loss", "set_to": "generalized_cross_entropy"}``).
The product changes the training loss only with the user's consent: run_spec.allow_loss_changes, or a remedy the
user declares that names the setting.
"""

from __future__ import annotations

import dataclasses

from contracts.suggestions import did_you_mean

OFF = "off"
GENERALIZED_CROSS_ENTROPY = "generalized_cross_entropy"
BALANCED = "balanced"
LOGIT_ADJUSTED = "logit_adjusted"
#: The value the run_spec fields took before the product asked for consent; refused with the fix.
RETIRED_AUTO = "auto"


@dataclasses.dataclass(frozen=True)
class DebuggerSetting:
    """A setting of the debugger in the job: its name in a remedy, its run_spec field, the values it takes (the first
    is the default: nothing changed), and what it changes, for the reasons and the docs."""

    name: str
    field: str
    values: tuple[str, ...]
    changes: str

    @property
    def default(self) -> str:
        return self.values[0]


ROBUST_LOSS = DebuggerSetting(
    "robust_loss",
    "debugger_robust_loss",
    (OFF, GENERALIZED_CROSS_ENTROPY),
    "the training loss (a loss robust to wrong labels)",
)
CLASS_WEIGHTING = DebuggerSetting(
    "class_weighting",
    "debugger_class_weighting",
    (OFF, BALANCED, LOGIT_ADJUSTED),
    "the training loss (corrected for how often each class occurs)",
)
#: By the name a remedy gives it.
DEBUGGER_SETTINGS = {setting.name: setting for setting in (ROBUST_LOSS, CLASS_WEIGHTING)}
#: By run_spec field: the keys of a job's settings beside its hyperparameters.
BY_FIELD = {setting.field: setting for setting in DEBUGGER_SETTINGS.values()}
#: The frameworks whose jobs have these settings (the loss patches are PyTorch's).
FRAMEWORKS = ("pytorch",)


def check_value(setting: DebuggerSetting, value: str) -> str:
    """``value`` when the setting takes it; else a ValueError saying what it takes (and what replaced "auto")."""
    if value == RETIRED_AUTO:
        raise ValueError(
            f"\"auto\" is no longer a value: the product changes the training loss only when you allow it. Set "
            f"allow_loss_changes to true to let the planner turn {setting.name} on after a miss it would answer, or "
            f"name the value the first job trains with ({', '.join(setting.values[1:])})"
        )
    if value not in setting.values:
        raise ValueError(f"must be one of {', '.join(setting.values)} (got {value!r}){did_you_mean(value, setting.values)}")
    return value


def settings_of(run_spec_fields: dict[str, object], framework: str) -> dict[str, str]:
    """A job's debugger settings (run_spec field -> value) from its run_spec's fields; none for a framework without
    them."""
    if framework not in FRAMEWORKS:
        return {}
    return {field: str(run_spec_fields.get(field, setting.default)) for field, setting in BY_FIELD.items()}

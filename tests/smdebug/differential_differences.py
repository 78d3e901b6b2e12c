"""Where our smdebug surface and real smdebug 1.0.34 read back differently, on purpose: each difference the harness
may find, with what each implementation does and why ours does what it does.

``paths`` are fnmatch patterns over the compared documents' paths (``trial/tensors/<name>/at/<step>/...``); a
difference applies to the cases that name it, or to every case when ``everywhere`` is set.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Difference:
    id: str
    title: str
    smdebug: str
    ours: str
    why: str
    paths: tuple[str, ...]
    everywhere: bool = False


_ALL = (
    Difference(
        "D1",
        "norms computed on read",
        "reduction_value(step, \"l1\" or \"l2\") of a tensor saved whole is np.linalg.norm(value, ord=1 or 2): a "
        "matrix norm for a 2-d tensor (the largest column sum, the largest singular value) and ValueError for a "
        "scalar or a tensor of 3 or more dimensions; a norm the hook saved is the norm of all the values (torch.norm)",
        "the norm of all the values, whether the hook saved it or the trial computes it",
        "smdebug contradicts itself (one tensor's l2 differs as saved and as computed on read) and its docs (\"the "
        "norms l1, l2\"); a rule ported from SageMaker compares with the norm the hook saves",
        (
            "trial/tensors/*/at/*/reductions/l1*",
            "trial/tensors/*/at/*/reductions/l2*",
            "trial/tensors/*/at/*/reductions/abs_l2*",
            "analyses/analyse.py/weight_l2_at_*",
        ),
        everywhere=True,
    ),
    Difference(
        "D2",
        "a custom rule whose constructor calls super().__init__(base_trial)",
        "Rule.__init__(self, base_trial, action_str, other_trials=None): action_str is required, so the rule of "
        "docs/analysis.md and AWS's custom rule examples (super().__init__(base_trial)) raises TypeError when built",
        "action_str is optional (None): the documented rule runs",
        "the documented signature is what users' rules are written against; requiring the argument breaks them",
        ("runs/1/*", "children", "analyses/analyse.py*", "trial/rule/*"),
    ),
    Difference(
        "D3",
        "save_tensor into a collection the hook does not know yet",
        "the collection is created when the tensor is written, after the hook gave every collection its reduction "
        "configuration, so writing it raises AttributeError ('NoneType' object has no attribute 'save_raw_tensor') "
        "and training stops at step 0",
        "the collection is created with the hook's save and reduction configuration and the tensor saved",
        "docs/api.md documents save_tensor(tensor_name, tensor_value, collections_to_write) with any collection name; a "
        "crash of the training job is a plain bug",
        ("*",),
    ),
    Difference(
        "D4",
        "the step a save_scalar value is saved at",
        "the value is held until the hook next closes a step that saved tensors (or closes), and written into that "
        "step, in that step's mode: a scalar saved at an unsaved step moves to a later one (a training loss can land "
        "at an evaluation step), and of several values of one name held meanwhile the trial reads the last",
        "the value is saved at the step it was given at, in its mode, whatever the save configuration (that step is "
        "then among trial.steps())",
        "moving a value to another step and mode, and dropping values, are plain bugs; docs/api.md says only that "
        "save_scalar saves the value",
        (
            "trial/steps/*",
            "trial/global_step/*",
            "trial/mode_of_step/*",
            "trial/tensor_names_at_step/*",
            "trial/tensor_names_at_mode_step/*",
            "trial/tensor_names_by_mode/*",
            "trial/has_passed_step/*",
            "trial/tensors/scalar/*",
        ),
    ),
    Difference(
        "D5",
        "the collections file is written once",
        "the hook writes its collections file after the first saved step and not again, so a tensor first saved "
        "later by save_tensor is missing from tensor_names(collection=...) of the collection it was saved into",
        "the collections file is rewritten as the hook learns of tensors, and each step file records which "
        "collections saved each tensor: it is listed",
        "a collection that forgets tensors it saved is a plain bug",
        ("trial/collection_tensors/*",),
    ),
    Difference(
        "D6",
        "save_shape hides the tensor",
        "with save_shape=True the index file's shape entry replaces the tensor's location (IndexReader keeps one "
        "entry per tensor and step), so value() raises TensorUnavailableForStep although the hook saved the tensor "
        "(save_raw_tensor=True), and no reduction can be computed from it",
        "the tensor, its shape and its reductions are all readable",
        "the hook saved the tensor; not reading it back is a plain bug",
        ("trial/tensors/*/at/*/value*", "trial/tensors/*/at/*/reductions/*", "trial/tensors/*/values_by_mode/*"),
    ),
    Difference(
        "D7",
        "rules run in the training job",
        "smdebug's hook runs no rules: SageMaker ran them in a separate rule container, against the saved tensors, "
        "and the job trained on",
        "the job's DebugRuleConfigurations (DEBUGGER_RULE_CONFIG_FILE_PATH) run in the job at every step; "
        "ExplodingTensor with StopTraining stops it at the step it explodes, and that first non-finite step is saved "
        "whatever the save configuration",
        "our product (SageMaker Debugger closed to new customers): the rules must run where the job runs",
        ("*",),
    ),
    Difference(
        "D8",
        "the XGBoost collections' patterns",
        'metrics "^[a-zA-z]+-[a-zA-z0-9]+$" and losses "^[a-zA-z]+-.+(?<!(auc|map))$" (a metric named '
        '"validation-error@0.7" or "eval-ndcg@5" is not saved); average_shap and full_shap "^average_shap/.*[^/bias]$" '
        "(a character class: the bias term, and every feature whose name ends in b, i, a or s, are not saved)",
        'every metric xgboost names "<data>-<metric>" (losses: those that fall as the model improves); the SHAP '
        'patterns leave out the bias term alone: "^average_shap/(?!bias$)"',
        "the patterns select the same tensors for the corpus's metric and feature names; smdebug's drop metrics and "
        "features by the characters in their names, a plain bug",
        (
            "trial/collection_include_regex/metrics",
            "trial/collection_include_regex/losses",
            "trial/collection_include_regex/average_shap",
            "trial/collection_include_regex/full_shap",
        ),
    ),
)

DIFFERENCES: dict[str, Difference] = {difference.id: difference for difference in _ALL}

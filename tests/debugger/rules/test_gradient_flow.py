"""VanishingGradient judges the gradient that reaches the model's input side (debugger.rules.gradient_flow): a small
gradient downstream of a healthy input side (an attention key's bias, a fresh attention's query weights) is skipped and
named; an input side under the threshold at two saved steps in a row, or every gradient under it at one, fires. Real
training: tiny Hugging Face models built from their configs (no download) stay quiet, a deep sigmoid stack is caught."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from rule_trials import make, trial_with
from torch import nn

from contracts.rule_status import ISSUES_FOUND, NO_ISSUES_FOUND
from debugger import Hook
from debugger.rules.gradient_flow import input_side, layer_of, mean_abs_over_used_rows, structurally_silent
from debugger.rules.optimization_rules import INPUT_SIDE_STEPS

HEALTHY, TINY, ROUNDING = 1e-3, 1e-9, 1e-14


def gradients(**tensors: float) -> dict[str, tuple[str, np.ndarray]]:
    """A saved step: ``name=mean |g|`` for each gradient tensor (``__`` spells a dot), signs alternating."""
    return {
        f"gradient/{name.replace('__', '.')}": ("gradients", np.array([value, -value, value, -value]))
        for name, value in tensors.items()
    }


def test_layer_of_a_gradient_tensor_is_its_module_path():
    assert layer_of("gradient/bert.embeddings.word_embeddings.weight") == "bert.embeddings.word_embeddings"
    assert layer_of("gradient/scale") == "scale"


def test_an_embeddings_gradient_is_judged_over_the_rows_the_batch_used():
    gradient = np.zeros((1000, 4))
    gradient[[3, 7]] = 2e-6  # two ids in the batch: the plain mean is 4e-9, under the threshold
    assert mean_abs_over_used_rows(gradient) == pytest.approx(2e-6)
    assert mean_abs_over_used_rows(np.zeros((5, 4))) == 0.0
    side = input_side(["gradient/emb.weight", "gradient/fc.weight"], {"gradient/emb.weight": gradient}.__getitem__)
    assert (side.layer, side.tensors, side.value) == ("emb", ("gradient/emb.weight",), pytest.approx(2e-6))


def test_a_small_gradient_downstream_of_a_healthy_input_side_is_skipped_and_named(tmp_path):
    # a fresh attention's query weights: small (1e-8), but far above float32 rounding of the model's scale
    trial = trial_with(tmp_path, {0: gradients(embed__weight=HEALTHY, key__weight=HEALTHY, query__weight=1e-8,
                                               head__weight=HEALTHY)})
    rule = make("VanishingGradient", trial)
    assert rule.invoke_at_step(0) is False
    reason = rule.skipped_tensors()["gradient/query.weight"]
    assert reason.startswith("mean |gradient| 1e-08 at step 0 while the gradient reaching the input side (embed.weight: 0.001)")


# --------------------------------------------------------------------------- structural silence, every rule


PARAMETER_RULES = ("VanishingGradient", "WeightUpdateRatio", "PoorWeightInitialization", "AllZero", "UnchangedTensor")


def with_weights(step: int, input_side: float, key_bias: float) -> dict[str, tuple[str, np.ndarray]]:
    """A saved step of a small attention model: healthy gradients but for the key bias's (and the input side's)."""
    rng = np.random.default_rng(step)
    tensors = {name: ("gradients", value * rng.choice([-1.0, 1.0], 64) * rng.uniform(0.5, 1.5, 64))
               for name, value in {"gradient/embed.weight": input_side, "gradient/key.weight": HEALTHY,
                                   "gradient/key.bias": key_bias, "gradient/head.weight": HEALTHY}.items()}
    tensors["key.bias"] = ("biases", np.zeros(64))  # never moves: its gradient is zero
    tensors["key.weight"] = ("weights", rng.normal(size=64))
    return tensors


def test_a_gradient_at_float32_rounding_of_the_models_scale_is_structurally_silent_for_every_rule(tmp_path):
    trial = trial_with(tmp_path, {step: with_weights(step, HEALTHY, ROUNDING) for step in range(4)})
    silent = structurally_silent(trial, 0)
    assert set(silent) == {"gradient/key.bias", "key.bias"}
    assert silent["key.bias"].startswith("its gradient is zero by the model's structure: at most 1.5e-14 at step 0, "
                                         "within float32 rounding of the model's gradient scale")
    rules = {rule_name: make(rule_name, trial) for rule_name in PARAMETER_RULES}
    for rule_name, rule in rules.items():
        assert [rule.invoke_at_step(step) for step in range(4)] == [False] * 4, (rule_name, rule.finding)
    # each names what it skipped (the status details): the key bias's gradient, and the bias that never moves
    assert {"gradient/key.bias", "key.bias"} <= set(rules["UnchangedTensor"].skipped_tensors())
    assert {"gradient/key.bias", "key.bias"} <= set(rules["AllZero"].skipped_tensors())


def test_nothing_is_silent_when_the_input_side_is_at_rounding_too(tmp_path):
    # a gradient that dies on its way back: the input side gets rounding as well, so the key bias is judged
    trial = trial_with(tmp_path, {step: with_weights(step, ROUNDING, ROUNDING) for step in range(4)})
    assert structurally_silent(trial, 0) == {}
    rule = make("UnchangedTensor", trial)
    assert [rule.invoke_at_step(step) for step in range(3)] == [False, False, True]
    assert rule.finding.tensor in {"gradient/embed.weight", "gradient/key.bias", "key.bias"}


def test_a_small_real_gradient_is_not_silent(tmp_path):
    # a fresh attention's query weights at hidden 32: 3e-6 of the model's scale, 30 times float32's epsilon
    trial = trial_with(tmp_path, {0: with_weights(0, HEALTHY, HEALTHY * 3e-6)})
    assert structurally_silent(trial, 0) == {}


def test_an_input_side_under_the_threshold_fires_at_the_second_saved_step(tmp_path):
    steps = {step: gradients(first__weight=TINY, first__bias=TINY, head__weight=HEALTHY) for step in (0, 10)}
    trial = trial_with(tmp_path, steps)
    rule = make("VanishingGradient", trial)
    assert INPUT_SIDE_STEPS == 2
    assert rule.invoke_at_step(0) is False
    assert "judged again at the next saved step" in rule.latest_note
    assert rule.invoke_at_step(10) is True
    assert rule.finding.tensor == "gradient/first.weight"
    assert rule.finding.message.startswith(
        "mean |gradient| of the model's input side (first: 2 tensor(s), at most 1e-09 in gradient/first.weight) is "
        "below threshold 1e-07 at steps 0, 10: the gradient vanishes before it reaches the first layer; 2 of 3"
    )


def test_an_input_side_that_recovers_starts_its_count_again(tmp_path):
    trial = trial_with(tmp_path, {0: gradients(first__weight=TINY, head__weight=HEALTHY),
                                  10: gradients(first__weight=HEALTHY, head__weight=HEALTHY),
                                  20: gradients(first__weight=TINY, head__weight=HEALTHY)})
    rule = make("VanishingGradient", trial)
    assert [rule.invoke_at_step(step) for step in (0, 10, 20)] == [False, False, False]


def test_every_gradient_under_the_threshold_fires_at_once(tmp_path):
    trial = trial_with(tmp_path, {0: gradients(first__weight=TINY, head__weight=TINY * 10)})
    rule = make("VanishingGradient", trial)
    assert rule.invoke_at_step(0) is True
    assert rule.finding.tensor == "gradient/first.weight"
    assert "every one of the model's 2 gradient tensors" in rule.finding.message


# --------------------------------------------------------------------------- real training


def vanishing_rule() -> list[dict]:
    return [{"RuleConfigurationName": "VanishingGradient", "RuleParameters": {"rule_to_invoke": "VanishingGradient"}}]


def tokens(seed: int, n: int = 256, length: int = 16, vocabulary: int = 48) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 4, (n,), generator=generator)
    ids = torch.randint(5, vocabulary, (n, length), generator=generator)
    ids[:, 0] = 1 + labels  # the class's keyword first
    return ids, labels


def hugging_face_model(kind: str, hidden: int) -> nn.Module:
    transformers = pytest.importorskip("transformers")
    if kind == "encoder":
        config = transformers.BertConfig(vocab_size=48, hidden_size=hidden, num_hidden_layers=2, num_attention_heads=2,
                                         intermediate_size=4 * hidden, max_position_embeddings=16, num_labels=4)
        return transformers.BertForSequenceClassification(config)
    config = transformers.GPT2Config(vocab_size=48, n_positions=16, n_embd=hidden, n_layer=2, n_head=2)
    return transformers.GPT2LMHeadModel(config)


@pytest.mark.training
@pytest.mark.parametrize(("kind", "hidden", "seed"), [("encoder", 32, 11), ("encoder", 128, 12), ("decoder", 32, 13)])
def test_a_healthy_transformer_from_its_config_is_not_a_vanishing_gradient(tmp_path, kind, hidden, seed):
    torch.manual_seed(seed)
    model = hugging_face_model(kind, hidden)
    hook = Hook.from_configs(hook_config={"HookParameters": {"save_interval": "1"}}, rule_configs=vanishing_rule(),
                             out_dir=tmp_path, job_name="transformer")
    hook.register_module(model)
    ids, labels = tokens(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4)  # the Trainer's optimizer, clipping at 1.0
    small_at_start = set()
    for step in range(12):
        batch = slice(32 * (step % 8), 32 * (step % 8 + 1))
        output = model(input_ids=ids[batch], labels=labels[batch] if kind == "encoder" else ids[batch])
        optimizer.zero_grad()
        output.loss.backward()
        if step == 0:  # what SageMaker's rule would read: some gradient tensor under 1e-7
            small_at_start = {name for name, p in model.named_parameters() if p.grad.abs().mean() < 1e-7}
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
    (status,) = hook.close().rules
    assert status.RuleEvaluationStatus == NO_ISSUES_FOUND, status.issue
    if kind == "encoder":
        assert {"bert.encoder.layer.0.attention.self.key.bias", "bert.encoder.layer.1.attention.self.key.bias"} <= small_at_start
        assert "gradient/bert.encoder.layer.0.attention.self.key.bias (its gradient is zero by the model's structure" in status.StatusDetails


@pytest.mark.training
@pytest.mark.parametrize("seed", [21, 22])
def test_a_deep_sigmoid_stack_at_a_tiny_initial_scale_is_still_a_vanishing_gradient(tmp_path, seed):
    from sklearn.datasets import load_digits

    torch.manual_seed(seed)
    layers = []
    for _ in range(8):
        layer = nn.Linear(64, 64)
        layer.weight.data *= 0.3  # a tenth of the usual scale: the gradient dies on the way down
        layers += [layer, nn.Sigmoid()]
    model = nn.Sequential(*layers, nn.Linear(64, 10))
    hook = Hook.from_configs(hook_config={"HookParameters": {"save_interval": "10"}}, rule_configs=vanishing_rule(),
                             out_dir=tmp_path, job_name="sigmoid")
    hook.register_module(model)
    digits = load_digits()
    x, y = torch.tensor(digits.data / 16, dtype=torch.float32), torch.tensor(digits.target)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for step in range(5):
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x[64 * step : 64 * (step + 1)]), y[64 * step : 64 * (step + 1)]).backward()
        optimizer.step()
    (status,) = hook.close().rules
    assert status.RuleEvaluationStatus == ISSUES_FOUND
    # the first saved steps (0 and 1) are saved for the rule whatever the save interval
    assert status.issue.step == INPUT_SIDE_STEPS - 1
    assert status.issue.tensor in {"gradient/0.weight", "gradient/0.bias"}
    assert status.issue.value < 1e-10


def parameter_rules() -> list[dict]:
    from contracts.rule_selection import product_rule_parameters

    return [{"RuleConfigurationName": name, "RuleParameters": {"rule_to_invoke": name, **product_rule_parameters(name)}}
            for name in PARAMETER_RULES]


@pytest.mark.training
@pytest.mark.parametrize(("kind", "hidden", "seed"), [("encoder", 32, 31), ("encoder", 128, 32), ("decoder", 32, 33),
                                                      ("decoder", 64, 34)])
def test_a_healthy_transformer_from_its_config_trips_no_parameter_rule(tmp_path, kind, hidden, seed):
    torch.manual_seed(seed)
    model = hugging_face_model(kind, hidden)
    hook = Hook.from_configs(hook_config={"HookParameters": {"save_interval": "1"}}, rule_configs=parameter_rules(),
                             out_dir=tmp_path, job_name="transformer")
    hook.register_module(model)
    ids, labels = tokens(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4)
    for step in range(12):
        batch = slice(32 * (step % 8), 32 * (step % 8 + 1))
        output = model(input_ids=ids[batch], labels=labels[batch] if kind == "encoder" else ids[batch])
        optimizer.zero_grad()
        output.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
    statuses = {status.RuleConfigurationName: status for status in hook.close().rules}
    assert {name: status.RuleEvaluationStatus for name, status in statuses.items()} == dict.fromkeys(
        PARAMETER_RULES, NO_ISSUES_FOUND), {name: status.issue for name, status in statuses.items()}
    if kind == "encoder":  # the key biases: zero by softmax's invariance to a shift of every key, named
        details = statuses["UnchangedTensor"].StatusDetails
        assert "gradient/bert.encoder.layer.0.attention.self.key.bias (its gradient is zero by the model's structure" in details

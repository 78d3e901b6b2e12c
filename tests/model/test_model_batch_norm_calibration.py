import torch
from torch import nn

from model.data import generate_synthetic_dataset
from model.resnet import build_resnet
from model.train import recalibrate_batch_norm, to_model_input


def test_recalibration_sets_running_statistics_to_the_sample_statistics_without_touching_weights():
    torch.manual_seed(0)
    model = build_resnet(depth=8, add_batch_norm=True)
    x, _ = generate_synthetic_dataset(64, seed=0)
    images = torch.as_tensor(x)
    channel_mean = torch.full((3,), 0.5)
    first_norm = model.blocks[0].batch_norm
    captured = []
    handle = first_norm.register_forward_hook(lambda module, inputs, output: captured.append(inputs[0].detach()))
    weights_before = {name: value.clone() for name, value in model.named_parameters()}
    with torch.no_grad():  # stale statistics, as after fast-moving training steps
        first_norm.running_mean.fill_(5.0)
        first_norm.running_var.fill_(9.0)

    recalibrate_batch_norm(model, images, torch.arange(64), channel_mean, batch_size=32)
    handle.remove()

    inputs = torch.cat(captured)  # two calibration batches of 32
    torch.testing.assert_close(first_norm.running_mean, inputs.mean(dim=(0, 2, 3)), rtol=1e-4, atol=1e-5)
    per_batch_var = torch.stack([batch.var(dim=(0, 2, 3), unbiased=True) for batch in captured])
    torch.testing.assert_close(first_norm.running_var, per_batch_var.mean(dim=0), rtol=1e-4, atol=1e-5)
    assert first_norm.momentum == 0.1  # restored for training
    for name, value in model.named_parameters():
        torch.testing.assert_close(value, weights_before[name])


def test_recalibration_is_a_no_op_without_batch_norm():
    model = build_resnet(depth=8)
    state = {name: value.clone() for name, value in model.state_dict().items()}
    x, _ = generate_synthetic_dataset(8, seed=0)
    recalibrate_batch_norm(model, torch.as_tensor(x), torch.arange(8), torch.zeros(3), batch_size=4)
    assert all(torch.equal(value, state[name]) for name, value in model.state_dict().items())
    assert not any(isinstance(module, nn.BatchNorm2d) for module in model.modules())
    assert to_model_input(x[:2], torch.zeros(3)).shape == (2, 3, 32, 32)

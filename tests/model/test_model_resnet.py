import pytest
import torch
from torch import nn

from model.hyperparameters import SUPPORTED_ACTIVATIONS
from model.resnet import ResidualBlock, build_resnet


def parameter_count(model: nn.Module) -> int:
    return sum(parameter.numel() for parameter in model.parameters())


def test_resnet20_has_about_0_27_million_parameters_and_cifar_shapes():
    model = build_resnet()
    assert 265_000 <= parameter_count(model) <= 275_000
    logits = model(torch.randn(4, 3, 32, 32))
    assert logits.shape == (4, 10)
    blocks = [module for module in model.modules() if isinstance(module, ResidualBlock)]
    assert len(blocks) == 9  # 3 stacks of (20 - 2) / 6
    assert not any(isinstance(module, nn.BatchNorm2d) for module in model.modules())


@pytest.mark.parametrize(("depth", "blocks"), [(8, 3), (14, 6), (32, 15)])
def test_depth_is_6n_plus_2(depth, blocks):
    model = build_resnet(depth=depth, num_classes=7)
    assert sum(isinstance(module, ResidualBlock) for module in model.modules()) == blocks
    assert model(torch.randn(2, 3, 32, 32)).shape == (2, 7)


def test_bad_depth_and_activation_are_rejected_by_name():
    with pytest.raises(ValueError, match="6n\\+2"):
        build_resnet(depth=21)
    with pytest.raises(ValueError, match="activation must be one of"):
        build_resnet(activation="swish")


def test_stacks_downsample_with_stride_two_and_projection_shortcuts():
    model = build_resnet()
    blocks = [module for module in model.modules() if isinstance(module, ResidualBlock)]
    projections = [index for index, block in enumerate(blocks) if isinstance(block.shortcut, nn.Conv2d)]
    assert projections == [3, 6]
    assert [blocks[index].conv_in.stride for index in projections] == [(2, 2), (2, 2)]
    assert [blocks[index].shortcut.kernel_size for index in projections] == [(1, 1), (1, 1)]
    features = model.blocks(model.stem(torch.randn(1, 3, 32, 32)))
    assert features.shape == (1, 64, 8, 8)


def test_blocks_are_elu_conv_elu_conv_with_batch_norm_right_before_the_add():
    block = build_resnet(add_batch_norm=True).blocks[0]
    assert [type(child).__name__ for child in block.children()] == [
        "ELU",
        "Conv2d",
        "ELU",
        "Conv2d",
        "BatchNorm2d",
        "Identity",
    ]
    # The block's output is its input plus the batch-normalised residual branch.
    block.eval()
    inputs = torch.randn(2, 16, 32, 32)
    residual = block.batch_norm(block.conv_out(block.activation_mid(block.conv_in(block.activation_in(inputs)))))
    torch.testing.assert_close(block(inputs), inputs + residual)


@pytest.mark.parametrize("activation", SUPPORTED_ACTIVATIONS)
def test_every_supported_activation_builds(activation):
    model = build_resnet(depth=8, activation=activation)
    assert torch.isfinite(model(torch.randn(2, 3, 32, 32))).all()


def test_he_normal_initialisation_scale():
    torch.manual_seed(0)
    conv = build_resnet().blocks[8].conv_out  # 64 -> 64 channels, 3x3: fan_in 576
    expected = (2.0 / 576) ** 0.5
    assert conv.weight.std().item() == pytest.approx(expected, rel=0.05)
    assert conv.weight.abs().max().item() <= 2 * expected / 0.87962566103423978 + 1e-6  # truncated at 2 sigma
    assert torch.count_nonzero(conv.bias) == 0


def test_the_convolution_feeding_batch_norm_has_no_bias():
    # A bias right before BatchNorm is cancelled by its mean subtraction: its gradient is ~0, which
    # VanishingGradient would report on a healthy model.
    with_norm = build_resnet(add_batch_norm=True)
    assert all(block.conv_out.bias is None for block in with_norm.blocks)
    assert all(block.conv_out.bias is not None for block in build_resnet().blocks)
    assert parameter_count(with_norm) == parameter_count(build_resnet()) - (3 * 16 + 3 * 32 + 3 * 64) + sum(
        2 * block.batch_norm.num_features for block in with_norm.blocks
    )

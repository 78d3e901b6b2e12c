"""The reference network: a CIFAR ResNet (depth 6n+2) with ELU-Conv-ELU-Conv residual blocks.

After Shah et al. 2016, "Deep Residual Networks with Exponential Linear Unit",
as the AWS sample builds it from Keras' ``resnet_v1``: a 3x3 stem convolution,
three stacks of n residual blocks with 16, 32 and 64 filters (the first block
of stacks 2 and 3 halves the resolution with stride 2 and a 1x1 convolution
on the shortcut), a final activation, global average pooling and a linear
head. Convolutions and the head use He-normal initialisation (Keras'
truncated ``he_normal``). Batch normalisation is optional and, when enabled,
sits right before the residual addition: without it the residual branches add
up unnormalised and the network explodes at the reference learning rates.

The L2 penalty of the Keras model (1e-4) is applied through SGD's
``weight_decay`` by the training loop, not here.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from model.hyperparameters import SUPPORTED_ACTIVATIONS

STACK_FILTERS = (16, 32, 64)

# Keras' he_normal draws from a normal truncated at two standard deviations and
# widens the standard deviation by this factor so the variance stays 2 / fan_in.
_TRUNCATED_NORMAL_STDDEV_CORRECTION = 0.87962566103423978


def make_activation(name: str) -> nn.Module:
    if name == "elu":
        return nn.ELU()
    if name == "relu":
        return nn.ReLU()
    if name == "leaky_relu":
        return nn.LeakyReLU(0.01)
    if name == "selu":
        return nn.SELU()
    if name == "gelu":
        return nn.GELU()
    if name == "tanh":
        return nn.Tanh()
    if name == "sigmoid":
        return nn.Sigmoid()
    raise ValueError(f"activation must be one of {', '.join(SUPPORTED_ACTIVATIONS)}; got {name!r}")


def he_normal_(weight: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
    """Keras' ``he_normal``: truncated normal, variance 2 / fan_in; ``scale`` multiplies its standard deviation
    (0: all zeros)."""
    fan_in = weight[0].numel()
    stddev = scale * math.sqrt(2.0 / fan_in) / _TRUNCATED_NORMAL_STDDEV_CORRECTION
    with torch.no_grad():
        if stddev == 0:
            return weight.zero_()
        return nn.init.trunc_normal_(weight, mean=0.0, std=stddev, a=-2.0 * stddev, b=2.0 * stddev)


class ResidualBlock(nn.Module):
    """activation -> conv3x3 -> activation -> conv3x3 [-> BatchNorm] (+ shortcut)."""

    def __init__(self, in_channels: int, out_channels: int, stride: int, activation: str, add_batch_norm: bool):
        super().__init__()
        self.activation_in = make_activation(activation)
        self.conv_in = nn.Conv2d(in_channels, out_channels, kernel_size=3, stride=stride, padding=1)
        self.activation_mid = make_activation(activation)
        # A bias right before batch norm is cancelled by its mean subtraction: its gradient is ~0,
        # which is dead weight and trips VanishingGradient, so that convolution has none.
        self.conv_out = nn.Conv2d(
            out_channels, out_channels, kernel_size=3, stride=1, padding=1, bias=not add_batch_norm
        )
        self.batch_norm = nn.BatchNorm2d(out_channels) if add_batch_norm else nn.Identity()
        needs_projection = stride != 1 or in_channels != out_channels
        self.shortcut = (
            nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=stride) if needs_projection else nn.Identity()
        )

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        residual = self.conv_in(self.activation_in(inputs))
        residual = self.conv_out(self.activation_mid(residual))
        residual = self.batch_norm(residual)
        return self.shortcut(inputs) + residual


class ResNet(nn.Module):
    def __init__(
        self,
        depth: int = 20,
        activation: str = "elu",
        add_batch_norm: bool = False,
        num_classes: int = 10,
        dropout: float = 0.0,
        init_scale: float = 1.0,
    ):
        super().__init__()
        if depth < 8 or (depth - 2) % 6 != 0:
            raise ValueError(f"depth must be 6n+2 with n >= 1 (8, 14, 20, 32, 44, 56, 110); got {depth}")
        if num_classes < 2:
            raise ValueError(f"num_classes must be at least 2; got {num_classes}")
        make_activation(activation)  # validates the name
        self.depth = depth
        self.activation_name = activation
        self.add_batch_norm = add_batch_norm
        blocks_per_stack = (depth - 2) // 6

        self.stem = nn.Conv2d(3, STACK_FILTERS[0], kernel_size=3, stride=1, padding=1)
        blocks: list[nn.Module] = []
        in_channels = STACK_FILTERS[0]
        for stack_index, filters in enumerate(STACK_FILTERS):
            for block_index in range(blocks_per_stack):
                stride = 2 if stack_index > 0 and block_index == 0 else 1
                blocks.append(ResidualBlock(in_channels, filters, stride, activation, add_batch_norm))
                in_channels = filters
        self.blocks = nn.Sequential(*blocks)
        self.final_activation = make_activation(activation)
        self.pool = nn.AdaptiveAvgPool2d(1)
        # No parameters: a checkpoint saved without dropout loads into a model with it, and back.
        self.dropout = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        self.head = nn.Linear(in_channels, num_classes)
        self._initialise(init_scale)

    def _initialise(self, init_scale: float) -> None:
        for module in self.modules():
            if isinstance(module, (nn.Conv2d, nn.Linear)):
                he_normal_(module.weight, init_scale)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.BatchNorm2d):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        features = self.blocks(self.stem(images))
        features = self.pool(self.final_activation(features))
        return self.head(self.dropout(torch.flatten(features, 1)))


def build_resnet(
    depth: int = 20,
    activation: str = "elu",
    add_batch_norm: bool = False,
    num_classes: int = 10,
    dropout: float = 0.0,
    init_scale: float = 1.0,
) -> nn.Module:
    """ResNet-``depth`` for 32x32x3 inputs (NCHW float tensors), logits of ``num_classes``."""
    return ResNet(
        depth=depth,
        activation=activation,
        add_batch_norm=add_batch_norm,
        num_classes=num_classes,
        dropout=dropout,
        init_scale=init_scale,
    )

"""Models of the source papers, written as pure functions of their parameters.

Every model here has no buffers that change in training (no BatchNorm running statistics)
and no randomness in the forward pass (no dropout), so that
``torch.func.functional_call(model, params, (x,))`` under ``torch.vmap`` runs many clients'
copies at once.

Registered names (:data:`MODELS`): ``lenet5``, ``mlp``, ``cnn``, ``linear``, ``resnet9``,
``vgg16``, ``vgg8``.
:func:`build_model` builds one, optionally initialised from a ``torch.Generator`` without
touching the global random state.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import cast

import torch
from torch import nn

from econ.validation import choice

__all__ = ["MODELS", "build_model", "cnn", "lenet5", "linear", "mlp", "resnet9", "vgg8", "vgg16"]


def _image_shape(name: str, input_shape: tuple[int, ...]) -> tuple[int, int, int]:
    if len(input_shape) != 3 or min(input_shape) < 1:
        raise ValueError(f"model {name!r} needs image inputs (C, H, W), got {input_shape}")
    c, h, w = (int(s) for s in input_shape)
    return c, h, w


def _outputs(n_classes: int) -> int:
    if n_classes < 0:
        raise ValueError(f"n_classes must be >= 0 (0 for regression), got {n_classes}")
    return max(n_classes, 1)


def _flat_size(features: nn.Module, input_shape: tuple[int, ...]) -> int:
    with torch.no_grad():
        return int(features(torch.zeros(1, *input_shape)).numel())


def lenet5(input_shape: tuple[int, ...], n_classes: int) -> nn.Module:
    """LeNet-5 as in the thesis code (tanh, max-pool; Werner 2024, ch. 3 §3.5).

    ``Conv2d(C,6,5,padding=2) Tanh MaxPool2d(2) Conv2d(6,16,5) Tanh MaxPool2d(2) Flatten
    Linear(400,120) Tanh Linear(120,84) Tanh Linear(84,n)`` for 1x28x28 inputs. Other inputs
    change ``C`` and the flatten size; when the second convolution would not fit (images
    smaller than 12 pixels, e.g. 8x8 digits) it is padded by 2 to keep the spatial size.
    """
    c, h, w = _image_shape("lenet5", input_shape)
    pad2 = 0 if min(h, w) // 2 >= 6 else 2
    features = nn.Sequential(
        nn.Conv2d(c, 6, 5, padding=2),
        nn.Tanh(),
        nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5, padding=pad2),
        nn.Tanh(),
        nn.MaxPool2d(2),
        nn.Flatten(),
    )
    flat = _flat_size(features, input_shape)
    return nn.Sequential(
        *features,
        nn.Linear(flat, 120),
        nn.Tanh(),
        nn.Linear(120, 84),
        nn.Tanh(),
        nn.Linear(84, _outputs(n_classes)),
    )


def mlp(input_shape: tuple[int, ...], n_classes: int, hidden: int = 200) -> nn.Module:
    """The 784-200-10 network of the clustering experiments (Werner 2024, ch. 2 §2.4).

    ``Flatten Linear(d, 200) ReLU Linear(200, n)``, returning logits.
    """
    d = math.prod(input_shape)
    return nn.Sequential(
        nn.Flatten(), nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, _outputs(n_classes))
    )


def cnn(input_shape: tuple[int, ...], n_classes: int) -> nn.Module:
    """IP-FL's CNN (Khan et al. §6.1: "32x64x64 convolutional with 3136x128 linear layer").

    ``Conv(C,32,3,p1) ReLU MaxPool2 Conv(32,64,3,p1) ReLU MaxPool2 Conv(64,64,3,p1) ReLU``,
    then (for feature maps larger than 7x7, e.g. CIFAR) ``AdaptiveAvgPool2d(7)``, ``Flatten``,
    ``Linear(3136,128) ReLU Linear(128,n)``. Inputs of 2x2 to 7x7 feature maps flatten as
    they are.
    """
    c, h, w = _image_shape("cnn", input_shape)
    if min(h, w) < 4:
        raise ValueError(f"model 'cnn' needs images of at least 4x4, got {input_shape}")
    layers: list[nn.Module] = [
        nn.Conv2d(c, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(64, 64, 3, padding=1),
        nn.ReLU(),
    ]
    if min(h, w) // 4 > 7:
        layers.append(nn.AdaptiveAvgPool2d(7))
    layers.append(nn.Flatten())
    features = nn.Sequential(*layers)
    flat = _flat_size(features, input_shape)
    return nn.Sequential(
        *features, nn.Linear(flat, 128), nn.ReLU(), nn.Linear(128, _outputs(n_classes))
    )


def linear(input_shape: tuple[int, ...], n_classes: int) -> nn.Module:
    """``Flatten Linear(d, n)``: multinomial logistic regression, or linear regression.

    Linear regression has one output, when ``n_classes = 0`` (the synthetic experiments of
    Werner 2024, ch. 2).
    """
    return nn.Sequential(nn.Flatten(), nn.Linear(math.prod(input_shape), _outputs(n_classes)))


def _conv_block(c_in: int, c_out: int, pool: bool = False) -> nn.Sequential:
    layers: list[nn.Module] = [
        nn.Conv2d(c_in, c_out, 3, padding=1),
        nn.GroupNorm(min(32, c_out), c_out),
        nn.ReLU(),
    ]
    if pool:
        layers.append(nn.MaxPool2d(2))
    return nn.Sequential(*layers)


class _Residual(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.body = nn.Sequential(_conv_block(channels, channels), _conv_block(channels, channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.body(x)


def resnet9(input_shape: tuple[int, ...], n_classes: int) -> nn.Module:
    """ResNet-9 of CoBo's vision code, with GroupNorm (32 groups) in place of BatchNorm.

    ``cb(C,64) cb(64,128,pool) res(128) cb(128,256,pool) cb(256,512,pool) res(512)
    global max-pool Flatten Linear(512,n)``; ``cb`` = Conv3x3 + norm + ReLU (+ MaxPool2).
    The global max-pool equals CoBo's ``MaxPool2d(4)`` on 32x32 inputs and also fits smaller
    ones; the head's dropout is left out to keep the forward pass deterministic.
    (CoBo, Section 4, the vision experiments; its architecture cites He et al. 2015.)
    """
    c, h, w = _image_shape("resnet9", input_shape)
    if min(h, w) < 8:
        raise ValueError(f"model 'resnet9' needs images of at least 8x8, got {input_shape}")
    return nn.Sequential(
        _conv_block(c, 64),
        _conv_block(64, 128, pool=True),
        _Residual(128),
        _conv_block(128, 256, pool=True),
        _conv_block(256, 512, pool=True),
        _Residual(512),
        nn.AdaptiveMaxPool2d(1),
        nn.Flatten(),
        nn.Linear(512, _outputs(n_classes)),
    )


#: Convolution widths of the VGG networks of Werner (2024) ch. 2 §2.4, ``"M"`` a 2x2 max-pool:
#: VGG-16 (configuration D of Simonyan and Zisserman 2015) for CIFAR-10, and the thin VGG-8 of
#: the CIFAR-100 experiment, both as in the authors' published code.
VGG_CONFIGS: dict[str, tuple[int | str, ...]] = {
    "vgg16": (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512,
              "M"),
    "vgg8": (16, "M", 32, "M", 64, "M", 128, "M", 512, "M"),
}  # fmt: skip


def _vgg(name: str, input_shape: tuple[int, ...], n_classes: int) -> nn.Module:
    c, _, _ = _image_shape(name, input_shape)
    layers: list[nn.Module] = []
    for width in VGG_CONFIGS[name]:
        if width == "M":
            layers.append(nn.MaxPool2d(2, ceil_mode=True))
            continue
        conv = nn.Conv2d(c, int(width), 3, padding=1)
        nn.init.normal_(conv.weight, 0.0, math.sqrt(2.0 / (9 * conv.out_channels)))
        nn.init.zeros_(cast(torch.Tensor, conv.bias))
        layers += [conv, nn.ReLU()]
        c = int(width)
    layers.append(nn.Flatten())
    features = nn.Sequential(*layers)
    flat = _flat_size(features, input_shape)
    return nn.Sequential(
        *features,
        nn.Linear(flat, 512),
        nn.ReLU(),
        nn.Linear(512, 512),
        nn.ReLU(),
        nn.Linear(512, _outputs(n_classes)),
    )


def vgg16(input_shape: tuple[int, ...], n_classes: int) -> nn.Module:
    r"""VGG-16 without BatchNorm, the CIFAR-10 network of Werner (2024), ch. 2 §2.4 (Fig. 2.4).

    Thirteen ``Conv3x3(padding 1) ReLU`` layers of widths 64, 64, M, 128, 128, M, 256 x 3, M,
    512 x 3, M, 512 x 3, M (:data:`VGG_CONFIGS`, ``M`` = 2x2 max-pool), ``Flatten``, then
    ``Linear(512,512) ReLU Linear(512,512) ReLU Linear(512,n)`` for 3x32x32 inputs; the
    convolution weights drawn from :math:`\mathcal N(0, 2 / (9 c_{out}))`, biases 0, as in
    the authors' published code. Its classifier's dropout layers are left out to keep the
    forward pass deterministic. A max-pool on a 1x1 map keeps it (smaller inputs).

    References
    ----------
    Werner (2024), ch. 2 §2.4, CIFAR-10 ("We train a VGG-16 model [31]"); Simonyan and
    Zisserman (2015), "Very Deep Convolutional Networks for Large-Scale Image Recognition",
    Table 1, configuration D.
    """
    return _vgg("vgg16", input_shape, n_classes)


def vgg8(input_shape: tuple[int, ...], n_classes: int) -> nn.Module:
    r"""The thin VGG-8 of the CIFAR-100 experiment of Werner (2024), ch. 2 §2.4 (Fig. 2.5).

    Five ``Conv3x3(padding 1) ReLU MaxPool2`` blocks of widths 16, 32, 64, 128, 512
    (:data:`VGG_CONFIGS`), ``Flatten``, ``Linear(512,512) ReLU Linear(512,512) ReLU
    Linear(512,n)``: eight weight layers, initialised as :func:`vgg16`, dropout left out.

    References
    ----------
    Werner (2024), ch. 2 §2.4, CIFAR-100 ("We use a VGG-8 model").
    """
    return _vgg("vgg8", input_shape, n_classes)


#: Registry: name -> constructor ``(input_shape, n_classes) -> nn.Module``.
MODELS: dict[str, Callable[..., nn.Module]] = {
    "lenet5": lenet5,
    "mlp": mlp,
    "cnn": cnn,
    "linear": linear,
    "resnet9": resnet9,
    "vgg16": vgg16,
    "vgg8": vgg8,
}


def build_model(
    name: str,
    input_shape: tuple[int, ...],
    n_classes: int,
    *,
    generator: torch.Generator | None = None,
) -> nn.Module:
    """Build the model registered as ``name`` for examples of ``input_shape``.

    Parameters
    ----------
    name : str
        One of :data:`MODELS`.
    input_shape : tuple of int
        Shape of one example, e.g. ``(1, 28, 28)``.
    n_classes : int
        Number of outputs; 0 means regression with one output.
    generator : torch.Generator, optional
        When given, the initial weights are a deterministic function of its state (it is
        advanced by one draw). The model is built inside :func:`torch.random.fork_rng`, so
        the global random state is left as it was. Without it, PyTorch's global RNG is used.
    """
    choice("model", name, tuple(MODELS))
    input_shape = tuple(int(s) for s in input_shape)
    if not input_shape or min(input_shape) < 1:
        raise ValueError(f"input_shape must be non-empty with positive sizes, got {input_shape}")
    constructor = MODELS[name]
    if generator is None:
        return constructor(input_shape, n_classes)
    seed = int(torch.randint(0, 2**62, (1,), generator=generator))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return constructor(input_shape, n_classes)

"""Models: architectures, deterministic initialisation, and purity under vmap."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.func import functional_call, grad, stack_module_state

from learning.models import MODELS, build_model

CASES = [
    ("lenet5", (1, 28, 28), 10),
    ("lenet5", (1, 8, 8), 10),
    ("lenet5", (3, 32, 32), 10),
    ("mlp", (1, 28, 28), 10),
    ("cnn", (1, 28, 28), 10),
    ("cnn", (3, 32, 32), 10),
    ("cnn", (1, 8, 8), 10),
    ("linear", (10,), 0),
    ("linear", (1, 8, 8), 10),
    ("resnet9", (3, 8, 8), 100),
    ("vgg8", (3, 32, 32), 100),
]


def _copies(name, shape, n_classes, k=3):
    generator = torch.Generator().manual_seed(0)
    return [build_model(name, shape, n_classes, generator=generator) for _ in range(k)]


@pytest.mark.parametrize(("name", "shape", "n_classes"), CASES)
def test_vmap_over_stacked_parameters_equals_separate_calls(name, shape, n_classes):
    models = _copies(name, shape, n_classes)
    params, buffers = stack_module_state(models)
    assert not buffers  # nothing but parameters: a pure function of them
    x = torch.randn(4, *shape, generator=torch.Generator().manual_seed(1))
    base = models[0]

    def forward(p, inputs):
        return functional_call(base, p, (inputs,))

    batched = torch.vmap(forward, in_dims=(0, None))(params, x)
    with torch.no_grad():
        separate = torch.stack([m(x) for m in models])
    assert batched.shape == (3, 4, max(n_classes, 1))
    torch.testing.assert_close(batched, separate, rtol=1e-5, atol=1e-5)


def test_vmap_of_gradients_equals_separate_backward_passes():
    models = _copies("lenet5", (1, 8, 8), 10)
    params, _ = stack_module_state(models)
    x = torch.randn(3, 5, 1, 8, 8, generator=torch.Generator().manual_seed(2))
    y = torch.randint(0, 10, (3, 5), generator=torch.Generator().manual_seed(3))
    base = models[0]

    def loss(p, inputs, targets):
        return nn.functional.cross_entropy(functional_call(base, p, (inputs,)), targets)

    batched = torch.vmap(grad(loss))(params, x, y)
    for i, model in enumerate(models):
        model.zero_grad()
        nn.functional.cross_entropy(model(x[i]), y[i]).backward()
        for key, param in model.named_parameters():
            torch.testing.assert_close(batched[key][i], param.grad, rtol=1e-5, atol=1e-6)


def test_lenet5_is_the_thesis_variant():
    model = build_model("lenet5", (1, 28, 28), 10)
    kinds = [type(m).__name__ for m in model]
    assert kinds == [
        "Conv2d", "Tanh", "MaxPool2d", "Conv2d", "Tanh", "MaxPool2d", "Flatten",
        "Linear", "Tanh", "Linear", "Tanh", "Linear",
    ]  # fmt: skip
    assert (model[0].in_channels, model[0].out_channels, model[0].padding) == (1, 6, (2, 2))
    assert (model[3].in_channels, model[3].out_channels, model[3].padding) == (6, 16, (0, 0))
    assert [(m.in_features, m.out_features) for m in model if isinstance(m, nn.Linear)] == [
        (400, 120),
        (120, 84),
        (84, 10),
    ]
    assert sum(p.numel() for p in model.parameters()) == 61_706


def test_layer_sizes_of_the_other_models():
    # the 784-200-10 MLP of the clustering experiments has 159,010 parameters
    assert sum(p.numel() for p in build_model("mlp", (1, 28, 28), 10).parameters()) == 159_010
    cnn = build_model("cnn", (3, 32, 32), 10)
    assert [m.in_features for m in cnn if isinstance(m, nn.Linear)] == [3136, 128]
    assert build_model("linear", (10,), 0)(torch.zeros(2, 10)).shape == (2, 1)
    resnet = build_model("resnet9", (3, 32, 32), 100)
    assert not any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in resnet.modules())
    assert any(isinstance(m, nn.GroupNorm) for m in resnet.modules())


def test_vgg_networks_of_the_cifar_experiments():
    # Werner (2024) ch. 2 §2.4: VGG-16 (13 convolutions, 3 linear layers) on CIFAR-10 and the
    # thin VGG-8 (5 convolutions, 3 linear layers) on CIFAR-100, no BatchNorm
    for name, n_classes, convs, count in (
        ("vgg16", 10, 13, 15_245_130),
        ("vgg8", 100, 5, 1_264_388),
    ):
        model = build_model(name, (3, 32, 32), n_classes)
        assert sum(isinstance(m, nn.Conv2d) for m in model) == convs
        assert [(m.in_features, m.out_features) for m in model if isinstance(m, nn.Linear)] == [
            (512, 512),
            (512, 512),
            (512, n_classes),
        ]
        assert sum(p.numel() for p in model.parameters()) == count
        assert all(float(m.bias.abs().max()) == 0.0 for m in model if isinstance(m, nn.Conv2d))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_models_have_no_randomness_or_running_statistics(name):
    shape = (10,) if name == "linear" else (3, 16, 16)
    model = build_model(name, shape, 10)
    assert not list(model.buffers())
    assert not any(isinstance(m, nn.Dropout) for m in model.modules())
    x = torch.randn(2, *shape)
    model.train()
    with torch.no_grad():
        torch.testing.assert_close(model(x), model.eval()(x), rtol=0, atol=0)


def test_generator_initialisation_is_deterministic_and_leaves_global_rng_alone():
    state = torch.get_rng_state()
    a = build_model("lenet5", (1, 28, 28), 10, generator=torch.Generator().manual_seed(5))
    b = build_model("lenet5", (1, 28, 28), 10, generator=torch.Generator().manual_seed(5))
    c = build_model("lenet5", (1, 28, 28), 10, generator=torch.Generator().manual_seed(6))
    assert torch.equal(torch.get_rng_state(), state)
    for pa, pb, pc in zip(a.parameters(), b.parameters(), c.parameters(), strict=True):
        assert torch.equal(pa, pb)
        assert not torch.equal(pa, pc)


def test_bad_model_requests_raise_value_errors():
    with pytest.raises(ValueError, match="lenet5"):
        build_model("vgg99", (1, 28, 28), 10)
    with pytest.raises(ValueError, match="image inputs"):
        build_model("lenet5", (784,), 10)
    with pytest.raises(ValueError, match="n_classes"):
        build_model("mlp", (1, 28, 28), -1)
    with pytest.raises(ValueError, match="input_shape"):
        build_model("linear", (), 2)
    with pytest.raises(ValueError, match="at least 8x8"):
        build_model("resnet9", (3, 4, 4), 10)

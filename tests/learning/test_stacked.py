"""The hand-batched layer stack gives vmap's gradients, and refuses what it cannot run."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad_and_value, vmap

from learning import stacked
from learning.engine import Task
from learning.models import build_model


@pytest.mark.parametrize(
    ("name", "shape"),
    [("lenet5", (1, 28, 28)), ("lenet5", (1, 8, 8)), ("mlp", (1, 8, 8)), ("linear", (1, 8, 8))],
)
def test_gradients_and_losses_equal_vmap(name, shape):
    gen = torch.Generator().manual_seed(0)
    model = build_model(name, shape, 10, generator=gen)
    task = Task.for_classes(10)
    k, b = 4, 5
    params = {
        n: p.detach().expand(k, *p.shape) + 0.01 * torch.randn(k, *p.shape, generator=gen)
        for n, p in model.named_parameters()
    }
    x = torch.randn(k, b, *shape, generator=gen)
    y = torch.randint(0, 10, (k, b), generator=gen)
    assert stacked.supports(model)
    ref_grads, ref_loss = vmap(
        grad_and_value(lambda p, xb, yb: task.loss(functional_call(model, p, (xb,)), yb))
    )(params, x, y)
    grads, loss = stacked.loss_and_grad(model, task.losses, params, x, y)
    torch.testing.assert_close(loss, ref_loss, rtol=1e-5, atol=1e-6)
    for n in params:
        torch.testing.assert_close(grads[n], ref_grads[n], rtol=1e-4, atol=1e-6)


def test_unsupported_models_fall_back():
    assert not stacked.supports(build_model("resnet9", (3, 32, 32), 10))
    assert not stacked.supports(build_model("cnn", (3, 32, 32), 10))  # adaptive pooling
    assert not stacked.supports(nn.Sequential(nn.Conv2d(4, 4, 3, groups=2)))
    assert not stacked.supports(nn.Sequential(nn.Linear(3, 3), nn.Dropout()))


def test_channels_last_max_pool_breaks_ties_like_the_default_layout():
    """The premise of running max-pooling in channels-last: on windows full of equal values
    (binary images, like the constant background of digits) it routes the gradient to the
    same element as the default layout, so the stacked gradients equal the per-client loop's."""
    gen = torch.Generator().manual_seed(0)
    for shape in [(10, 480, 28, 28), (10, 1280, 10, 10), (3, 5, 9, 9)]:
        x = torch.randint(0, 2, shape, generator=gen).float()
        g = torch.randn(x.shape[0], x.shape[1], x.shape[2] // 2, x.shape[3] // 2, generator=gen)
        grads = []
        for fmt in (torch.contiguous_format, torch.channels_last):
            leaf = x.contiguous(memory_format=fmt).requires_grad_(True)
            out = F.max_pool2d(leaf, 2)
            (grad,) = torch.autograd.grad(out, leaf, g)
            grads.append((out, grad))
        assert torch.equal(grads[0][0], grads[1][0]) and torch.equal(grads[0][1], grads[1][1])


def _strided() -> nn.Module:
    """A first convolution with several channels, stride and padding, and no pooling after it."""
    return nn.Sequential(
        nn.Conv2d(3, 4, 3, stride=2, padding=1),
        nn.ReLU(),
        nn.Conv2d(4, 5, 3),
        nn.Tanh(),
        nn.Flatten(),
        nn.Linear(20, 10),
    )


@pytest.mark.parametrize("name", ["lenet5", "mlp", "strided"])
def test_shared_inputs_equal_repeated_inputs(name):
    gen = torch.Generator().manual_seed(2)
    shape = (3, 8, 8) if name == "strided" else (1, 8, 8)
    model = _strided() if name == "strided" else build_model(name, shape, 10, generator=gen)
    k, shared, b = 6, 3, 4
    params = {
        n: p.detach().expand(k, *p.shape) + 0.01 * torch.randn(k, *p.shape, generator=gen)
        for n, p in model.named_parameters()
    }
    x = torch.randn(k // shared, b, *shape, generator=gen)
    y = torch.randint(0, 10, (k // shared, b), generator=gen)
    task = Task.for_classes(10)
    grads, loss = stacked.loss_and_grad(model, task.losses, params, x, y, shared=shared)
    ref_grads, ref_loss = stacked.loss_and_grad(
        model, task.losses, params, x.repeat_interleave(shared, 0), y.repeat_interleave(shared, 0)
    )
    torch.testing.assert_close(loss, ref_loss)
    for n in params:
        torch.testing.assert_close(grads[n], ref_grads[n], rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match="share"):
        stacked.forward(model, params, x, shared=2)

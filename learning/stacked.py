r"""Every client's forward and backward at once for plain layer stacks, without ``vmap``.

``vmap`` over per-client convolution weights lowers each convolution to a grouped one
(groups = clients) in the default memory layout, which oneDNN runs on a CPU at about the speed
of one plain convolution per client. Written by hand, the same grouped convolutions in
channels-last layout, and ``baddbmm`` for the linear layers, run a LeNet-5 step for 80 clients
faster (``bench/RESULTS.md``). This module does that for models whose leaf modules, in
order, are ``Conv2d`` (no groups or dilation), ``Linear``, ``MaxPool2d``, ``Flatten`` and
element-wise activations: ``lenet5``, ``mlp`` and ``linear`` of :mod:`learning.models`.
:class:`learning.engine.BatchedEngine` uses it when :func:`supports` says so and falls back
to ``vmap`` otherwise; a test holds the two to the same gradients.

Layouts: images of K clients travel as ``[B, K*C, H, W]`` in channels-last memory format
(``_LAYOUT``) so one grouped convolution serves all clients, and stay in it through
activations and max-pooling; after ``Flatten`` features travel as ``[K, B, F]``.

Two exact rewrites save time. A monotone activation followed by max-pooling is run as
pooling first (:func:`_pool_first`): :math:`\max_i \sigma(h_i) = \sigma(\max_i h_i)`, on a
quarter of the elements for 2x2 pooling; so is the bias of a convolution followed by
max-pooling, as :math:`\max_i (h_i + \beta) = \max_i h_i + \beta` (its gradient is then a
sum over a quarter of the elements: for the first convolution of LeNet-5 with 80 clients,
the convolution's backward took 13.8 ms with the bias and 8.2 ms without, one thread). Both hold
exactly in floating point too, rounding being monotone. Only the gradient's route can
differ: where the activation (or the bias) rounds two different inputs of one window to the
same value, ``nn.MaxPool2d`` after it sends the gradient to the first of them, while pooling
first sends it to the larger, which is the exact derivative. That happens for near-ties and
for saturated activations, whose derivative is nearly zero; the largest difference seen in
the 20-client LeNet-5 table was 1.8e-5 against gradients of size 3e-2 (6e-8 without such a
tie).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

Params = dict[str, torch.Tensor]
#: Memory format of the image stages: channels-last, the fast layout of oneDNN's grouped
#: convolutions on CPU. Max-pooling in it picks the same element of a window with equal
#: values as the default layout does (the first; ``tests/learning/test_stacked.py``), so the
#: gradients equal the per-client loop's.
_LAYOUT = torch.channels_last

_ACTIVATIONS: dict[type[nn.Module], Callable[[torch.Tensor], torch.Tensor]] = {
    nn.Tanh: torch.tanh,
    nn.ReLU: torch.relu,
    nn.Sigmoid: torch.sigmoid,
}


class _RowMajor(torch.autograd.Function):
    """Channels-last images in the default (row-major) layout, their gradient back in channels-last.

    ``Flatten`` reads the default layout; without this the gradient would reach the
    max-pooling before it in that layout, beside indices in channels-last, and max-pooling's
    backward is several times slower for mixed layouts (3.4 ms against 0.9 ms for the second
    pooling of LeNet-5 with 80 clients, one thread).
    """

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, h: torch.Tensor) -> torch.Tensor:
        return h.contiguous()

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx, grad: torch.Tensor) -> torch.Tensor:
        return grad.contiguous(memory_format=_LAYOUT)


class _Linear(torch.autograd.Function):
    r"""K linear layers at once: :math:`h_k W_k^\top + b_k` for ``h [K, B, in]``, ``W [K, out, in]``.

    The backward pass forms the weight gradient :math:`g_k^\top h_k` in the weights' own
    layout ``[K, out, in]`` (autograd of ``baddbmm(b, h, W^T)`` forms its transpose and hands
    back a strided view, which every later copy of the gradients reads slowly), and the input
    in the default layout, so that the product reads it contiguously.
    """

    @staticmethod
    def forward(
        ctx: torch.autograd.function.FunctionCtx,
        h: torch.Tensor,
        w: torch.Tensor,
        bias: torch.Tensor | None,
    ) -> torch.Tensor:
        h = h.contiguous()
        ctx.save_for_backward(h, w)
        ctx.has_bias = bias is not None  # type: ignore[attr-defined]
        wt = w.transpose(1, 2)
        return torch.bmm(h, wt) if bias is None else torch.baddbmm(bias.unsqueeze(1), h, wt)

    @staticmethod
    def backward(
        ctx: torch.autograd.function.FunctionCtx, grad: torch.Tensor
    ) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
        h, w = ctx.saved_tensors  # type: ignore[attr-defined]
        needs = ctx.needs_input_grad  # type: ignore[attr-defined]
        return (
            torch.bmm(grad, w) if needs[0] else None,
            torch.bmm(grad.transpose(1, 2), h) if needs[1] else None,
            grad.sum(1) if ctx.has_bias and needs[2] else None,  # type: ignore[attr-defined]
        )


class Tap(NamedTuple):
    """A weighted layer's input and output in one forward pass of :func:`forward`.

    ``Conv2d``: ``[B, K*C, H, W]`` in and ``[B, K*O, H', W']`` out (the bias included);
    ``Linear``: ``[K, B, in]`` and ``[K, B, out]``. ``prefix`` names the layer's parameters.
    """

    prefix: str
    module: nn.Module
    input: torch.Tensor
    output: torch.Tensor


def _leaves(model: nn.Module) -> list[tuple[str, nn.Module]]:
    return [(name, m) for name, m in model.named_modules() if not list(m.children())]


def _has_weight(m: nn.Module) -> bool:
    return isinstance(m, (nn.Conv2d, nn.Linear))


def _pool_first(leaves: list[tuple[str, nn.Module]]) -> list[tuple[str, nn.Module]]:
    """``leaves`` with every activation directly followed by a max-pooling moved after it.

    This is exact since all activations of :data:`_ACTIVATIONS` are non-decreasing.
    """
    out = list(leaves)
    for i in range(len(out) - 1):
        if type(out[i][1]) in _ACTIVATIONS and isinstance(out[i + 1][1], nn.MaxPool2d):
            out[i], out[i + 1] = out[i + 1], out[i]
    return out


def supports(model: nn.Module) -> bool:
    """Whether :func:`loss_and_grad` can run ``model`` (a plain stack of supported layers)."""
    if not isinstance(model, nn.Sequential):
        return False
    for _, m in _leaves(model):
        if isinstance(m, nn.Conv2d):
            if (
                m.groups != 1
                or m.dilation != (1, 1)
                or m.padding_mode != "zeros"
                or isinstance(m.padding, str)
            ):
                return False
        elif not isinstance(m, (nn.Linear, nn.MaxPool2d, nn.Flatten, *_ACTIVATIONS)):
            return False
        elif isinstance(m, nn.Flatten) and (m.start_dim, m.end_dim) != (1, -1):
            return False
    return True


def _shared_conv(m: nn.Conv2d, w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    r"""A first convolution, without its bias, as matrix products on the unfolded patches.

    Its ``G`` inputs ``x [G, B, C, H, W]`` each feed ``S`` models (``w [G*S, O, C, kh, kw]``):

    .. math:: y_{b,l,(s,o)} = \sum_{c,i,j} \mathrm{unfold}(x_b)_{(c,i,j),l}\; w_{s,o,c,i,j}.

    The result comes out ``[B, G*S*O, H', W']`` in channels-last memory, the layout of the
    grouped layers after it, and its weight gradient is again a matrix product. oneDNN's
    convolution with few input channels and many filters was slower here in one direction
    or the other: the forward when grouped, the weight gradient when not.
    """
    g, b, c = x.shape[:3]
    padding = m.padding
    assert not isinstance(padding, str)  # supports() admits numeric padding only
    cols = F.unfold(
        x.reshape(g * b, c, *x.shape[-2:]), m.kernel_size, padding=padding, stride=m.stride
    )
    out_h, out_w = (
        (size + 2 * p - k) // s + 1
        for size, p, k, s in zip(x.shape[-2:], padding, m.kernel_size, m.stride, strict=True)
    )
    patches = cols.reshape(g, b, cols.shape[1], -1).transpose(2, 3)  # [G, B, L, C*kh*kw]
    filters = w.reshape(g, -1, cols.shape[1]).transpose(1, 2).contiguous()  # [G, C*kh*kw, S*O]
    parts = [torch.bmm(patches[i], filters[i].expand(b, -1, -1)) for i in range(g)]
    y = parts[0] if g == 1 else torch.cat(parts, dim=-1)  # [B, L, G*S*O]
    return y.reshape(b, out_h, out_w, -1).permute(0, 3, 1, 2)


def forward(
    model: nn.Module,
    params: Params,
    x: torch.Tensor,
    *,
    shared: int = 1,
    taps: list[Tap] | None = None,
) -> torch.Tensor:
    """Outputs ``[K, B, out]`` of K stacked models: model ``k`` on input ``x[k // shared]``.

    ``x`` has shape ``[K / shared, B, ...]``: with ``shared > 1`` each input feeds ``shared``
    consecutive models, and a first ``Conv2d`` reads it once (:func:`_shared_conv`) instead
    of ``shared`` copies. With a list ``taps`` (and ``shared == 1``), every ``Conv2d`` and
    ``Linear`` appends a :class:`Tap` of its input and output, in their stacked layouts, for
    per-example gradients (:mod:`learning.dp`).
    """
    b = x.shape[1]
    k = next(iter(params.values())).shape[0]
    if taps is not None and shared != 1:
        raise ValueError("taps record the layers of unshared inputs only (shared=1)")
    if k != x.shape[0] * shared:
        raise ValueError(f"{k} models cannot share {x.shape[0]} inputs {shared} by {shared}")
    leaves = _pool_first(_leaves(model))
    if shared > 1 and not isinstance(next(m for _, m in leaves if _has_weight(m)), nn.Conv2d):
        x, shared = x.repeat_interleave(shared, 0), 1
    h = x
    grouped = False  # True while h is [B, K*C, H, W]
    pending: torch.Tensor | None = None  # a bias to add after the next max-pooling
    for at, (name, m) in enumerate(leaves):
        prefix = f"{name}." if name else ""
        if isinstance(m, nn.Conv2d):
            w = params[prefix + "weight"]
            bias = params.get(prefix + "bias")
            pooled = at + 1 < len(leaves) and isinstance(leaves[at + 1][1], nn.MaxPool2d)
            if shared > 1:
                h = _shared_conv(m, w, h)
                if bias is not None:
                    pending = bias.reshape(1, -1, 1, 1)
                    if not pooled:
                        h, pending = h + pending, None
            else:
                if not grouped:
                    h = (
                        h.transpose(0, 1)
                        .reshape(b, -1, *h.shape[-2:])
                        .contiguous(memory_format=_LAYOUT)
                    )
                h_in = h
                if bias is not None and pooled and taps is None:  # added after the pooling
                    pending, bias = bias.reshape(1, -1, 1, 1), None
                h = F.conv2d(
                    h,
                    w.reshape(-1, *w.shape[2:]),
                    None if bias is None else bias.reshape(-1),
                    stride=m.stride,
                    padding=m.padding,
                    groups=k,
                )
                if taps is not None:
                    taps.append(Tap(prefix, m, h_in, h))
            grouped, shared = True, 1
        elif isinstance(m, nn.MaxPool2d):
            h = F.max_pool2d(h, m.kernel_size, m.stride, m.padding, m.dilation, m.ceil_mode)
            if pending is not None:
                h, pending = h + pending, None
        elif isinstance(m, nn.Flatten):
            if grouped:
                h = _RowMajor.apply(h).reshape(b, k, -1).transpose(0, 1)
            else:
                h = h.reshape(k, b, -1)
            grouped = False
        elif isinstance(m, nn.Linear):
            w = params[prefix + "weight"]
            bias = params.get(prefix + "bias")
            h_in = h
            h = _Linear.apply(h, w, bias)
            if taps is not None:
                taps.append(Tap(prefix, m, h_in, h))
        else:
            h = _ACTIVATIONS[type(m)](h)
    return h


def loss_and_grad(
    model: nn.Module,
    per_example_loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    params: Params,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    shared: int = 1,
) -> tuple[Params, torch.Tensor]:
    """Per-client gradients of the mean loss over each client's batch, and those losses ``[K]``.

    Model ``k`` sees the batch ``x[k // shared], y[k // shared]`` (see :func:`forward`). The
    clients share no parameters, so the gradient of the sum of their losses with respect to
    the stacked parameters is every client's own gradient.
    """
    if shared > 1:
        y = y.repeat_interleave(shared, 0)
    k, b = y.shape[:2]
    leaves = {n: p.detach().requires_grad_(True) for n, p in params.items()}
    with torch.enable_grad():
        out = forward(model, leaves, x, shared=shared)
        losses = (
            per_example_loss(out.reshape(k * b, -1), y.reshape(k * b, *y.shape[2:]))
            .reshape(k, b)
            .mean(1)
        )
        grads = torch.autograd.grad(losses.sum(), list(leaves.values()))
    return dict(zip(leaves, grads, strict=True)), losses.detach()

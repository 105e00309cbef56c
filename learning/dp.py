r"""DP-SGD for every client at once: per-example clipping and Gaussian noise, batched.

One step of DP-SGD (Abadi et al. 2016, Algorithm 1) for client :math:`k` on a minibatch
:math:`B_k` of (on average) :math:`b` examples, with clipping norm :math:`C` and noise
multiplier :math:`z`:

.. math::

    \bar g_k = \frac{1}{b}\Big(\sum_{i \in B_k} g_i \min\Big(1, \frac{C}{\lVert g_i\rVert + 10^{-6}}\Big)
               + \mathcal N(0, z^2 C^2 I)\Big),

where :math:`g_i` is the gradient of example :math:`i`'s loss and :math:`\lVert g_i\rVert`
its norm over all parameters; :math:`\bar g_k` then goes through the engine's SGD update
(weight decay, momentum). The :math:`10^{-6}` and the division by the (expected) batch size
:math:`b` follow Opacus's ``DPOptimizer`` (with ``loss_reduction="mean"``), so that one
client's step equals Opacus's for the same batch and the same noise generator
(``tests/learning/test_dp.py``).

The clipped sums of all ``K`` clients come from one forward and one backward pass of the
engine's hand-stacked layers (:func:`clipped_gradient_sum`: per-layer norms and weighted
sums, never the per-example gradients of the whole model), or, for other models, from
``vmap`` over clients of ``vmap`` over examples.

Minibatches are drawn afresh at every step (:attr:`DPSGDSettings.sampling`), with sampling
rate :math:`q_k = b / n_k`, in one of the two ways
:func:`econ.privacy.accountants.accountant_epsilon` accounts for:

``"fixed"``
    ``b`` distinct examples uniformly without replacement (:func:`sample_subsets`;
    replace-one neighbours);
``"poisson"``
    each example independently with probability :math:`q_k` (:func:`poisson_subsets`;
    add-or-remove neighbours), as Opacus samples. The batch size varies; the batches of all
    clients are padded to the largest of the step with examples of weight 0 (their clipping
    factor is multiplied by 0), and the sum is divided by the expected size :math:`b`.

Client :math:`k`'s noise comes from
its own torch generator (:func:`noise_generators`), parameter by parameter, the numbers
Opacus draws from that generator. Every random draw of :func:`dp_local_sgd` is a block of
uniform keys with one row per client, so a client that trains alone on its own data, with
its row of the blocks (a Flower node, :class:`learning.runtimes.flower.streams.RowStream`), takes
the batches and the noise it takes among all ``K``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.func import functional_call, grad_and_value, vmap
from torch.nn.grad import conv2d_weight

from econ.validation import choice, non_negative, positive, positive_int
from learning import stacked
from learning.engine import Engine, LocalResult, Params, ShardedData
from learning.optim import SGDConfig, sgd_step

__all__ = [
    "DPSGDSettings",
    "clip_and_sum",
    "clip_factors",
    "clipped_gradient_sum",
    "dp_local_sgd",
    "noise_generators",
    "per_example_gradients",
    "poisson_subsets",
    "private_gradients",
    "sample_subsets",
]

#: How DP-SGD draws a client's minibatches (:attr:`DPSGDSettings.sampling`).
SAMPLINGS = ("fixed", "poisson")

_NORM_FLOOR = 1e-6  # Opacus's: C / (||g|| + 1e-6)


@dataclass(frozen=True, slots=True)
class DPSGDSettings:
    """Per-example clipping norm :math:`C`, noise multiplier :math:`z` and sampling of DP-SGD.

    ``sampling`` is ``"fixed"`` (:func:`sample_subsets`) or ``"poisson"``
    (:func:`poisson_subsets`).
    """

    max_grad_norm: float
    noise_multiplier: float
    sampling: str = "fixed"

    def __post_init__(self) -> None:
        r"""Check that :math:`C > 0`, :math:`z \ge 0` and the sampling is known.

        Raises
        ------
        ValueError
            ``max_grad_norm`` not positive, ``noise_multiplier`` negative, or ``sampling``
            not in :data:`SAMPLINGS`.
        """
        positive("max_grad_norm", self.max_grad_norm)
        non_negative("noise_multiplier", self.noise_multiplier)
        choice("sampling", self.sampling, SAMPLINGS)

    @property
    def noise_std(self) -> float:
        """Standard deviation :math:`z C` of the noise added to the summed clipped gradients."""
        return self.noise_multiplier * self.max_grad_norm


def per_example_gradients(
    engine: Engine, params: Params, x: torch.Tensor, y: torch.Tensor
) -> tuple[Params, torch.Tensor]:
    """Gradient and loss of each example, ``(K, b, *shape)`` and ``(K, b)``.

    Entry ``[k, i]`` is model ``k`` on example ``x[k, i]`` (``vmap`` over clients of ``vmap``
    over examples).

    The reference for :func:`clipped_gradient_sum`, which never holds all of them at once
    for plain layer stacks.
    """

    def one(p: Params, xi: torch.Tensor, yi: torch.Tensor) -> torch.Tensor:
        out = functional_call(engine.model, p, (xi.unsqueeze(0),))
        return engine.task.loss(out, yi.unsqueeze(0))

    per_client = vmap(grad_and_value(one), in_dims=(None, 0, 0))
    grads, losses = vmap(per_client)(params, x, y)
    return grads, losses


def clip_factors(norms: torch.Tensor, max_grad_norm: float) -> torch.Tensor:
    r"""Opacus's per-example clipping factors :math:`\min(1, C/(\lVert g_i\rVert + 10^{-6}))`."""
    return (max_grad_norm / (norms + _NORM_FLOOR)).clamp(max=1.0)


def clip_and_sum(
    per_example: Params, max_grad_norm: float, weights: torch.Tensor | None = None
) -> tuple[Params, torch.Tensor]:
    """Clip each example's gradient to norm ``C`` and sum over the batch, per client.

    Returns the sums ``(K, *shape)`` and the per-example norms ``(K, b)`` before clipping;
    ``weights`` ``(K, b)`` multiply the clipped gradients (0: an example outside the batch).
    """
    first = next(iter(per_example.values()))
    k, b = first.shape[0], first.shape[1]
    squares = sum(g.reshape(k, b, -1).square().sum(-1) for g in per_example.values())
    norms = torch.as_tensor(squares).sqrt()
    factor = _weighted(clip_factors(norms, max_grad_norm), weights)
    return {n: torch.einsum("kb,kb...->k...", factor, g) for n, g in per_example.items()}, norms


def _weighted(factor: torch.Tensor, weights: torch.Tensor | None) -> torch.Tensor:
    """The clipping factors times the examples' ``weights`` (unchanged without)."""
    return factor if weights is None else factor * weights.to(factor.dtype)


def clipped_gradient_sum(
    engine: Engine,
    params: Params,
    x: torch.Tensor,
    y: torch.Tensor,
    max_grad_norm: float,
    weights: torch.Tensor | None = None,
) -> tuple[Params, torch.Tensor, torch.Tensor]:
    r"""Per client, the sum of its examples' gradients each clipped to norm ``C``.

    Returns the sums ``(K, *shape)``, the per-example norms ``(K, b)`` before clipping and
    the per-example losses ``(K, b)``. ``weights`` ``(K, b)`` multiply the clipped
    gradients: 0 leaves a padding example out of the sum (Poisson batches).

    For plain layer stacks (:func:`learning.stacked.supports`) no per-example gradient of
    the whole model is formed: one forward pass of the hand-stacked layers records each
    weighted layer's input :math:`a` and output :math:`z`, one backward pass gives
    :math:`g = \partial \ell_i/\partial z` for every example at once, and per layer

    - ``Linear``: example :math:`i`'s weight gradient :math:`g_i a_i^\top` has norm
      :math:`\lVert g_i\rVert \lVert a_i\rVert`, and the clipped sum is
      :math:`\sum_i c_i g_i a_i^\top`, one batched matrix product;
    - ``Conv2d``: example :math:`i`'s weight gradient :math:`\sum_p g_{i,p} u_{i,p}^\top`
      over output positions :math:`p` and unfolded input patches :math:`u` is small
      (out x in x kh x kw), so it is formed for every example at once and weighted by
      :math:`c_i`.

    Other models go through :func:`per_example_gradients` and :func:`clip_and_sum`.
    """
    if not stacked.supports(engine.model):
        per_example, losses = per_example_gradients(engine, params, x, y)
        clipped, norms = clip_and_sum(per_example, max_grad_norm, weights)
        return clipped, norms, losses
    k, b = y.shape[:2]
    taps: list[stacked.Tap] = []
    leaves = {n: p.detach().requires_grad_(True) for n, p in params.items()}
    with torch.enable_grad():
        out = stacked.forward(engine.model, leaves, x, taps=taps)
        losses = engine.task.losses(out.reshape(k * b, -1), y.reshape(k * b, *y.shape[2:]))
        outputs = torch.autograd.grad(losses.sum(), [t.output for t in taps])
    pieces: list[tuple[str, stacked.Tap, torch.Tensor, torch.Tensor]] = []
    squares = torch.zeros(k, b, dtype=out.dtype, device=out.device)
    for tap, g in zip(taps, outputs, strict=True):
        bias = g.sum(dim=(-2, -1)) if isinstance(tap.module, nn.Conv2d) else g
        if isinstance(tap.module, nn.Conv2d):
            weight = _per_example_conv_weight(tap, g, k, b)
            bias = bias.reshape(b, k, -1).transpose(0, 1)
            squares += weight.square().sum(dim=(-2, -1))
        else:
            weight = None
            squares += g.square().sum(-1) * tap.input.square().sum(-1)
        if tap.prefix + "bias" in params:
            squares += bias.square().sum(-1)
        pieces.append((tap.prefix, tap, weight if weight is not None else g, bias))
    norms = squares.sqrt()
    factor = _weighted(clip_factors(norms, max_grad_norm), weights)
    summed: Params = {}
    for prefix, tap, grad, bias in pieces:
        shape = params[prefix + "weight"].shape
        if isinstance(tap.module, nn.Conv2d):
            summed[prefix + "weight"] = torch.einsum("kb,kboi->koi", factor, grad).reshape(shape)
        else:  # grad is g [K, b, out]
            summed[prefix + "weight"] = torch.bmm(
                (grad * factor[..., None]).transpose(1, 2), tap.input
            )
        if prefix + "bias" in params:
            summed[prefix + "bias"] = torch.einsum("kb,kbo->ko", factor, bias)
    return {n: summed[n].detach() for n in params}, norms.detach(), losses.detach().reshape(k, b)


def _per_example_conv_weight(tap: stacked.Tap, g: torch.Tensor, k: int, b: int) -> torch.Tensor:
    """Every example's weight gradient of a stacked ``Conv2d``, ``[K, b, out, in*kh*kw]``.

    The layer's input ``[b, K*C, H, W]`` and output gradient ``[b, K*O, H', W']`` are read as
    one image of ``b K`` groups, so one grouped weight-gradient convolution gives each
    (example, client) pair its own gradient.
    """
    m = tap.module
    assert isinstance(m, nn.Conv2d)
    c, o = m.in_channels, m.out_channels
    weight = conv2d_weight(
        tap.input.reshape(1, b * k * c, *tap.input.shape[-2:]),
        (b * k * o, c, *m.kernel_size),
        g.reshape(1, b * k * o, *g.shape[-2:]),
        stride=m.stride,
        padding=m.padding,
        dilation=m.dilation,
        groups=b * k,
    )
    return weight.reshape(b, k, o, -1).transpose(0, 1)


def private_gradients(
    engine: Engine,
    params: Params,
    x: torch.Tensor,
    y: torch.Tensor,
    dp: DPSGDSettings,
    generators: Sequence[torch.Generator] | None,
    weights: torch.Tensor | None = None,
    batch_size: int | None = None,
) -> tuple[Params, torch.Tensor, torch.Tensor]:
    r"""One DP-SGD gradient per client: clipped sum, plus noise, over the batch size.

    Client :math:`k`'s gradient is :math:`\frac{1}{b}(\sum_{i \in B_k} \bar g_i +
    \mathcal N(0, z^2 C^2 I))` (Abadi et al. 2016, Algorithm 1, "Add noise").

    Parameters
    ----------
    engine, params, x, y
        The engine, the stacked parameters ``(K, *shape)`` and the batches ``(K, b, ...)``.
    dp : DPSGDSettings
        Clipping norm and noise multiplier.
    generators : sequence of K torch.Generator, or None
        The noise: client ``k``'s generator ``k`` draws ``shape`` per parameter, as Opacus
        draws from it, in the order of ``params`` (the model's ``named_parameters``); None:
        torch's default generator.
    weights : tensor (K, b), optional
        1 for the examples of each client's batch, 0 for padding (Poisson batches of
        :func:`poisson_subsets`); None: every example.
    batch_size : int, optional
        The divisor :math:`b`: under Poisson sampling the expected batch size, as Opacus's
        ``DPOptimizer`` divides with ``loss_reduction="mean"``; by default the batch's
        length.

    Returns
    -------
    The private gradients ``(K, *shape)``, the per-example norms before clipping and the
    per-example losses, both ``(K, b)``.
    """
    summed, norms, losses = clipped_gradient_sum(engine, params, x, y, dp.max_grad_norm, weights)
    k, b = y.shape[:2]
    if batch_size is not None:
        b = positive_int("batch_size", batch_size)
    if generators is not None and len(generators) != k:
        raise ValueError(f"{len(generators)} noise generators for {k} clients")
    out: Params = {}
    for name, total in summed.items():
        if dp.noise_multiplier:
            total = total + _noise(total.shape, dp.noise_std, generators, total.device)
        out[name] = total / b
    return out, norms, losses


def _noise(
    shape: torch.Size,
    std: float,
    generators: Sequence[torch.Generator] | None,
    device: torch.device,
) -> torch.Tensor:
    r""":math:`\mathcal N(0, \mathrm{std}^2)` of ``shape``: row ``k`` from generator ``k``."""
    if generators is None:
        return torch.normal(0.0, std, size=shape, device=device)
    noise = torch.empty(shape, device=device)
    for row, client in zip(noise, generators, strict=True):
        row.normal_(0.0, std, generator=client)
    return noise


def _keys(sizes: np.ndarray, lines: int, rng: np.random.Generator) -> np.ndarray:
    r"""One block ``rng.random((K, lines, W))`` of uniform keys, :math:`W = \max_k n_k`."""
    return rng.random((sizes.size, lines, int(sizes.max())))


def _batch_sizes(sizes: np.ndarray, batch_size: int) -> tuple[np.ndarray, int]:
    """The client sizes as int64 and ``batch_size``, refused where a client holds fewer."""
    sizes = np.asarray(sizes, dtype=np.int64)
    b = positive_int("batch_size", batch_size)
    if sizes.size == 0 or np.any(sizes < b):
        raise ValueError(
            f"DP-SGD draws batches of {b} examples per step (on average under Poisson "
            f"sampling, at rate batch_size / n <= 1); client sizes {sizes.tolist()} are too small"
        )
    return sizes, b


def sample_subsets(
    sizes: np.ndarray, steps: int, batch_size: int, rng: np.random.Generator
) -> np.ndarray:
    r"""``batch_size`` distinct examples per client and step, drawn afresh each step.

    The result has shape ``(K, steps, b)``.

    Uniform sampling without replacement, independently at every step (what the privacy
    accountant's fixed-size sampling assumes); every client needs at least ``b`` examples.
    Client :math:`k`'s subset at step :math:`t` is the :math:`b` smallest of the first
    :math:`n_k` keys of line :math:`t` of row :math:`k` of one block ``rng.random((K,
    steps, W))`` (:math:`W = \max_k n_k`), listed in increasing order, so that it depends
    on that row only.
    """
    sizes, b = _batch_sizes(sizes, batch_size)
    keys = _keys(sizes, positive_int("steps", steps), rng)
    padding = np.arange(keys.shape[-1])[None, None, :] >= sizes[:, None, None]
    keys = np.where(padding, 2.0, keys)  # padding sorts last, never drawn
    return np.sort(np.argpartition(keys, b - 1, axis=-1)[..., :b], axis=-1)


def poisson_subsets(
    sizes: np.ndarray, steps: int, batch_size: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    r"""Poisson minibatches: each example joins each step's batch with probability :math:`b/n_k`.

    Returns the examples ``(K, steps, M)`` and whether each is in the batch ``(K, steps,
    M)`` (False: padding, example 0), :math:`M` the largest batch drawn (at least 1). Each
    batch lists its examples first, in increasing order.

    Example :math:`i < n_k` of client :math:`k` is in the batch of step :math:`t` when key
    :math:`i` of line :math:`t` of row :math:`k` of one block ``rng.random((K, steps, W))``
    (:math:`W = \max_k n_k`, the block of :func:`sample_subsets`) lies below
    :math:`q_k = b / n_k`: independently with probability :math:`q_k`, and from that row
    only. Every client needs at least ``b`` examples (:math:`q_k \le 1`).

    References
    ----------
    Mironov, Talwar, Zhang, Rényi Differential Privacy of the Sampled Gaussian Mechanism,
    2019 (Poisson sampling, the sampled Gaussian mechanism); Yousefpour et al., Opacus:
    User-Friendly Differential Privacy Library in PyTorch, 2021 (its Poisson data loader).
    """
    sizes, b = _batch_sizes(sizes, batch_size)
    keys = _keys(sizes, positive_int("steps", steps), rng)
    inside = np.arange(keys.shape[-1])[None, None, :] < sizes[:, None, None]
    joins = inside & (keys < (b / sizes)[:, None, None])
    width = max(int(joins.sum(-1).max()), 1)
    order = np.argsort(~joins, axis=-1, kind="stable")[..., :width]
    member = np.take_along_axis(joins, order, axis=-1)
    return np.where(member, order, 0), member


def noise_generators(
    sizes: np.ndarray, rng: np.random.Generator, device: str | torch.device = "cpu"
) -> list[torch.Generator]:
    r"""One torch generator on ``device`` per client, each seeded by its row of one key block.

    Client :math:`k`'s seed is :math:`\lfloor 2^{53} u_k \rfloor`, :math:`u_k` the first
    key of row :math:`k` of one block ``rng.random((K, 1, W))`` (:math:`W = \max_k n_k`,
    the layout of :func:`sample_subsets`' keys): a uniform 53-bit integer, drawn
    independently for every client.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    if sizes.size == 0 or np.any(sizes < 1):
        raise ValueError(f"every client needs at least one example, got sizes {sizes.tolist()}")
    seeds = np.ldexp(_keys(sizes, 1, rng)[:, 0, 0], 53).astype(np.int64)
    return [torch.Generator(device=device).manual_seed(int(seed)) for seed in seeds]


def dp_local_sgd(
    engine: Engine,
    params: Params,
    data: ShardedData,
    clients: np.ndarray,
    *,
    steps: int,
    batch_size: int,
    sgd: SGDConfig,
    dp: DPSGDSettings,
    rng: np.random.Generator,
    momentum: Params | None = None,
) -> LocalResult:
    """``steps`` DP-SGD steps for each of ``clients`` at once (row ``i`` is ``clients[i]``).

    Batches come from :func:`sample_subsets` or :func:`poisson_subsets` (``dp.sampling``),
    then each client's noise from its generator of :func:`noise_generators`, both drawn from
    ``rng``. A Poisson step runs on the largest batch of the step among the clients, the
    others padded with weight 0. The reported loss is the mean minibatch loss before each
    step (non-private bookkeeping, never released by the mechanism; a Poisson batch with no
    example counts 0).
    """
    clients = np.asarray(clients, dtype=np.int64)
    sizes = data.sizes_numpy()[clients]
    if dp.sampling == "poisson":
        picks, member = poisson_subsets(sizes, steps, batch_size, rng)
    else:
        picks, member = sample_subsets(sizes, steps, batch_size, rng), None
    generators = noise_generators(sizes, rng, engine.device)
    starts = data.offsets.cpu().numpy()[clients]
    rows = torch.from_numpy(picks + starts[:, None, None]).to(engine.device)
    weights = None if member is None else torch.from_numpy(member).to(engine.device)
    largest = None if member is None else np.maximum(member.sum(-1).max(0), 1)  # per step
    params = {name: p.detach() for name, p in params.items()}
    losses = torch.zeros(len(clients), device=engine.device)
    for t in range(rows.shape[1]):
        if weights is None or largest is None:
            step, w = rows[:, t], None
        else:  # this step's largest batch
            step, w = rows[:, t, : largest[t]], weights[:, t, : largest[t]]
        grads, _, loss = private_gradients(
            engine, params, data.x[step], data.y[step], dp, generators, w, batch_size
        )
        with torch.no_grad():
            params, momentum = sgd_step(params, grads, momentum, sgd)
            if w is None:
                losses += loss.detach().mean(dim=1)
            else:
                w = w.to(loss.dtype)
                losses += (loss.detach() * w).sum(dim=1) / w.sum(dim=1).clamp(min=1.0)
    return LocalResult(params, momentum, (losses / rows.shape[1]).double().cpu().numpy())

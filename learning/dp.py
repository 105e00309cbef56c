r"""DP-SGD for every client at once: per-example clipping and Gaussian noise, batched.

One step of DP-SGD (Abadi et al. 2016, Algorithm 1) for client :math:`k` on a minibatch
:math:`B_k` of :math:`b` examples, with clipping norm :math:`C` and noise multiplier
:math:`z`:

.. math::

    \bar g_k = \frac{1}{b}\Big(\sum_{i \in B_k} g_i \min\Big(1, \frac{C}{\lVert g_i\rVert + 10^{-6}}\Big)
               + \mathcal N(0, z^2 C^2 I)\Big),

where :math:`g_i` is the gradient of example :math:`i`'s loss and :math:`\lVert g_i\rVert`
its norm over all parameters; :math:`\bar g_k` then goes through the engine's SGD update
(weight decay, momentum). The :math:`10^{-6}` and the division by the batch size follow
Opacus's ``DPOptimizer`` (with ``loss_reduction="mean"``), so that one client's step equals
Opacus's for the same batch and the same noise generator (``tests/learning/test_dp.py``).

The per-example gradients of all ``K`` clients come from one call (the engine's hand-stacked
layers, treating each example as a model of its own, or ``vmap`` over clients of ``vmap``
over examples of ``torch.func.grad_and_value``), and the noise of all clients from one draw
per parameter tensor, of shape ``(K, *shape)`` (for one client, the numbers Opacus draws).

Minibatches are drawn afresh at every step, ``b`` distinct examples uniformly without
replacement (:func:`sample_subsets`): the sampling that
:func:`econ.privacy.accountants.accountant_epsilon` accounts for with
``sampling="fixed"`` and sampling rate :math:`b / n_k`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch.func import functional_call, grad_and_value, vmap

from econ.validation import non_negative, positive, positive_int
from learning import stacked
from learning.engine import Engine, LocalResult, Params, SGDConfig, ShardedData, sgd_step
from learning.rng import torch_generator

__all__ = [
    "DPSGD",
    "dp_local_sgd",
    "per_example_gradients",
    "private_gradients",
    "sample_subsets",
]

_NORM_FLOOR = 1e-6  # Opacus's: C / (||g|| + 1e-6)


@dataclass(frozen=True, slots=True)
class DPSGD:
    """Per-example clipping norm :math:`C` and noise multiplier :math:`z` of DP-SGD."""

    max_grad_norm: float
    noise_multiplier: float

    def __post_init__(self) -> None:
        positive("max_grad_norm", self.max_grad_norm)
        non_negative("noise_multiplier", self.noise_multiplier)

    @property
    def noise_std(self) -> float:
        """Standard deviation :math:`z C` of the noise added to the summed clipped gradients."""
        return self.noise_multiplier * self.max_grad_norm


def per_example_gradients(
    engine: Engine, params: Params, x: torch.Tensor, y: torch.Tensor
) -> tuple[Params, torch.Tensor]:
    """Gradient and loss of each example, ``(K, b, *shape)`` and ``(K, b)``: model ``k`` on
    example ``x[k, i]``.

    Models of plain layer stacks go through the engine's hand-stacked layers
    (:mod:`learning.stacked`) as ``K b`` models of one example each; others through a
    ``vmap`` over clients of a ``vmap`` over examples (:func:`_per_example_vmap`).
    """
    if not stacked.supports(engine.model):
        return _per_example_vmap(engine, params, x, y)
    k, b = y.shape[:2]
    each = {name: p.repeat_interleave(b, 0) for name, p in params.items()}
    grads, losses = stacked.loss_and_grad(
        engine.model,
        engine.task.losses,
        each,
        x.reshape(k * b, 1, *x.shape[2:]),
        y.reshape(k * b, 1, *y.shape[2:]),
    )
    return {name: g.reshape(k, b, *g.shape[1:]) for name, g in grads.items()}, losses.reshape(k, b)


def _per_example_vmap(
    engine: Engine, params: Params, x: torch.Tensor, y: torch.Tensor
) -> tuple[Params, torch.Tensor]:
    def one(p: Params, xi: torch.Tensor, yi: torch.Tensor) -> torch.Tensor:
        out = functional_call(engine.model, p, (xi.unsqueeze(0),))
        return engine.task.loss(out, yi.unsqueeze(0))

    per_client = vmap(grad_and_value(one), in_dims=(None, 0, 0))
    grads, losses = vmap(per_client)(params, x, y)
    return grads, losses


def private_gradients(
    per_example: Params, dp: DPSGD, generator: torch.Generator | None
) -> tuple[Params, torch.Tensor]:
    """Clip each example's gradient to norm ``C``, sum, add noise, divide by the batch size.

    Returns the private gradients ``(K, *shape)`` and the per-example norms ``(K, b)``
    before clipping. The noise is drawn parameter by parameter in the order of
    ``per_example`` (the model's ``named_parameters``), one ``(K, *shape)`` draw each.
    """
    first = next(iter(per_example.values()))
    k, b = first.shape[0], first.shape[1]
    squares = sum(g.reshape(k, b, -1).square().sum(-1) for g in per_example.values())
    norms = torch.as_tensor(squares).sqrt()
    factor = (dp.max_grad_norm / (norms + _NORM_FLOOR)).clamp(max=1.0)
    out: Params = {}
    for name, g in per_example.items():
        summed = torch.einsum("kb,kb...->k...", factor, g)
        if dp.noise_multiplier:
            noise = torch.normal(
                0.0, dp.noise_std, size=summed.shape, generator=generator, device=summed.device
            )
            summed = summed + noise
        out[name] = summed / b
    return out, norms


def sample_subsets(
    sizes: np.ndarray, steps: int, batch_size: int, rng: np.random.Generator
) -> np.ndarray:
    """``batch_size`` distinct examples per client and step, drawn afresh each step: ``(K, steps, b)``.

    Uniform sampling without replacement, independently at every step (what the privacy
    accountant's fixed-size sampling assumes); every client needs at least ``b`` examples.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    b = positive_int("batch_size", batch_size)
    if sizes.size == 0 or np.any(sizes < b):
        raise ValueError(
            f"DP-SGD draws {b} distinct examples per step; client sizes {sizes.tolist()} are too small"
        )
    keys = rng.random((sizes.size, positive_int("steps", steps), int(sizes.max())))
    padding = np.arange(keys.shape[-1])[None, None, :] >= sizes[:, None, None]
    keys = np.where(padding, 2.0, keys)  # padding sorts last, never drawn
    return np.argpartition(keys, b - 1, axis=-1)[..., :b]


def dp_local_sgd(
    engine: Engine,
    params: Params,
    data: ShardedData,
    clients: np.ndarray,
    *,
    steps: int,
    batch_size: int,
    sgd: SGDConfig,
    dp: DPSGD,
    rng: np.random.Generator,
    momentum: Params | None = None,
) -> LocalResult:
    """``steps`` DP-SGD steps for each of ``clients`` at once (row ``i`` is ``clients[i]``).

    Batches come from :func:`sample_subsets`; the noise from a torch generator seeded by
    ``rng``. The reported loss is the mean minibatch loss before each step (non-private
    bookkeeping, never released by the mechanism).
    """
    clients = np.asarray(clients, dtype=np.int64)
    sizes = data.sizes_numpy()[clients]
    picks = sample_subsets(sizes, steps, batch_size, rng)
    starts = data.offsets.cpu().numpy()[clients]
    rows = torch.from_numpy(picks + starts[:, None, None]).to(engine.device)
    generator = torch_generator(rng, engine.device)
    params = {name: p.detach() for name, p in params.items()}
    losses = torch.zeros(len(clients), device=engine.device)
    for t in range(rows.shape[1]):
        per_example, loss = per_example_gradients(
            engine, params, data.x[rows[:, t]], data.y[rows[:, t]]
        )
        grads, _ = private_gradients(per_example, dp, generator)
        with torch.no_grad():
            params, momentum = sgd_step(params, grads, momentum, sgd)
            losses += loss.detach().mean(dim=1)
    return LocalResult(params, momentum, (losses / rows.shape[1]).double().cpu().numpy())

r"""The local optimisers of the engines: SGD and Adadelta, for every client at once.

The local update of client :math:`k` at step :math:`t` is PyTorch's SGD:

.. math::

    g &= \nabla \ell_k(w_t; B_{k,t}) + \lambda w_t + \mu (w_t - c_k), \\
    m_{t+1} &= \beta m_t + (1 - d)\, g \ (m_1 = g), \qquad w_{t+1} = w_t - \eta\, m_{t+1},

with learning rate :math:`\eta`, momentum :math:`\beta`, dampening :math:`d`
(:func:`momentum_buffer`; ``d = 0.1`` with :math:`\beta = 0.9` is the exponential moving
average of CoBo's code), weight decay
:math:`\lambda`, and an optional proximal centre :math:`c_k` with weight :math:`\mu`
(FedProx, Li et al. 2020; Ditto's personal objective, Li et al. 2021). :func:`sgd_step` takes
it on stacked parameters (a leading client axis), :func:`adadelta_step` the update of
:class:`AdadeltaConfig`; :class:`learning.engine.BatchedEngine` runs them, and
:class:`learning.loop_engine.LoopEngine` their ``torch.optim`` counterparts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from econ.validation import in_interval, non_negative, positive
from learning.stacked import Params

__all__ = [
    "FLOAT32_MAX",
    "AdadeltaConfig",
    "Optimizer",
    "SGDConfig",
    "adadelta_step",
    "float32_step",
    "momentum_buffer",
    "sgd_step",
]


@dataclass(frozen=True, slots=True)
class SGDConfig:
    """Local optimiser of every client: PyTorch's SGD (no Nesterov)."""

    lr: float
    momentum: float = 0.0
    weight_decay: float = 0.0
    dampening: float = 0.0

    def __post_init__(self) -> None:
        """Check the settings: ``lr > 0``, ``weight_decay >= 0``, both within float32.

        ``momentum`` and ``dampening`` must lie in ``[0, 1)``.

        Raises
        ------
        ValueError
            A setting outside its range.
        """
        float32_step("lr", float(positive("lr", self.lr)))
        in_interval("momentum", self.momentum, 0.0, 1.0, high_open=True)
        float32_step("weight_decay", float(non_negative("weight_decay", self.weight_decay)))
        in_interval("dampening", self.dampening, 0.0, 1.0, high_open=True)


@dataclass(frozen=True, slots=True)
class AdadeltaConfig:
    r"""Local optimiser Adadelta (Zeiler 2012) with PyTorch's defaults.

    Its state is fresh at every call of :meth:`learning.engine.Engine.local_sgd` (the IP-FL
    reference code's local optimiser):

    .. math::

        s \leftarrow \rho s + (1-\rho) g^2, \quad
        d = \frac{\sqrt{a + \epsilon}}{\sqrt{s + \epsilon}}\, g, \quad
        a \leftarrow \rho a + (1-\rho) d^2, \quad w \leftarrow w - \mathrm{lr}\, d.

    The loop engine runs ``torch.optim.Adadelta``; the batched engine the same formula for
    every client at once (:func:`adadelta_step`), and a test holds the two together.
    """

    lr: float = 1.0
    rho: float = 0.9
    eps: float = 1e-6

    def __post_init__(self) -> None:
        r"""Check the settings: ``lr > 0`` within float32, :math:`\rho \in [0, 1)`, ``eps > 0``.

        Raises
        ------
        ValueError
            A setting outside its range.
        """
        float32_step("lr", float(positive("lr", self.lr)))
        in_interval("rho", self.rho, 0.0, 1.0, high_open=True)
        positive("eps", self.eps)

    @property
    def momentum(self) -> float:
        """Adadelta carries no heavy-ball buffer from one call to the next."""
        return 0.0


#: A client's local optimiser.
Optimizer = SGDConfig | AdadeltaConfig


def adadelta_step(
    params: Params, grads: Params, state: Params | None, opt: AdadeltaConfig
) -> tuple[Params, Params]:
    """One :class:`AdadeltaConfig` update of stacked ``params``.

    ``state`` holds the running averages ``"<name>.square"`` and ``"<name>.delta"`` (None:
    zeros).
    """
    state = {} if state is None else state
    new_params: Params = {}
    new_state: Params = {}
    for name, p in params.items():
        g = grads[name]
        square = state.get(f"{name}.square", torch.zeros_like(p))
        delta = state.get(f"{name}.delta", torch.zeros_like(p))
        square = opt.rho * square + (1 - opt.rho) * g * g
        step = torch.sqrt(delta + opt.eps) / torch.sqrt(square + opt.eps) * g
        new_state[f"{name}.square"] = square
        new_state[f"{name}.delta"] = opt.rho * delta + (1 - opt.rho) * step * step
        new_params[name] = p - opt.lr * step
    return new_params, new_state


FLOAT32_MAX = float(np.finfo(np.float32).max)


def float32_step(name: str, value: float) -> float:
    """Refuse a learning rate (or another step scale) that float32 arithmetic cannot hold.

    Raises
    ------
    ValueError
        ``abs(value)`` exceeds :data:`FLOAT32_MAX` (about 3.4e38).
    """
    if abs(value) > FLOAT32_MAX:
        raise ValueError(
            f"{name} must be at most {FLOAT32_MAX:.3g} (the largest float32), got {value:g}"
        )
    return value


def momentum_buffer(
    previous: torch.Tensor | None,
    g: torch.Tensor,
    momentum: float,
    dampening: float = 0.0,
    *,
    fresh: torch.Tensor | None = None,
) -> torch.Tensor:
    r"""PyTorch's SGD momentum buffer, row by row (one row per client).

    .. math:: m \leftarrow g \ \text{at a client's first step}, \qquad
              m \leftarrow \beta m + (1 - d)\, g \ \text{after}.

    ``previous`` None: every row is at its first step. ``fresh`` (bool, one per row): the
    rows at their first step, for buffers kept as zeros until a client first trains. The one
    place of this formula for the engines, CoBo, Ditto and IFCA.
    """
    if previous is None:
        return g
    buffer = (
        torch.add(previous * momentum, g, alpha=1.0 - dampening)
        if dampening
        else torch.add(g, previous, alpha=momentum)
    )
    if fresh is not None:
        buffer = torch.where(fresh.reshape(-1, *([1] * (g.ndim - 1))), g, buffer)
    return buffer


def sgd_step(
    params: Params,
    grads: Params,
    momentum: Params | None,
    sgd: SGDConfig,
    prox_center: Params | None = None,
    prox_mu: float = 0.0,
    *,
    in_place: bool = False,
) -> tuple[Params, Params | None]:
    """One SGD update of stacked ``params`` from ``grads`` (the module docstring's formula).

    With ``in_place`` the caller's ``params`` are overwritten with the updated weights (the
    same floats: the same operation writing into the old memory, which a fresh tensor of
    tens of megabytes would first have to fault in); the caller must own them.
    """
    new_params: Params = {}
    new_momentum: Params | None = {} if sgd.momentum > 0 else None
    # torch.add(a, b, alpha=c) is a + c b in one pass over memory (these updates are
    # memory-bound: with many clients they are a seventh of a LeNet-5 step done in two passes)
    for name, p in params.items():
        g = grads[name]
        if sgd.weight_decay:
            g = torch.add(g, p, alpha=sgd.weight_decay)
        if prox_center is not None and prox_mu:
            g = torch.add(g, p - prox_center[name], alpha=prox_mu)
        if new_momentum is not None:
            g = momentum_buffer(
                None if momentum is None else momentum[name], g, sgd.momentum, sgd.dampening
            )
            new_momentum[name] = g
        new_params[name] = p.add_(g, alpha=-sgd.lr) if in_place else torch.add(p, g, alpha=-sgd.lr)
    return new_params, new_momentum

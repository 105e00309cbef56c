r"""Byzantine clients: attacks on submitted updates, robust aggregators, and the one hook.

A :class:`Threat` names an attack and the fraction of attacking clients;
:func:`adversarial_context` picks the attackers with the run's ``rng`` and returns an
:class:`AdversarialContext`. That context is the one place where attacks happen:

- every :class:`~learning.algorithms.base.FederatedAlgorithm` submits the models that
  :meth:`AdversarialContext.fit` returns, and there the attackers' rows are replaced by
  ``start + attack(updates of the honest clients)``;
- gradient-sharing methods (Federated-Clustering, Myopic- and Momentum-Clustering) pass the
  vectors they receive through :func:`submit`, which replaces the attackers' entries (and is
  the identity on a plain :class:`~learning.algorithms.base.Context`);
- ``label-flip`` is a data attack: the attackers' training labels become :math:`C-1-y`, and
  what they submit is then honest work on poisoned data.

Attacks (Werner 2024, §2.4 "Defense against Byzantine attacks" and Fig. 2.6; the
authors' published code), on the honest vectors
:math:`h_1..h_m` of one receiver, all attackers sending the same vector:

- ``large-gradient``: iid :math:`\mathcal N(10^6, 200^2)` coordinates;
- ``bit-flip``: :math:`-h_1`, the negated vector of the first honest client;
- ``zeros``: the zero vector;
- ``alie`` (Baruch et al. 2019): :math:`\mu - z s` with coordinate mean and std of the honest
  vectors and :math:`z = \Phi^{-1}((N - s)/N)`, :math:`s = \lfloor N/2 + 1\rfloor - b`;
- ``ipm`` (Xie et al. 2020): :math:`-\varepsilon\, \mu`.

Robust aggregators for FedAvg (:data:`AGGREGATORS`): coordinate-wise median, trimmed mean
(Yin et al. 2018) and Krum (Blanchard et al. 2017); ``robust-fedavg``
(:mod:`learning.algorithms.robust_fedavg`) uses them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
import torch

from econ.validation import choice, in_interval, positive
from learning.algorithms.base import Context
from learning.all_pairs import flatten, unflatten
from learning.engine import LocalResult, Params, ShardedData

__all__ = [
    "AGGREGATORS",
    "ATTACKS",
    "AdversarialContext",
    "Threat",
    "adversarial_context",
    "coordinate_median",
    "honest_clients",
    "krum",
    "submit",
    "trimmed_mean",
]

Attack = Callable[[torch.Tensor, int, np.random.Generator, float], torch.Tensor]


def _large_gradient(
    honest: torch.Tensor, n_bad: int, rng: np.random.Generator, _: float
) -> torch.Tensor:
    draw = rng.normal(1e6, 200.0, size=(honest.shape[-1],))
    return torch.as_tensor(draw, dtype=honest.dtype, device=honest.device).expand(
        *honest.shape[:-2], n_bad, honest.shape[-1]
    )


def _bit_flip(honest: torch.Tensor, n_bad: int, rng: np.random.Generator, _: float) -> torch.Tensor:
    return (-honest[..., :1, :]).expand(*honest.shape[:-2], n_bad, honest.shape[-1])


def _zeros(honest: torch.Tensor, n_bad: int, rng: np.random.Generator, _: float) -> torch.Tensor:
    return honest.new_zeros(*honest.shape[:-2], n_bad, honest.shape[-1])


def _alie(honest: torch.Tensor, n_bad: int, rng: np.random.Generator, _: float) -> torch.Tensor:
    n = honest.shape[-2] + n_bad
    s = math.floor(n / 2 + 1) - n_bad
    z = NormalDist().inv_cdf(min(max((n - s) / n, 1e-6), 1 - 1e-6))
    std = honest.std(dim=-2, unbiased=False, keepdim=True)
    vector = honest.mean(dim=-2, keepdim=True) - z * std
    return vector.expand(*honest.shape[:-2], n_bad, honest.shape[-1])


def _ipm(honest: torch.Tensor, n_bad: int, rng: np.random.Generator, eps: float) -> torch.Tensor:
    vector = -eps * honest.mean(dim=-2, keepdim=True)
    return vector.expand(*honest.shape[:-2], n_bad, honest.shape[-1])


#: Attack name -> function ``(honest (..., m, P), n_bad, rng, eps) -> (..., n_bad, P)``.
ATTACKS: dict[str, Attack] = {
    "large-gradient": _large_gradient,
    "bit-flip": _bit_flip,
    "zeros": _zeros,
    "alie": _alie,
    "ipm": _ipm,
    "label-flip": lambda honest, n_bad, rng, eps: honest[..., :0, :],  # data attack
}


@dataclass(frozen=True, slots=True)
class Threat:
    """An ``attack`` of :data:`ATTACKS` run by a ``fraction`` of the clients.

    ``eps`` is IPM's scale.
    """

    attack: str
    fraction: float
    eps: float = 0.1

    def __post_init__(self) -> None:
        """Check that ``attack`` is in :data:`ATTACKS`, ``fraction`` in ``[0, 1)`` and ``eps > 0``.

        Raises
        ------
        ValueError
            A field outside its range.
        """
        choice("attack", self.attack, tuple(ATTACKS))
        in_interval("fraction", self.fraction, 0.0, 1.0, high_open=True)
        positive("eps", self.eps)


@dataclass(frozen=True, slots=True)
class AdversarialContext(Context):
    """A :class:`Context` some of whose clients run ``threat``.

    ``attackers`` is boolean per client; see the module docstring.
    """

    attackers: np.ndarray
    threat: Threat

    def fit(
        self,
        start: Params,
        clients: np.ndarray,
        rng: np.random.Generator,
        *,
        steps: int | None = None,
        **options: Any,
    ) -> LocalResult:
        """Local SGD as :meth:`learning.algorithms.base.Context.fit`, the attackers' rows forged.

        The updates ``params - start`` pass through :func:`submit` (with a stream spawned from
        ``rng``), so the attackers' rows become ``start + attack(updates of the honest
        clients)``. Under ``label-flip`` they stay the honest work on the poisoned labels.
        """
        result = Context.fit(self, start, clients, rng, steps=steps, **options)
        updates = flatten(result.params) - flatten(start)
        corrupted = submit(self, updates, clients, rng.spawn(1)[0])
        params = unflatten(flatten(start) + corrupted, start)
        return dataclasses.replace(result, params=params)


def adversarial_context(
    ctx: Context, threat: Threat, rng: np.random.Generator
) -> AdversarialContext:
    """``ctx`` with ``round(fraction N)`` attackers drawn by ``rng`` running ``threat``.

    For ``label-flip`` their training labels become ``C - 1 - y``.
    """
    n = ctx.n_clients
    attackers = np.zeros(n, dtype=bool)
    attackers[rng.choice(n, size=round(threat.fraction * n), replace=False)] = True
    train = ctx.train
    if threat.attack == "label-flip":
        if not ctx.engine.task.classification:
            raise ValueError("label-flip needs a classification task")
        n_classes = int(train.y.max()) + 1
        owner = (
            torch.repeat_interleave(torch.arange(n, device=train.y.device), train.sizes)
            .cpu()
            .numpy()
        )
        flip = torch.as_tensor(attackers[owner], device=train.y.device)
        train = ShardedData(
            train.x, torch.where(flip, n_classes - 1 - train.y, train.y), train.offsets, train.sizes
        )
    fields = {f.name: getattr(ctx, f.name) for f in dataclasses.fields(Context)}
    return AdversarialContext(**{**fields, "train": train}, attackers=attackers, threat=threat)


def honest_clients(ctx: Context) -> np.ndarray:
    """Indices of the clients that do not attack (all on a plain context)."""
    if isinstance(ctx, AdversarialContext):
        return np.flatnonzero(~ctx.attackers)
    return np.arange(ctx.n_clients)


def submit(
    ctx: Context, vectors: torch.Tensor, clients: np.ndarray, rng: np.random.Generator
) -> torch.Tensor:
    """What the receivers see: ``vectors`` with the attackers' entries replaced by the attack.

    ``vectors (..., n, P)`` come from ``clients`` (one per column of axis ``-2``); they are
    unchanged when ``ctx`` has no threat.
    """
    if not isinstance(ctx, AdversarialContext):
        return vectors
    bad = ctx.attackers[np.asarray(clients)]
    if not bad.any() or ctx.threat.attack == "label-flip":
        return vectors
    bad_t = torch.as_tensor(bad, device=vectors.device)
    honest = vectors[..., ~bad_t, :]
    forged = ATTACKS[ctx.threat.attack](honest, int(bad.sum()), rng, ctx.threat.eps)
    out = vectors.clone()
    out[..., bad_t, :] = forged.to(vectors.dtype)
    return out


# --------------------------------------------------------------------------- aggregators


def coordinate_median(vectors: torch.Tensor, n_bad: int = 0) -> torch.Tensor:
    """Coordinate-wise median of ``vectors (n, P)`` (lower median for even ``n``)."""
    return vectors.median(dim=0).values


def trimmed_mean(vectors: torch.Tensor, n_bad: int = 0) -> torch.Tensor:
    """Coordinate-wise mean after dropping the ``n_bad`` largest and smallest values."""
    n = vectors.shape[0]
    k = min(int(n_bad), (n - 1) // 2)
    ordered = vectors.sort(dim=0).values
    return ordered[k : n - k].mean(dim=0)


def krum(vectors: torch.Tensor, n_bad: int = 0) -> torch.Tensor:
    r"""Krum: the vector closest to its nearest others (Blanchard et al. 2017).

    The vector with the smallest sum of squared distances to its :math:`n - b - 2` nearest
    others.
    """
    n = vectors.shape[0]
    m = max(1, n - int(n_bad) - 2)
    d = torch.cdist(vectors, vectors).square()
    d.fill_diagonal_(float("inf"))
    k = min(m, n - 1)
    scores = d.topk(k, dim=1, largest=False).values.sum(1) if k > 0 else d.new_zeros(n)
    return vectors[int(scores.argmin())]


#: Robust aggregator name -> function ``(vectors (n, P), n_bad) -> (P,)``.
AGGREGATORS: dict[str, Callable[[torch.Tensor, int], torch.Tensor]] = {
    "median": coordinate_median,
    "trimmed-mean": trimmed_mean,
    "krum": krum,
}

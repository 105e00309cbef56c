r"""The market that a set of model qualities creates (Werner 2024, ch. 3, D1-D7 and §14.1).

Consumers of type :math:`\theta \sim U[0, 1]` buy the model that maximises
:math:`\theta q_i - p_i` (or nothing); firms set Bertrand prices. Given the qualities of any
set of trained models -- two firms of the duopoly, or the personalised models of many
clients -- :func:`market_round` gives the equilibrium prices, market shares, revenues,
consumer surplus and welfare, and :func:`market_history` does so for every round of a
training run. Two firms use the closed forms of :mod:`econ.duopoly` (Lemma 22, the surplus
of spec ch3 C27); more use the n-firm equilibrium of :mod:`econ.oligopoly`.

:func:`sampled_market` checks the closed forms by brute force: it draws a finite population
of consumer types, lets each buy its best option at the equilibrium prices, and measures
shares, revenues and surplus, which approach the closed forms at rate
:math:`O(1/\sqrt{n})`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from econ import duopoly
from econ.oligopoly import oligopoly_equilibrium
from econ.qualities import ModelQualities
from econ.validation import positive_int, unit_interval

__all__ = ["MarketHistory", "MarketRound", "market_history", "market_round", "sampled_market"]


@dataclass(frozen=True, slots=True)
class MarketRound:
    """Equilibrium of one market, one entry per firm in the order the qualities were given.

    ``share`` is the mass of consumers buying each model (demand); the rest buy nothing.
    ``welfare`` is consumer surplus plus the firms' revenues (no costs).
    """

    names: tuple[str, ...]
    quality: NDArray[np.float64]
    price: NDArray[np.float64]
    share: NDArray[np.float64]
    revenue: NDArray[np.float64]
    consumer_surplus: float
    welfare: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "names": list(self.names),
            "quality": self.quality.tolist(),
            "price": self.price.tolist(),
            "share": self.share.tolist(),
            "revenue": self.revenue.tolist(),
            "consumer_surplus": self.consumer_surplus,
            "welfare": self.welfare,
        }


def _duopoly(q: NDArray[np.float64]) -> tuple[NDArray, NDArray, NDArray, float]:
    low, high = (0, 1) if q[0] <= q[1] else (1, 0)
    eq = duopoly.equilibrium(q[low], q[high])
    price, share = np.empty(2), np.empty(2)
    price[[low, high]] = float(eq.p_l), float(eq.p_h)
    share[[low, high]] = float(eq.D_l), float(eq.D_h)
    return price, share, price * share, float(eq.consumer_surplus)


def _oligopoly(q: NDArray[np.float64]) -> tuple[NDArray, NDArray, NDArray, float]:
    price, share = np.zeros(q.size), np.zeros(q.size)
    selling = q > 0  # a model of quality 0 is worth nothing to anyone
    if not np.any(selling):
        return price, share, price, 0.0
    eq = oligopoly_equilibrium(q[selling])
    price[selling], share[selling] = eq.price, eq.demand
    return price, share, price * share, eq.consumer_surplus


def market_round(qualities: ModelQualities | ArrayLike) -> MarketRound:
    r"""Bertrand equilibrium of the firms whose models have ``qualities``.

    Parameters
    ----------
    qualities
        A :class:`econ.qualities.ModelQualities`, or plain qualities in [0, 1].

    Notes
    -----
    Two firms: Lemma 22 with the better model as the high firm (equal qualities: Lemma 23,
    zero prices). One or more than two: the linear first-order system of
    :func:`econ.oligopoly.oligopoly_equilibrium` (one firm: the monopoly price
    :math:`q/2`); qualities must then be distinct, and firms of quality 0 sell nothing.
    Consumer surplus for two firms (spec ch3 C27):

    .. math:: CS^* = \frac{q_h^2 (4 q_h + 5 q_l)}{2 (4 q_h - q_l)^2}
    """
    if isinstance(qualities, ModelQualities):
        names, q = qualities.names, qualities.quality.astype(np.float64)
    else:
        q = unit_interval("qualities", qualities).reshape(-1)
        names = tuple(f"firm{i}" for i in range(q.size))
    if q.size == 0:
        raise ValueError("qualities must name at least one firm, got []")
    price, share, revenue, surplus = (_duopoly if q.size == 2 else _oligopoly)(q)
    return MarketRound(
        names=tuple(names),
        quality=q,
        price=price,
        share=share,
        revenue=revenue,
        consumer_surplus=surplus,
        welfare=surplus + float(revenue.sum()),
    )


@dataclass(frozen=True, slots=True)
class MarketHistory:
    """The market of every round: arrays ``(rounds, firms)`` and ``(rounds,)``."""

    names: tuple[str, ...]
    quality: NDArray[np.float64]
    price: NDArray[np.float64]
    share: NDArray[np.float64]
    revenue: NDArray[np.float64]
    consumer_surplus: NDArray[np.float64]
    welfare: NDArray[np.float64]

    def rows(self) -> list[dict[str, float]]:
        """One flat record per round (``t``, then ``quality_<name>``, ``price_<name>`` ...)."""
        out = []
        for t in range(self.quality.shape[0]):
            row: dict[str, float] = {"t": t}
            for field in ("quality", "price", "share", "revenue"):
                for i, name in enumerate(self.names):
                    row[f"{field}_{name}"] = float(getattr(self, field)[t, i])
            row["consumer_surplus"] = float(self.consumer_surplus[t])
            row["welfare"] = float(self.welfare[t])
            out.append(row)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"names": list(self.names), "rounds": self.rows()}


def market_history(rounds: Sequence[ModelQualities]) -> MarketHistory:
    """:func:`market_round` for each round of a run; every round must name the same firms."""
    if not rounds:
        raise ValueError("market_history needs at least one round of qualities")
    names = rounds[0].names
    for t, r in enumerate(rounds):
        if r.names != names:
            raise ValueError(f"round {t} names {r.names}, round 0 names {names}")
    each = [market_round(r) for r in rounds]
    return MarketHistory(
        names=names,
        quality=np.stack([m.quality for m in each]),
        price=np.stack([m.price for m in each]),
        share=np.stack([m.share for m in each]),
        revenue=np.stack([m.revenue for m in each]),
        consumer_surplus=np.array([m.consumer_surplus for m in each]),
        welfare=np.array([m.welfare for m in each]),
    )


def sampled_market(
    qualities: ModelQualities | ArrayLike,
    n_consumers: int,
    seed: int | np.random.Generator | None = None,
) -> MarketRound:
    r"""The market of :func:`market_round` acted out by ``n_consumers`` sampled consumers.

    Types :math:`\theta_c \sim U[0, 1]` are drawn; at the equilibrium prices each consumer
    buys :math:`\arg\max_i (\theta_c q_i - p_i)` if that is positive, else nothing.
    Shares, revenues and surplus are population averages, so they agree with the closed
    forms up to :math:`O(1/\sqrt{n})`.
    """
    n = positive_int("n_consumers", n_consumers)
    rng = np.random.default_rng(seed)
    exact = market_round(qualities)
    theta = rng.random(n)
    utility = theta[:, None] * exact.quality[None, :] - exact.price[None, :]
    choice = np.argmax(utility, axis=1)
    best = utility[np.arange(n), choice]
    buys = best > 0
    share = np.bincount(choice[buys], minlength=exact.quality.size) / n
    revenue = exact.price * share
    surplus = float(best[buys].sum() / n)
    return MarketRound(
        names=exact.names,
        quality=exact.quality,
        price=exact.price,
        share=share,
        revenue=revenue,
        consumer_surplus=surplus,
        welfare=surplus + float(revenue.sum()),
    )

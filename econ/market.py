r"""The market that a set of model qualities creates (Werner 2024, ch. 3, §3.2).

Consumers of type :math:`\theta \sim U[0, 1]` buy the model that maximises
:math:`\theta q_i - p_i` (or nothing); firms set Bertrand prices (§3.2: prices in
:math:`[0, \infty)`, demands are masses of consumers). Given the qualities of any set of trained models -- two firms of the
duopoly, or the personalised models of many clients -- :func:`market_round` gives the
equilibrium prices, market shares, revenues, consumer surplus and welfare, and
:func:`market_history` does so for every round of a training run. Roles follow the current
qualities: whichever model is better is the high firm of that round, so revenues are never
negative and welfare is consumer surplus plus revenues in every round. Any qualities in
[0, 1] are a market: tied firms price at 0, firms below a tie or of quality 0 are priced
out (:mod:`econ.oligopoly` derives the rules; for two distinct positive qualities the
prices are Lemma 22's).

:func:`sampled_market` checks the closed forms by brute force: it draws a finite population
of consumer types, lets each buy its best option at the equilibrium prices, and measures
shares, revenues and surplus, which approach the closed forms at rate
:math:`O(1/\sqrt{n})`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from econ.oligopoly import oligopoly_equilibrium
from econ.outputs import frame, plain
from econ.qualities import ModelQualities
from econ.validation import fits_in_memory, positive_int, unit_interval

__all__ = ["MarketHistory", "MarketRound", "market_history", "market_round", "sampled_market"]


@dataclass(frozen=True, slots=True)
class MarketRound:
    """Equilibrium of one market, one entry per firm in the order the qualities were given.

    ``share`` is the mass of consumers buying each model (demand); the rest buy nothing.
    ``priced_out`` marks the firms that sell nothing at any price. ``welfare`` is consumer
    surplus plus the firms' revenues (no costs).

    References
    ----------
    Werner (2024), ch. 3, §3.2 (pp. 59-61), Definitions 2-3, Lemmas 21-22.
    """

    names: tuple[str, ...]
    quality: NDArray[np.float64]
    price: NDArray[np.float64]
    share: NDArray[np.float64]
    revenue: NDArray[np.float64]
    priced_out: NDArray[np.bool_]
    consumer_surplus: float
    welfare: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: one list entry per firm, and the market's surplus and welfare."""
        return plain(
            {
                "names": self.names,
                "quality": self.quality,
                "price": self.price,
                "share": self.share,
                "revenue": self.revenue,
                "priced_out": self.priced_out,
                "consumer_surplus": self.consumer_surplus,
                "welfare": self.welfare,
            }
        )

    def to_frame(self) -> Any:
        """A pandas DataFrame indexed by firm name (needs pandas).

        Columns: quality, price, share, revenue, priced_out. Consumer surplus and welfare are the
        market's and stay attributes here.
        """
        table = frame(
            {
                "name": list(self.names),
                "quality": self.quality,
                "price": self.price,
                "share": self.share,
                "revenue": self.revenue,
                "priced_out": self.priced_out,
            },
            "MarketRound",
        )
        return table.set_index("name")


def market_round(qualities: ModelQualities | ArrayLike) -> MarketRound:
    r"""Bertrand equilibrium of the firms whose models have ``qualities``.

    Parameters
    ----------
    qualities
        A :class:`econ.qualities.ModelQualities`, or plain qualities in [0, 1].

    Returns
    -------
    MarketRound
        Prices, shares and revenues (all >= 0) in the order given, which firms are priced
        out, consumer surplus and welfare.

    Notes
    -----
    :func:`econ.oligopoly.oligopoly_equilibrium` for any number of firms: two firms of
    distinct positive qualities get Lemma 22 with the better model as the high firm (the
    consumer surplus is then :math:`q_h^2 (4 q_h + 5 q_l) / (2 (4 q_h - q_l)^2)`); one firm
    the monopoly price :math:`q/2`; equal qualities compete to a zero price and share their
    buyers equally (Lemma 23 for two firms), and firms below them sell nothing.

    References
    ----------
    Werner (2024), ch. 3, §3.2, Definitions 2-3, Lemmas 21-23, pp. 59-61.

    Examples
    --------
    >>> m = market_round([0.711, 0.778, 0.711])
    >>> m.price.round(4).tolist(), m.share.round(4).tolist()
    ([0.0, 0.0335, 0.0], [0.25, 0.5, 0.25])
    """
    if isinstance(qualities, ModelQualities):
        names, q = qualities.names, qualities.quality.astype(np.float64)
    else:
        q = unit_interval("qualities", qualities).reshape(-1)
        names = _firm_names(q.size)
    if q.size == 0:
        raise ValueError("qualities must name at least one firm, got []")
    eq = oligopoly_equilibrium(q)
    return MarketRound(
        names=names,
        quality=q,
        price=eq.price,
        share=eq.demand,
        revenue=eq.revenue,
        priced_out=eq.priced_out,
        consumer_surplus=eq.consumer_surplus,
        welfare=eq.welfare,
    )


@functools.lru_cache(maxsize=4)
def _firm_names(n: int) -> tuple[str, ...]:
    """``("firm0", "firm1", ...)``: the names of ``n`` unnamed firms, built once per count.

    A tuple of strings is immutable, so every market of ``n`` unnamed firms shares it.
    """
    return tuple(f"firm{i}" for i in range(n))


@dataclass(frozen=True, slots=True)
class MarketHistory:
    """The market of every round: arrays ``(rounds, firms)`` and ``(rounds,)``.

    References
    ----------
    Werner (2024), ch. 3, §3.2, Lemmas 21-22, in each round.
    """

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
        """JSON-ready: the firm names and :meth:`rows`."""
        return plain({"names": self.names, "rounds": self.rows()})

    def to_frame(self) -> Any:
        """A pandas DataFrame of :meth:`rows`, one row per round indexed by ``t`` (needs pandas)."""
        return frame(self.rows(), "MarketHistory").set_index("t")


def market_history(rounds: Sequence[ModelQualities]) -> MarketHistory:
    """:func:`market_round` for each round of a run; every round must name the same firms.

    References
    ----------
    Werner (2024), ch. 3, §3.2, Lemmas 21-23 in each round.

    Examples
    --------
    The low firm improves from 0.3 to 0.6: its revenue stays, the high firm's halves.

    >>> rounds = [
    ...     ModelQualities.from_mapping({"low": 0.3, "high": 0.8}),
    ...     ModelQualities.from_mapping({"low": 0.6, "high": 0.8}),
    ... ]
    >>> history = market_history(rounds)
    >>> history.revenue.round(4).tolist()
    [[0.0143, 0.1522], [0.0142, 0.0757]]
    >>> history.welfare.round(4).tolist()
    [0.3453, 0.3834]
    """
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

    References
    ----------
    Werner (2024), ch. 3, §3.2, Definition 2 (consumers of type :math:`\theta \sim U[0, 1]`).

    Examples
    --------
    >>> exact = market_round([0.3, 0.8])
    >>> sampled = sampled_market([0.3, 0.8], 100_000, seed=0)
    >>> bool(abs(sampled.share - exact.share).max() < 0.01)
    True
    """
    n = positive_int("n_consumers", n_consumers)
    exact = market_round(qualities)
    fits_in_memory(f"n_consumers={n}", 8.0 * n * (3 * exact.quality.size + 4))
    rng = np.random.default_rng(seed)
    theta = rng.random(n)
    utility = theta[:, None] * exact.quality[None, :] - exact.price[None, :]
    best = utility.max(axis=1)
    # a consumer indifferent between equal offers (tied firms) picks one at random
    choice = np.argmax((utility == best[:, None]) * rng.random(utility.shape), axis=1)
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
        priced_out=exact.priced_out,
        consumer_surplus=surplus,
        welfare=surplus + float(revenue.sum()),
    )

r"""Vertical Bertrand competition among any number of firms, ties and exits included.

The market of Werner (2024), ch. 3, §3.2 (the duopoly model: Definitions 2-3, Lemmas 21-23),
with n firms instead of two, as §3.2 says its results extend: consumers of type :math:`\theta \sim U[0, 1]` buy the model that maximises
:math:`\theta q_i - p_i`, or nothing; firms choose prices :math:`p_i \ge 0` simultaneously and
have no costs. For two firms of distinct positive qualities the equilibrium is Lemma 22's
(``thesis.ch3.oligopoly.n2`` checks that); the rest of this module is derived here, and its
statements are registered as ``market.bertrand.*`` (kind ``derived``) in
:mod:`econ.oligopoly_propositions`.

**Distinct qualities.** Sort the selling firms :math:`q_0 < q_1 < \dots < q_n`, where
:math:`(q_0, p_0)` is the *base*: the outside option :math:`(0, 0)`, or a tied group priced at 0
(below). Firm :math:`i` sells to the types between
:math:`\theta_i = (p_i - p_{i-1})/d_i` and :math:`\theta_{i+1}` (:math:`\theta_{n+1} = 1`),
with gaps :math:`d_i = q_i - q_{i-1}`. Each revenue is concave in the firm's own price (its
demand is concave: undercutting a neighbour out of the market makes demand flatter), so the
first-order conditions

.. math::

    D_i = p_i \Big(\frac{1}{d_i} + \frac{1}{d_{i+1}}\Big) \quad (i < n), \qquad
    D_n = \frac{p_n}{d_n}

characterise the equilibrium. Writing :math:`p_i = r_i\, p_{i+1}` they solve from the bottom,

.. math::

    r_0 = 0, \qquad r_i = \frac{1}{2 + \frac{d_{i+1}}{d_i}(2 - r_{i-1})}, \qquad
    p_n = \frac{d_n}{2 - r_{n-1}},

so :math:`0 < r_i < 1/2`, every price is positive and **every firm sells**: no firm with a
distinct positive quality is priced out. Demands computed as the products above stay
positive where the differences :math:`\theta_{i+1} - \theta_i` would cancel (the lowest of
many firms sell amounts that fall geometrically, below 1e-300 among 1,000 firms; such a
demand is reported as the float it rounds to, possibly 0).

**Ties.** Firms of equal quality sell the same product: if they shared positive demand at
a positive price, either would undercut the other, so a tied group prices at 0 (Bertrand)
and shares its demand equally. Every firm of lower quality then sells nothing at any price
:math:`p \ge 0` (a free product of higher quality beats it for every type). The firms
above the highest tied quality :math:`q_T` play the distinct-quality game with base
:math:`(q_T, 0)`. A model of quality 0 is worth nothing and sells nothing.

**Exits.** A priced-out firm is reported with price 0, demand 0 and revenue 0: at price 0 it
still sells nothing, and no price lets it sell.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from econ.outputs import frame, plain
from econ.validation import non_negative, unit_interval

__all__ = [
    "OligopolyEquilibrium",
    "buyer_interval",
    "demands",
    "deviation_gains",
    "ladder",
    "ladder_firms",
    "oligopoly_equilibrium",
]


@dataclass(frozen=True, slots=True)
class OligopolyEquilibrium:
    r"""Prices, demands and revenues of each firm, in the order the qualities were given.

    ``priced_out`` marks the firms that sell nothing at any price (below a tie, or of
    quality 0); ``consumer_surplus`` is :math:`\int \max(\theta q_i - p_i, 0)\,d\theta`.

    References
    ----------
    Werner (2024), ch. 3, §3.2 (pp. 59-61), Definitions 2-3 and Lemmas 21-22 (the two-firm case).
    """

    quality: NDArray[np.float64]
    price: NDArray[np.float64]
    demand: NDArray[np.float64]
    revenue: NDArray[np.float64]
    priced_out: NDArray[np.bool_]
    consumer_surplus: float

    @property
    def welfare(self) -> float:
        """Consumer surplus plus revenues (no costs)."""
        return self.consumer_surplus + float(self.revenue.sum())

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: one list entry per firm, and the market's surplus and welfare."""
        return plain(
            {
                "quality": self.quality,
                "price": self.price,
                "demand": self.demand,
                "revenue": self.revenue,
                "priced_out": self.priced_out,
                "consumer_surplus": self.consumer_surplus,
                "welfare": self.welfare,
            }
        )

    def to_frame(self) -> Any:
        """A pandas DataFrame, one row per firm in the order given (needs pandas)."""
        return frame(
            {
                "quality": self.quality,
                "price": self.price,
                "demand": self.demand,
                "revenue": self.revenue,
                "priced_out": self.priced_out,
            },
            "OligopolyEquilibrium",
        )


#: Qualities in [5e-324, 1] times 2**537 lie in [2**-537, 2**537]: normal floats, whose
#: products and quotients in :func:`ladder` neither underflow nor overflow.
SCALE_EXP = 537
_SCALE = float(2.0**SCALE_EXP)


def ladder(gaps: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Prices and ratios ``r`` of the distinct-quality game with gaps ``d_1 .. d_n`` > 0.

    The ratios are those of the bottom-up recursion (:func:`_ratios`); the prices
    :math:`p_i = r_i p_{i+1}` are a cumulative product from the top, in the recursion's order
    of multiplications. Types are :math:`U[0, 1]` and the base is priced at 0 (module notes).

    References
    ----------
    Werner (2024), ch. 3, §3.2, Lemma 22 (the two-firm case).
    """
    n = gaps.size
    r = np.zeros(n)
    if n > 1:
        with np.errstate(over="ignore"):  # d_{i+1}/d_i = inf gives r_i = 0, the right limit
            r[: n - 1] = _ratios(gaps[1:] / gaps[:-1])
    price = np.empty(n)
    price[-1] = gaps[-1] / (2.0 - (r[-2] if n > 1 else 0.0))
    price[-2::-1] = r[-2::-1]
    return np.asarray(np.cumprod(price[::-1])[::-1], dtype=np.float64), r


#: :func:`_ratios` sweeps every ratio while more than this share of them still moves.
_SPARSE_BELOW = 1 / 16


def _ratios(k: NDArray[np.float64]) -> NDArray[np.float64]:
    r"""The ratios :math:`r_i = f_i(r_{i-1})`, :math:`r_{-1} = 0`, of the module docstring.

    :math:`f_i(x) = 1/(2 + k_i (2 - x))` with :math:`k_i = d_{i+1}/d_i`. The recursion is
    sequential; its result is the floating-point fixed point of the sweep
    :math:`r_i \leftarrow f_i(r_{i-1})` applied to every ``i`` at once, and bit for bit: at a
    fixed point :math:`r_0 = f_0(0)`, and each further :math:`r_i` is :math:`f_i`, evaluated
    as the recursion evaluates it, of the one before. Sweeps get there fast:
    :math:`0 \le f_i'(x) = k_i f_i(x)^2 \le k_i/(2 + 1.5 k_i)^2 \le 1/12` on
    :math:`[0, 1/2]`, so a change of a ratio shrinks twelvefold, and mostly vanishes in
    rounding, on each step up the ladder. Once few ratios still move, only those whose input
    moved are evaluated again, until none does: each round, the ratios below the lowest one
    left are final, so the rounds end.
    """
    m = k.size
    r, step = np.zeros(m), np.empty(m)
    while True:  # sweeps of every ratio, in place, while many move
        step[0] = 2.0  # r_{-1} = 0
        np.subtract(2.0, r[:-1], out=step[1:])
        np.multiply(k, step, out=step)
        np.add(2.0, step, out=step)
        swept = np.divide(1.0, step)
        moved = np.count_nonzero(swept != r)
        previous, r = r, swept
        if moved <= _SPARSE_BELOW * m:
            break
    below = np.concatenate(([0.0], previous[:-1]))  # below[i]: the r_{i-1} r_i was computed from
    stale = np.flatnonzero(r[:-1] != below[1:]) + 1  # ratios whose input moved since
    while stale.size:
        below[stale] = r[stale - 1]
        new = 1.0 / (2.0 + k[stale] * (2.0 - below[stale]))
        moved_now = new != r[stale]
        r[stale] = new
        stale = stale[moved_now]
        stale = stale[stale < m - 1] + 1
    return r


def ladder_firms(q: NDArray[np.float64]) -> tuple[float, NDArray[np.intp]]:
    """The base of the ladder and the firms above it, by ascending quality (module notes).

    The base is the highest positive quality that two or more firms hold (0 if none): a tied
    group priced at 0. The firms of higher quality, all distinct, play the distinct-quality
    game above it; every other firm is priced out or in the tied group.

    References
    ----------
    Werner (2024), ch. 3, §3.2, Lemma 23 (two firms of equal quality price at 0).
    """
    ranked = np.argsort(q)
    ascending = q[ranked]
    repeated = ascending[1:][(ascending[1:] == ascending[:-1]) & (ascending[1:] > 0)]
    base = float(repeated[-1]) if repeated.size else 0.0
    return base, ranked[np.searchsorted(ascending, base, side="right") :]


def oligopoly_equilibrium(qualities: ArrayLike) -> OligopolyEquilibrium:
    """Bertrand equilibrium of n >= 1 firms with any qualities in [0, 1].

    Parameters
    ----------
    qualities
        One quality in [0, 1] per firm, in any order; ties and zeros allowed.

    Returns
    -------
    OligopolyEquilibrium
        Prices, demands and revenues (all >= 0) in the order given, which firms are priced
        out, and the consumer surplus.

    Notes
    -----
    See the module docstring for the derivation: tied firms price at 0, firms below the
    highest tie and firms of quality 0 sell nothing, and the rest follow the bottom-up
    recursion (O(n) after sorting).

    References
    ----------
    Werner (2024), *Collaborative Learning: Aligning Goals and Outcomes*, ch. 3, §3.2,
    Definitions 2-3 and Lemmas 21-23 (the two-firm case), pp. 59-61.

    Examples
    --------
    >>> eq = oligopoly_equilibrium([0.2, 0.5, 0.5, 0.9])
    >>> eq.price.round(4).tolist(), eq.priced_out.tolist()
    ([0.0, 0.0, 0.0, 0.2], [True, False, False, False])
    """
    given = unit_interval("qualities", qualities).reshape(-1)
    if given.size == 0:
        raise ValueError("qualities must name at least one firm, got []")
    # Prices and surplus are degree-1 homogeneous in the qualities, demands degree 0: solve
    # with every quality times 2**SCALE_EXP (exact), which keeps subnormal qualities normal.
    q = given * _SCALE
    base, order = ladder_firms(q)
    tied = base > 0
    price, demand = np.zeros(q.size), np.zeros(q.size)
    theta_first = 1.0  # the lowest type that buys above the base
    surplus = 0.0
    if order.size:
        qs = q[order]
        gaps = np.diff(qs, prepend=base)
        p, r = ladder(gaps)
        share = p / gaps + np.append(p[:-1] / gaps[1:], 0.0)
        theta = p * (1.0 - np.concatenate(([0.0], r[:-1]))) / gaps
        bounds = np.append(theta, 1.0)
        price[order], demand[order] = p, share
        theta_first = float(theta[0])
        surplus = float(np.sum(qs * (bounds[1:] ** 2 - bounds[:-1] ** 2) / 2 - p * share))
    if tied:
        group = q == base
        demand[group] = theta_first / np.count_nonzero(group)
        surplus += base * theta_first**2 / 2
    priced_out = (q == 0) | (q < base)
    price = price / _SCALE
    return OligopolyEquilibrium(
        quality=given,
        price=price,
        demand=demand,
        revenue=price * demand,
        priced_out=priced_out,
        consumer_surplus=surplus / _SCALE,
    )


def buyer_interval(
    q: NDArray[np.float64],
    p: NDArray[np.float64],
    i: int | NDArray[np.intp],
    x: NDArray[np.float64],
    top: float = 1.0,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    r"""The types that buy from firm ``i`` at each of its prices ``x``, the others at ``p``.

    Firm :math:`i` is the best buy for the types :math:`\theta` in ``(low, high)`` (empty
    where ``high <= low``): above its own reservation type :math:`x/q_i` and the types
    indifferent between it and each cheaper lower-quality firm, below ``top`` (the end of
    the types' support) and the types indifferent between it and each higher-quality firm.
    ``weight`` is its share of those types: 0 if a firm of equal quality is cheaper, else 1
    over the number of firms of equal quality and price. A model of quality 0 gets weight 0.
    With an array of ``k`` firms for ``i``, ``x`` holds one row of prices per firm, shape
    ``(k, m)``, and so do the results.

    References
    ----------
    Werner (2024), ch. 3, §3.2, Definition 2 and Lemma 21 (the two-firm case).
    """
    firms = np.asarray(i).reshape(-1)
    rows = x.reshape(firms.size, -1)
    qi = q[firms][:, None]
    gap = (q[:, None] - q[firms])[..., None]  # other firm j, firm i, price: q_j - q_i
    pj = p[:, None, None]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        cross = (pj - rows) / gap  # the type indifferent between i and j
        own = np.where(qi > 0, rows / qi, np.inf)
    lower = np.maximum.reduce(cross, axis=0, initial=0.0, where=gap < 0)
    upper = np.minimum.reduce(cross, axis=0, initial=np.inf, where=gap > 0)
    same = gap == 0
    weight = np.ones(rows.shape) * (qi != 0)
    if np.count_nonzero(same) > firms.size:  # a firm other than i of quality q_i
        same[firms, np.arange(firms.size)] = False
        cheaper = np.logical_or.reduce(same & (pj < rows), axis=0)
        sharing = 1 + np.add.reduce(same & (pj == rows), axis=0)
        weight = np.where(cheaper, 0.0, weight / sharing)
    low, high = np.maximum(own, lower), np.minimum(top, upper)
    if x.ndim == 1:
        return low[0], high[0], weight[0]
    return low, high, weight


def _own_demand(
    q: NDArray[np.float64], p: NDArray[np.float64], i: int, x: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Firm ``i``'s demand at each of its prices ``x``, the other firms at ``p``."""
    low, high, weight = buyer_interval(q, p, i, x)
    return weight * np.clip(high - low, 0.0, None)


def demands(qualities: ArrayLike, prices: ArrayLike) -> NDArray[np.float64]:
    r"""Each firm's demand at arbitrary prices: the mass of types for which it is the best buy.

    Firm :math:`i` serves the types with :math:`\theta q_i - p_i > \max(0, \theta q_j - p_j)`
    for every :math:`j` of another quality; firms of equal quality and equal price split
    those types equally, and a firm of equal quality and a higher price sells nothing.
    Indifferent types have measure zero; a model of quality 0 sells nothing.

    References
    ----------
    Werner (2024), ch. 3, §3.2, Definition 2 and Lemma 21 (the two-firm case).

    Examples
    --------
    Two firms at the prices of Lemma 22, then two equal models at equal and unequal prices:

    >>> demands([0.3, 0.8], [0.3 * 0.5 / 2.9, 0.8 / 2.9]).round(4).tolist()
    [0.2759, 0.5517]
    >>> demands([0.5, 0.5], [0.1, 0.1]).tolist(), demands([0.5, 0.5], [0.1, 0.2]).tolist()
    ([0.4, 0.4], [0.8, 0.0])
    """
    q = unit_interval("qualities", qualities).reshape(-1)
    p = non_negative("prices", prices).reshape(-1)
    if p.size != q.size:
        raise ValueError(f"prices must have one entry per firm ({q.size}), got {p.size}")
    with np.errstate(over="ignore"):  # a price above 2**487 exceeds every quality anyway
        q, p = q * _SCALE, p * _SCALE  # degree 0 in (q, p): see SCALE_EXP
    return np.array([_own_demand(q, p, i, p[i : i + 1])[0] for i in range(q.size)])


def deviation_gains(
    qualities: ArrayLike,
    prices: ArrayLike,
    *,
    grid: int = 2001,
    firms: ArrayLike | None = None,
) -> NDArray[np.float64]:
    """The best revenue gain of each firm from a unilateral change of price, by brute force.

    Each firm tries ``grid`` prices spread over [0, q_i] (no type pays more than q_i), every
    other firm's price, and 1e-9 below and above each (undercutting); the gain is the best
    revenue found minus the revenue at ``prices``: 0 at an equilibrium, up to the grid's
    resolution. ``firms`` restricts the search to some firms (the others get NaN).

    References
    ----------
    Werner (2024), ch. 3, §3.2, Definition 3 (a Bertrand equilibrium: no firm gains by
    changing its price alone).

    Examples
    --------
    >>> eq = oligopoly_equilibrium([0.3, 0.8])
    >>> deviation_gains([0.3, 0.8], eq.price, grid=201).round(6).tolist()
    [0.0, 0.0]
    >>> deviation_gains([0.3, 0.8], [0.05, 0.5], grid=201).round(4).tolist()
    [0.0102, 0.1012]
    """
    q = unit_interval("qualities", qualities).reshape(-1)
    p = non_negative("prices", prices).reshape(-1)
    if p.size != q.size:
        raise ValueError(f"prices must have one entry per firm ({q.size}), got {p.size}")
    which = range(q.size) if firms is None else [int(i) for i in np.ravel(firms)]
    if any(not 0 <= i < q.size for i in which):
        raise ValueError(f"firms must be indices in [0, {q.size}), got {list(which)}")
    gains = np.full(q.size, np.nan)
    for i in which:
        tries = np.concatenate(
            (np.linspace(0.0, q[i], grid), p, np.clip(p - 1e-9, 0.0, None), p + 1e-9, p[i : i + 1])
        )
        revenue = tries * _own_demand(q, p, i, tries)
        gains[i] = float(revenue.max() - revenue[-1])
    return gains

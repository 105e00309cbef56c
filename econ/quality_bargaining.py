r"""Nash bargaining over the qualities of n competing firms, in any market of qualities.

The Nash bargaining program of Werner (2024), ch. 3, §3.4, for two firms, extended to
:math:`n` firms: from the disagreement qualities :math:`q^0` the firms agree on the
qualities

.. math::

    q^* \in \arg\max_{q \in [l, h]} \prod_{i=1}^n \big(R_i(q) - R_i(q^0)\big)
    \quad \text{s.t.} \quad R_i(q) \ge R_i(q^0) \;\; (i = 1, \dots, n),

with the box :math:`[l, h]` by default :math:`[q^0_i, Q]` for every firm: models never
degrade (§3.3, assumption 4), as :func:`econ.bargaining.duopoly_nash_solution` with
``allow_lower=False``. The rationality constraints matter: the product is also positive
where an even number of factors is negative (``thesis.ch3.nash.unconstrained``).

For two firms in the uniform market this is the program of
:func:`econ.bargaining.duopoly_nash_solution` with ``allow_lower=False``, whose feasible set
also keeps the roles, :math:`q_l \le q_h`: the box holds the points where the low firm
overtakes, but none is better. Swapping the qualities back at such a point (the high
firm takes the larger one) keeps both in the box (each at least :math:`q_{h,0}`), and with
:math:`U_{h,0} \ge U_{l,0}` and the top revenue :math:`U_h \ge U_l`, the product rises by
:math:`(U_{h,0} - U_{l,0})(U_h - U_l) \ge 0`; a rational point stays rational (the
registry checks the agreement, ``oligopoly.bargaining.duopoly``).

The market is a parameter: a callable ``revenues(q)`` mapping the qualities ``(n,)`` to the
revenues ``(n,)`` (and ``(m, n)`` to ``(m, n)``); by default :func:`uniform_revenues`, the
Bertrand market of :mod:`econ.oligopoly` with types uniform on [0, 1]. The statements about
the solution are registered in :mod:`econ.quality_bargaining_propositions` (ids
``oligopoly.bargaining.*``, kind ``derived``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import minimize

from econ.oligopoly import oligopoly_equilibrium
from econ.outputs import plain
from econ.validation import in_interval, unit_interval

__all__ = ["QualityBargain", "Revenues", "quality_bargaining", "uniform_revenues"]


#: A market: revenues ``(n,)`` of qualities ``(n,)``, row by row for ``(m, n)``.
Revenues = Callable[[NDArray[np.float64]], NDArray[np.float64]]


def uniform_revenues(qualities: ArrayLike) -> NDArray[np.float64]:
    """Equilibrium revenues of the n-firm Bertrand market with uniform types, row by row.

    ``(n,)`` qualities give ``(n,)`` revenues and ``(m, n)`` give ``(m, n)``, each row one
    market of :func:`econ.oligopoly.oligopoly_equilibrium`.

    References
    ----------
    Werner (2024), ch. 3, §3.2, Definitions 2-3, extended to n firms (:mod:`econ.oligopoly`).

    Examples
    --------
    >>> uniform_revenues([0.3, 0.8]).round(6).tolist()
    [0.014269, 0.1522]
    """
    q = np.asarray(qualities, dtype=np.float64)
    if q.ndim == 1:
        return oligopoly_equilibrium(q).revenue
    return np.array([oligopoly_equilibrium(row).revenue for row in q]).reshape(q.shape)


@dataclass(frozen=True, slots=True)
class QualityBargain:
    r"""The Nash bargaining solution over the qualities of n firms.

    Attributes
    ----------
    quality
        The maximiser :math:`q^*`, one quality per firm in the order given.
    revenue, disagreement
        :math:`R(q^*)` and :math:`R(q^0)`.
    nash_product
        :math:`\prod_i (R_i(q^*) - R_i(q^0))`, 0 where no point of the box gains every
        firm something.
    low, high
        The box of qualities bargained over.
    at_low, at_high
        Which firms' qualities sit at their box bounds (within 1e-9).

    References
    ----------
    Werner (2024), ch. 3, §3.4, the Nash bargaining program, for n firms.
    """

    quality: NDArray[np.float64]
    revenue: NDArray[np.float64]
    disagreement: NDArray[np.float64]
    nash_product: float
    low: NDArray[np.float64]
    high: NDArray[np.float64]
    at_low: NDArray[np.bool_]
    at_high: NDArray[np.bool_]

    @property
    def gains(self) -> NDArray[np.float64]:
        """Each firm's revenue gain over the disagreement point (>= 0)."""
        return self.revenue - self.disagreement

    @property
    def interior(self) -> bool:
        """Whether no firm's quality sits at a bound of the box."""
        return not bool(np.any(self.at_low | self.at_high))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: per-firm lists and the product."""
        return plain(
            {
                "quality": self.quality,
                "revenue": self.revenue,
                "disagreement": self.disagreement,
                "gains": self.gains,
                "nash_product": self.nash_product,
                "low": self.low,
                "high": self.high,
                "at_low": self.at_low,
                "at_high": self.at_high,
                "interior": self.interior,
            }
        )


def _box(
    start: NDArray[np.float64], q_max: float, bounds: Sequence[tuple[float, float]] | None
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    if bounds is None:
        q = float(in_interval("q_max", q_max, 0.0, 1.0, low_open=True))
        if np.any(start > q):
            raise ValueError(f"every start quality must be at most q_max={q}, got {start.tolist()}")
        return start.copy(), np.full(start.size, q)
    if len(bounds) != start.size:
        raise ValueError(f"bounds must give one (low, high) per firm ({start.size})")
    low = unit_interval("bounds", [lo for lo, _ in bounds]).reshape(-1)
    high = unit_interval("bounds", [hi for _, hi in bounds]).reshape(-1)
    if np.any(high < low):
        raise ValueError(f"bounds must have low <= high, got {list(bounds)}")
    return low, high


def quality_bargaining(
    start: ArrayLike,
    *,
    q_max: float = 1.0,
    bounds: Sequence[tuple[float, float]] | None = None,
    revenues: Revenues = uniform_revenues,
    samples: int = 64,
    local_starts: int = 4,
    seed: int = 0,
) -> QualityBargain:
    r"""Maximise the Nash product of the firms' revenue gains over a box of qualities.

    Parameters
    ----------
    start
        The disagreement qualities :math:`q^0`, one per firm (1 to 12 firms).
    q_max
        :math:`Q`, the best reachable quality: the box is :math:`[q^0_i, Q]` per firm.
    bounds
        Another box, ``[(low, high), ...]`` per firm (the disagreement stays ``start``).
    revenues
        The market (module docstring); :func:`uniform_revenues` by default.
    samples, local_starts, seed
        Seeds of the search: the box's corners (up to 2**8 of them), ``samples`` seeded
        uniform points and four points on the way to the start scaled up into the box (the
        ray :math:`t q^0`, where every revenue grows in a market homogeneous of degree 1, as
        the uniform one is) are scored, and SLSQP starts from the ``local_starts`` best.
        Where none of them gains every firm something, further seeded uniform points are
        drawn, doubling the count up to 4096 points in all (a tie at the start leaves a thin
        rational set: its tied firms earn 0 and must end apart, below the top).

    Returns
    -------
    QualityBargain
        The maximiser, revenues, gains, product and which bounds bind.

    Notes
    -----
    The program maximises :math:`\sum_i \log(R_i(q) - R_i(q^0))`, which has the same
    maximisers as the product where every gain is positive, with SLSQP under the box and the
    rationality constraints :math:`R_i(q) \ge R_i(q^0)`; the best local result is polished by a
    second SLSQP run from it, and a candidate is kept only if every gain is
    :math:`\ge 0` (a positive product with two negative factors is never taken). Where no
    point scored gains every firm something, the start itself is returned with product 0.

    The solution need not be unique. Firms with the same disagreement quality and the same
    box are interchangeable: swapping their qualities gives the same product, and the
    solver returns one of those solutions. A tie of qualities is never the solution where
    a tied firm has something to lose: in the uniform market tied firms price at 0
    (Bertrand) and earn nothing, and their gain would be :math:`-R_i(q^0) < 0`.

    References
    ----------
    Werner (2024), ch. 3, §3.4, the Nash bargaining program (two firms), and
    ``thesis.ch3.nash.unconstrained`` (docs/errata.md); Nash (1950), the bargaining problem.

    Examples
    --------
    >>> deal = quality_bargaining([0.2, 0.6])  # the duopoly's (q_l*, Q) = (0.396832, 1)
    >>> deal.quality.round(6).tolist(), bool(deal.at_high[1])
    ([0.396832, 1.0], True)
    """
    q0 = unit_interval("start", start).reshape(-1)
    n = q0.size
    if not 1 <= n <= 12:
        raise ValueError(f"start must name 1 to 12 firms, got {n}")
    low, high = _box(q0, q_max, bounds)
    d = np.asarray(revenues(q0), dtype=np.float64)
    rng = np.random.default_rng(seed)
    corners = np.array(np.meshgrid(*[[0.0, 1.0]] * min(n, 8), indexing="ij")).reshape(min(n, 8), -1)
    corners = np.vstack([corners, np.ones((n - min(n, 8), corners.shape[1]))]).T
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # q0 subnormal: inf
        stretch = np.min(np.where(q0 > 0, high / q0, np.inf))
    ray = np.clip(q0 * (stretch if np.isfinite(stretch) else 1.0), low, high)
    along = low + np.linspace(0.25, 1.0, 4)[:, None] * (ray - low)
    points = np.vstack([low + np.vstack([corners, rng.random((samples, n))]) * (high - low), along])
    gains = np.asarray(revenues(points), dtype=np.float64) - d
    positive = np.all(gains > 0, axis=1)
    while not positive.any() and points.shape[0] < 4096:  # a thin rational set: sample more
        more = low + rng.random((points.shape[0], n)) * (high - low)
        points = np.vstack([points, more])
        gains = np.vstack([gains, np.asarray(revenues(more), dtype=np.float64) - d])
        positive = np.all(gains > 0, axis=1)
    score = np.where(positive, np.sum(np.log(np.where(gains > 0, gains, 1.0)), axis=1), -np.inf)

    def objective(x: NDArray[np.float64]) -> float:
        g = np.asarray(revenues(x), dtype=np.float64) - d
        return -float(np.sum(np.log(np.maximum(g, 1e-300))))

    def local(x0: NDArray[np.float64]) -> NDArray[np.float64]:
        res = minimize(
            objective,
            x0,
            method="SLSQP",
            bounds=list(zip(low, high, strict=True)),
            constraints=[{"type": "ineq", "fun": lambda x: np.asarray(revenues(x)) - d}],
            options={"ftol": 1e-13, "maxiter": 300},
        )
        return np.asarray(np.clip(res.x, low, high), dtype=np.float64)

    best, best_value = q0.copy(), np.inf
    for i in np.argsort(-score)[:local_starts]:
        if not np.isfinite(score[i]):
            break
        for x in (points[i], local(points[i])):
            if np.all(np.asarray(revenues(x)) - d >= 0) and objective(x) < best_value:
                best, best_value = x, objective(x)
    if np.isfinite(best_value):
        polished = local(best)
        if np.all(np.asarray(revenues(polished)) - d >= 0) and objective(polished) < best_value:
            best = polished
    revenue = np.asarray(revenues(best), dtype=np.float64)
    product = float(np.prod(revenue - d)) if np.isfinite(best_value) else 0.0
    return QualityBargain(
        quality=best,
        revenue=revenue,
        disagreement=d,
        nash_product=max(product, 0.0),
        low=low,
        high=high,
        at_low=np.abs(best - low) <= 1e-9,
        at_high=np.abs(best - high) <= 1e-9,
    )

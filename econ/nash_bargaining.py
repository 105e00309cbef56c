r"""The Nash bargaining solution of a general two-player problem over a box of parameters.

The Nash bargaining solution (Nash 1950; Werner 2024, ch. 3, section 3.4) maximises the
Nash product over the *individually rational* part of the feasible set,

.. math::

    \max_x \; (u_1(x) - d_1)(u_2(x) - d_2) \quad \text{s.t.} \quad u_1(x) \ge d_1,\; u_2(x) \ge d_2 .

The restriction matters: the product is also positive where *both* factors are negative, and
an unrestricted maximisation can pick such points (``thesis.ch3.nash.unconstrained``). The
duopoly's solution in closed form is :func:`econ.bargaining.duopoly_nash_solution`;
:func:`market_nash_solution` bargains over the qualities of n firms of the market of
:mod:`econ.oligopoly` under any consumer population (:mod:`econ.population`),

.. math::

    \max_{q} \prod_{i=1}^n \big(R_i(q) - R_i(q^0)\big) \quad \text{s.t.} \quad
    q_i \in [q_i^0, Q], \; R_i(q) \ge R_i(q^0),

its statements registered as ``market.nash.*`` (kind ``derived``) in
:mod:`econ.nash_bargaining_propositions`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize

from econ.oligopoly import oligopoly_equilibrium
from econ.outputs import plain
from econ.population import Population, parse_population, population_equilibrium
from econ.validation import in_interval, positive_int, unit_interval


@dataclass(frozen=True, slots=True)
class BargainingSolution:
    """Nash bargaining solution of a parametrised two-player problem.

    References
    ----------
    Nash (1950), the bargaining problem; as used in Werner (2024), ch. 3, §3.4 (Nash Bargaining).
    """

    x: NDArray[np.float64]
    utilities: tuple[float, float]
    nash_product: float
    disagreement: tuple[float, float]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the solution ``x``, the utilities, the Nash product, the disagreement."""
        return plain(
            {
                "x": self.x,
                "utilities": self.utilities,
                "nash_product": self.nash_product,
                "disagreement": self.disagreement,
            }
        )


def nash_bargaining(
    u1: Callable[[NDArray[np.float64]], float],
    u2: Callable[[NDArray[np.float64]], float],
    bounds: Sequence[tuple[float, float]],
    disagreement: tuple[float, float],
    *,
    grid: int = 201,
) -> BargainingSolution:
    r"""Maximise :math:`(u_1(x) - d_1)(u_2(x) - d_2)` over the individually rational part of a box.

    Parameters
    ----------
    u1, u2
        Utilities of the two players as functions of the parameter vector ``x``.
    bounds
        ``[(low, high), ...]``: the feasible set is this box (1 to 3 dimensions).
    disagreement
        :math:`(d_1, d_2)`, what each player gets without agreement.
    grid
        Points per dimension of the search grid that seeds the local refinement.

    Notes
    -----
    A grid over the box finds the best individually rational point (``u_i >= d_i``), and
    SLSQP refines it with the two rationality constraints. Without a rational grid point other
    than ones giving a zero product, the best grid point is returned as is.

    References
    ----------
    Nash (1950), the bargaining problem; as used in Werner (2024), ch. 3, §3.4 (Nash Bargaining).
    """
    lows = np.array([lo for lo, _ in bounds], dtype=np.float64)
    highs = np.array([hi for _, hi in bounds], dtype=np.float64)
    if lows.size == 0 or lows.size > 3:
        raise ValueError(f"bounds must give 1 to 3 dimensions, got {lows.size}")
    if np.any(highs < lows):
        raise ValueError(f"bounds must have low <= high, got {list(bounds)}")
    grid = positive_int("grid", grid)
    d1, d2 = (float(v) for v in disagreement)
    axes = [np.linspace(lo, hi, grid) for lo, hi in zip(lows, highs, strict=True)]
    points = np.stack([m.ravel() for m in np.meshgrid(*axes, indexing="ij")], axis=-1)
    g1 = np.array([u1(p) for p in points]) - d1
    g2 = np.array([u2(p) for p in points]) - d2
    rational = (g1 >= 0) & (g2 >= 0)
    if not rational.any():
        raise ValueError("no point of the feasible set is individually rational for both players")
    start = points[np.argmax(np.where(rational, g1 * g2, -np.inf))]
    res = minimize(
        lambda x: -(u1(x) - d1) * (u2(x) - d2),
        start,
        method="SLSQP",
        bounds=list(zip(lows, highs, strict=True)),
        constraints=[
            {"type": "ineq", "fun": lambda x: u1(x) - d1},
            {"type": "ineq", "fun": lambda x: u2(x) - d2},
        ],
        options={
            "ftol": 1e-15,
            "maxiter": 1000,
        },  # Nash products are small: tolerances are absolute
    )
    candidates = [start, np.clip(res.x, lows, highs)]
    scores = [
        (u1(x) - d1) * (u2(x) - d2) if (u1(x) >= d1 - 1e-12 and u2(x) >= d2 - 1e-12) else -np.inf
        for x in candidates
    ]
    x = candidates[int(np.argmax(scores))]
    return BargainingSolution(
        x=x,
        utilities=(float(u1(x)), float(u2(x))),
        nash_product=float(max(scores)),
        disagreement=(d1, d2),
    )


@dataclass(frozen=True, slots=True)
class MarketNashSolution:
    """The bargained qualities of n firms, their revenues, and the disagreement revenues.

    ``nash_product`` is 0 (and ``quality`` the disagreement point) where no quality in the
    box raises every firm's revenue.

    References
    ----------
    Nash (1950); Werner (2024), ch. 3, §3.4 (the duopoly's program), here for n firms.
    """

    quality: NDArray[np.float64]
    revenue: NDArray[np.float64]
    disagreement: NDArray[np.float64]
    nash_product: float
    population: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the qualities, revenues, disagreement revenues and the product."""
        return plain(
            {
                "quality": self.quality,
                "revenue": self.revenue,
                "disagreement": self.disagreement,
                "nash_product": self.nash_product,
                "population": self.population,
            }
        )


#: Grid points per firm of :func:`market_nash_solution`'s first search, by number of firms.
MARKET_GRID = {1: 201, 2: 41, 3: 13, 4: 7}


def market_revenues(qualities: NDArray[np.float64], population: Population) -> NDArray[np.float64]:
    """Each firm's equilibrium revenue: the closed form for uniform types, else the solver's.

    References
    ----------
    Werner (2024), ch. 3, §3.2, Lemma 22 (two firms, uniform types).
    """
    if population.closed_form:
        return oligopoly_equilibrium(qualities).revenue
    return population_equilibrium(qualities, population, grid=17, refine=False).revenue


def market_nash_solution(
    q0: NDArray[np.float64] | Sequence[float],
    q_max: float = 1.0,
    population: Population | str = "uniform",
    *,
    grid: int | None = None,
) -> MarketNashSolution:
    r"""Nash bargaining over the qualities of n firms of the Bertrand market (1 to 4 firms).

    Parameters
    ----------
    q0
        The disagreement qualities, one per firm in [0, 1], in any order.
    q_max
        :math:`Q`, the best quality collaboration can reach (at least every :math:`q_i^0`).
    population
        The consumer types (:class:`econ.population.Population` or a spec string).
    grid
        Points per firm of the first search (:data:`MARKET_GRID` by default).

    Notes
    -----
    A grid over the box :math:`\prod_i [q_i^0, Q]` finds the best individually rational
    point, and a bounded Nelder-Mead search on the logarithm of the Nash product refines it.
    Revenues are :func:`market_revenues`: Lemmas 21-23 and :mod:`econ.oligopoly` for uniform
    types, :func:`econ.population.population_equilibrium` otherwise (then each evaluation
    solves a market: keep ``grid`` small).

    References
    ----------
    Nash (1950); Werner (2024), ch. 3, §3.4 (Nash Bargaining) and Proposition 2 (two firms).

    Examples
    --------
    Two firms: the duopoly's solution (the top firm at Q, Proposition 2).

    >>> deal = market_nash_solution([0.3, 0.6])
    >>> deal.quality.round(4).tolist()
    [0.4423, 1.0]
    """
    pop = parse_population(population) if isinstance(population, str) else population
    start = unit_interval("q0", q0).reshape(-1)
    if not 1 <= start.size <= 4:
        raise ValueError(f"q0 must give 1 to 4 firms, got {start.size}")
    top = float(in_interval("q_max", q_max, float(start.max()), 1.0))
    points = positive_int("grid", MARKET_GRID[start.size] if grid is None else grid)
    disagreement = market_revenues(start, pop)

    def gains(q: NDArray[np.float64]) -> NDArray[np.float64]:
        return market_revenues(np.clip(q, start, top), pop) - disagreement

    def log_product(q: NDArray[np.float64]) -> float:
        g = gains(q)
        return float(np.sum(np.log(g))) if np.all(g > 0) else -np.inf

    axes = [np.linspace(lo, top, points) for lo in start]
    box = np.stack([m.ravel() for m in np.meshgrid(*axes, indexing="ij")], axis=-1)
    scores = np.array([log_product(q) for q in box])
    if not np.isfinite(scores.max()):
        return MarketNashSolution(start, disagreement, disagreement, 0.0, pop.label)
    best = box[int(np.argmax(scores))]
    res = minimize(
        lambda q: -log_product(q),
        best,
        method="Nelder-Mead",
        bounds=list(zip(start, np.full(start.size, top), strict=True)),
        options={"xatol": 1e-10, "fatol": 1e-13, "maxiter": 4000},
    )
    if np.isfinite(res.fun) and -res.fun > log_product(best):
        best = np.clip(res.x, start, top)
    revenue = market_revenues(best, pop)
    return MarketNashSolution(
        best, revenue, disagreement, float(np.prod(revenue - disagreement)), pop.label
    )

r"""The Nash bargaining solution of a general two-player problem over a box of parameters.

The Nash bargaining solution (Nash 1950; Werner 2024, ch. 3, section 3.4) maximises the
Nash product over the *individually rational* part of the feasible set,

.. math::

    \max_x \; (u_1(x) - d_1)(u_2(x) - d_2) \quad \text{s.t.} \quad u_1(x) \ge d_1,\; u_2(x) \ge d_2 .

The restriction matters: the product is also positive where *both* factors are negative, and
an unrestricted maximisation can pick such points (``thesis.ch3.nash.unconstrained``). The
duopoly's solution in closed form is :func:`econ.bargaining.duopoly_nash_solution`, and n firms' bargain over their qualities,
in any market of qualities, :func:`econ.quality_bargaining.quality_bargaining`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize

from econ.outputs import plain
from econ.validation import positive_int


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

r"""Vertical Bertrand competition among n firms.

Werner (2024, ch. 3, section 3.2) states its duopoly results "can be extended to an oligopoly of
more than two firms"; this module is that extension, derived here.

Firms sorted by quality :math:`0 < q_1 < \dots < q_n` set prices simultaneously. With
:math:`q_0 = p_0 = 0`, the type indifferent between firms :math:`i-1` and :math:`i` is
:math:`\theta_i = (p_i - p_{i-1})/(q_i - q_{i-1})`, :math:`\theta_{n+1} = 1`, and firm
:math:`i` sells :math:`D_i = \theta_{i+1} - \theta_i`. With :math:`g_i = 1/(q_i - q_{i-1})`
the first-order conditions are the tridiagonal linear system

.. math::

    g_i p_{i-1} - 2 (g_i + g_{i+1}) p_i + g_{i+1} p_{i+1} = 0 \quad (i < n), \qquad
    g_n p_{n-1} - 2 g_n p_n = -1,

which for n = 2 is Lemma 22 (``thesis.ch3.oligopoly.n2`` checks it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from econ.validation import unit_interval


@dataclass(frozen=True, slots=True)
class OligopolyEquilibrium:
    """Prices, demands and revenues of each firm, in the order the qualities were given."""

    quality: NDArray[np.float64]
    price: NDArray[np.float64]
    demand: NDArray[np.float64]
    revenue: NDArray[np.float64]
    consumer_surplus: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "quality": self.quality.tolist(),
            "price": self.price.tolist(),
            "demand": self.demand.tolist(),
            "revenue": self.revenue.tolist(),
            "consumer_surplus": self.consumer_surplus,
        }


def oligopoly_equilibrium(qualities: ArrayLike) -> OligopolyEquilibrium:
    """Bertrand equilibrium of n >= 1 firms with distinct positive qualities.

    Parameters
    ----------
    qualities
        One quality in (0, 1] per firm, in any order; they must be distinct (tied firms
        undercut each other to a zero price, a different game).
    """
    q = unit_interval("qualities", qualities).reshape(-1)
    if q.size == 0:
        raise ValueError("qualities must name at least one firm, got []")
    if np.any(q <= 0):
        raise ValueError(f"qualities must be > 0, got {q[q <= 0].tolist()}")
    order = np.argsort(q, kind="stable")
    qs = q[order]
    if np.any(np.diff(qs) == 0):
        raise ValueError(
            f"qualities must be distinct, got ties at {qs[:-1][np.diff(qs) == 0].tolist()}"
        )
    n = qs.size
    g = 1.0 / np.diff(qs, prepend=0.0)  # g_i = 1/(q_i - q_{i-1})
    g_next = np.append(g[1:], 0.0)
    a = np.zeros((n, n))
    idx = np.arange(n)
    a[idx, idx] = -2.0 * (g + g_next)
    a[idx[1:], idx[:-1]] = g[1:]
    a[idx[:-1], idx[1:]] = g[1:]
    rhs = np.zeros(n)
    rhs[-1] = -1.0
    price = np.linalg.solve(a, rhs)
    cut = g * np.diff(price, prepend=0.0)  # theta_1 .. theta_n
    bounds = np.append(cut, 1.0)
    demand = np.diff(bounds)
    if np.any(demand <= 0):
        raise ValueError(f"the interior equilibrium prices firms out (demands {demand.tolist()})")
    surplus = float(np.sum(qs * (bounds[1:] ** 2 - bounds[:-1] ** 2) / 2 - price * demand))
    inverse = np.empty_like(order)
    inverse[order] = idx
    return OligopolyEquilibrium(
        quality=q,
        price=price[inverse].astype(np.float64),
        demand=demand[inverse].astype(np.float64),
        revenue=(price * demand)[inverse].astype(np.float64),
        consumer_surplus=surplus,
    )

"""The market of a run, round by round (Werner 2024, ch. 3, §3.2, Lemmas 21-22).

:func:`market_path` prices every round as :func:`econ.market.market_round` does (the better
model sells as the high firm), the firms named by their starting quality;
:func:`fixed_label_revenues` is (3.4) with fixed labels, as the thesis plots its figures.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from econ import duopoly
from econ.market import market_round
from econ.outputs import frame, plain
from econ.validation import unit_interval


@dataclass(frozen=True, slots=True)
class MarketPath:
    """The market of every round of a run, the firms named by their starting quality.

    ``U_l`` is the revenue of the firm that started low, ``U_h`` that of the firm that
    started high, each priced by its role in that round (:func:`econ.market.market_round`:
    the better model sells as the high firm of Lemma 22). ``welfare`` is
    ``consumer_surplus + U_l + U_h``; ``swapped`` marks the rounds where the low firm's model
    is the better one.

    References
    ----------
    Werner (2024), ch. 3, §3.2 (pp. 59-61), Definitions 2-3 and Lemmas 21-22, each round.
    """

    U_l: NDArray[np.float64]
    U_h: NDArray[np.float64]
    consumer_surplus: NDArray[np.float64]
    welfare: NDArray[np.float64]
    swapped: NDArray[np.bool_]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: one list entry per round for each attribute."""
        return plain({f: getattr(self, f) for f in self.__slots__})

    def to_frame(self) -> Any:
        """A pandas DataFrame, one row per round (needs pandas)."""
        return frame({f: getattr(self, f) for f in self.__slots__}, "MarketPath")


def market_path(q_l: ArrayLike, q_h: ArrayLike) -> MarketPath:
    """:func:`econ.market.market_round` for each round ``(q_l[t], q_h[t])`` of a run.

    References
    ----------
    Werner (2024), ch. 3, §3.2 (pp. 59-61), Lemmas 21-22, eq. (3.4), each round.
    """
    ql, qh = np.broadcast_arrays(
        unit_interval("q_l", q_l).reshape(-1), unit_interval("q_h", q_h).reshape(-1)
    )
    rounds = [market_round(np.array([a, b])) for a, b in zip(ql, qh, strict=True)]
    revenue = np.array([m.revenue for m in rounds]).reshape(-1, 2)
    return MarketPath(
        U_l=revenue[:, 0],
        U_h=revenue[:, 1],
        consumer_surplus=np.array([m.consumer_surplus for m in rounds]),
        welfare=np.array([m.welfare for m in rounds]),
        swapped=ql > qh,
    )


def fixed_label_revenues(
    q_l: ArrayLike, q_h: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(3.4) evaluated with fixed firm labels, as the thesis plots Figs. 3.1-3.3.

    Equal to :class:`MarketPath`'s revenues while the low firm's quality is at most the high
    firm's; after it overtakes, the high firm's number is negative (Fig. 3.2a), which no
    price and demand of Definition 3 can give. Only the run figures use these numbers.

    References
    ----------
    Werner (2024), ch. 3, §3.2, Lemma 22, eq. (3.4); Figures 3.1-3.3.

    Examples
    --------
    >>> u_l, u_h = fixed_label_revenues(0.3, 0.6)
    >>> round(float(u_l), 6), round(float(u_h), 6)
    (0.012245, 0.097959)
    """
    return duopoly.revenues(q_l, q_h, literal=True)

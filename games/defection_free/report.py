"""A run in the economics' terms: market, ratio, Nash product, audit and Nash gap.

:func:`report` turns a :class:`~games.defection_free.play.Play` into a :class:`PlayReport`
(the JSON of ``collabecon defection-free``); revenues follow :data:`REVENUE_CONVENTION`
(Werner 2024, ch. 3, §§3.2-3.5).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from econ import bargaining
from econ.outputs import frame, plain
from games.defection_free.audit import RevenueAudit, revenue_audit, revenue_slack
from games.defection_free.market import market_path
from games.defection_free.play import Play


def _individually_rational(
    u_l: NDArray[np.float64],
    u_h: NDArray[np.float64],
    allowed: NDArray[np.float64] | float = 0.0,
) -> NDArray[np.bool_]:
    """Whether neither firm is worse off than at round 0, up to ``allowed``.

    These are the constraints of the Nash bargaining problem of §3.4, p. 64 ff.
    """
    return (u_l - u_l[0] >= -allowed) & (u_h - u_h[0] >= -allowed)


#: What ``U_l`` and ``U_h`` mean in every report, table and file of a run.
REVENUE_CONVENTION = (
    "market: each round the better model sells as the high firm of Lemma 22 (eq. 3.4); "
    "U_l is the revenue of the firm that started low, U_h of the firm that started high; "
    "revenues >= 0 and welfare = consumer surplus + U_l + U_h"
)


#: The market's columns of a report row (:func:`report`), in the order the tables show them:
#: qualities, revenues, consumer surplus and welfare.
MARKET_COLUMNS = ("q_l", "q_h", "U_l", "U_h", "consumer_surplus", "welfare")


@dataclass(frozen=True, slots=True)
class PlayReport:
    r"""A scheme's run in the economics' terms (the JSON of ``collabecon defection-free``).

    Attributes
    ----------
    rows
        Per round: ``t, q_l, q_h, U_l, U_h, consumer_surplus, welfare, rho, swapped,
        nash_product, individually_rational``. Revenues, surplus and welfare are the
        market's (:data:`REVENUE_CONVENTION`); ``swapped`` marks rounds where the low firm's
        model is the better one. ``nash_product`` is
        :math:`(U_l - U_{l,0})(U_h - U_{h,0})` of §3.4 with those revenues, and
        ``individually_rational`` whether neither factor is negative: a positive product
        of two losses is not a gain.
    audit
        :func:`revenue_audit` of the run.
    rho_star
        :math:`\rho^*` of the Nash bargaining solution from the start, with ``q_max``.
    nash_star
        :math:`N(q_l^*, q_h^*)` with :math:`q_h^* = Q` = ``q_max`` (Proposition 2): the
        reference of Fig. 3.3's last panel.
    nash_max
        :math:`\max_{q_l} N(q_l, \bar q)` over the individually rational set, with
        :math:`\bar q` the best quality either firm reached (Proposition 2 with
        :math:`Q := \bar q`).
    final_nash_gap
        ``nash_max`` minus the final Nash product counted as progress: the product where the
        final round is individually rational, else the product capped at 0 (the
        disagreement point's value), so a product of two losses is never progress.

    References
    ----------
    Werner (2024), ch. 3, §3.2, eq. (3.4); §3.4, the Nash bargaining program and Proposition 2;
    §3.5, Figure 3.3.
    """

    scheme: str
    rows: tuple[dict[str, Any], ...]
    audit: RevenueAudit
    rho_star: float
    q_max: float
    nash_star: float
    nash_max: float
    final_nash_gap: float

    @property
    def final_individually_rational(self) -> bool:
        """Whether the last round is individually rational (no firm below its round-0 revenue)."""
        return bool(self.rows[-1]["individually_rational"])

    def to_dict(self) -> dict[str, Any]:
        """The run, JSON-ready.

        Scheme, rounds, the audit, rho*, the Nash references and the gap.
        """
        return plain(
            {
                "scheme": self.scheme,
                "revenue_convention": REVENUE_CONVENTION,
                "rounds": list(self.rows),
                "revenue_never_decreased": self.audit.never_decreased,
                "min_revenue_change": {
                    "low": self.audit.min_change_low,
                    "high": self.audit.min_change_high,
                },
                "rho_star": self.rho_star,
                "nash_star": self.nash_star,
                "nash_max": self.nash_max,
                "final_individually_rational": self.final_individually_rational,
                "final_nash_gap": self.final_nash_gap,
            }
        )

    def to_frame(self) -> Any:
        """A pandas DataFrame of :attr:`rows`, one row per round indexed by ``t`` (needs pandas)."""
        return frame(list(self.rows), "PlayReport").set_index("t")


def report(
    run: Play, *, q_max: float = 1.0, tolerance: float = 0.0, atol: float = 1e-12
) -> PlayReport:
    """Market, ratio, Nash product, audit and Nash gap of a :class:`Play`.

    ``tolerance`` and ``atol`` are :func:`revenue_audit`'s; a firm's revenue counts as
    below its start (outside the individually rational set) when it is lower by more than
    the same slack.

    References
    ----------
    Werner (2024), ch. 3, §3.2, eq. (3.4); §3.4, the Nash product :math:`N`, Propositions 2-3; §3.5,
    Figure 3.3.
    """
    ql, qh = np.asarray(run.q_l, float), np.asarray(run.q_h, float)
    market = market_path(ql, qh)
    ul, uh = market.U_l, market.U_h
    nash = (ul - ul[0]) * (uh - uh[0])
    slack = revenue_slack(ql, qh, tolerance)
    rational = _individually_rational(ul, uh, slack[0] + slack + atol)
    rho = np.divide(ql, qh, out=np.zeros_like(ql), where=qh > 0)
    rows = tuple(
        {
            "t": t,
            "q_l": float(ql[t]),
            "q_h": float(qh[t]),
            "U_l": float(ul[t]),
            "U_h": float(uh[t]),
            "consumer_surplus": float(market.consumer_surplus[t]),
            "welfare": float(market.welfare[t]),
            "rho": float(rho[t]),
            "swapped": bool(market.swapped[t]),
            "nash_product": float(nash[t]),
            "individually_rational": bool(rational[t]),
        }
        for t in range(ql.size)
    )
    start = min(ql[0], qh[0]), max(ql[0], qh[0])
    q = max(start[1], float(q_max))
    reference = bargaining.duopoly_nash_solution(*start, q, allow_lower=True)
    best = max(start[1], float(ql[-1]), float(qh[-1]))
    # models of quality 0 sell nothing (econ.oligopoly): every Nash product is then 0
    nash_max = (
        float(bargaining.duopoly_nash_solution(*start, best, allow_lower=True).nash_product)
        if best > 0
        else 0.0
    )
    progress = float(nash[-1]) if rational[-1] else min(float(nash[-1]), 0.0)
    return PlayReport(
        scheme=run.scheme,
        rows=rows,
        audit=revenue_audit(ql, qh, tolerance=tolerance, atol=atol),
        rho_star=float(reference.rho_star),
        q_max=q,
        nash_star=float(reference.nash_product),
        nash_max=nash_max,
        final_nash_gap=nash_max - progress,
    )

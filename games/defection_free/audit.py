"""Did either firm's revenue fall? The audit of Proposition 3 on a run (Werner 2024, ch. 3, §3.4).

A fall counts beyond the slack that a measurement error of the qualities can cause
(:func:`revenue_slack`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from econ.outputs import frame, plain
from econ.validation import non_negative
from games.defection_free.market import market_path


def revenue_slack(q_l: ArrayLike, q_h: ArrayLike, tolerance: float) -> NDArray[np.float64]:
    r"""Largest change of either revenue when each quality is off by at most ``tolerance``.

    The four corners :math:`(q_l \pm \epsilon, q_h \pm \epsilon)` (clipped to [0, 1]) of the
    market's revenues (:func:`market_path`); 0 when ``tolerance`` is 0.

    References
    ----------
    Werner (2024), ch. 3, §3.2, Lemma 22, eq. (3.4) (the revenues it perturbs).

    Examples
    --------
    >>> round(float(revenue_slack(0.3, 0.6, 0.01)), 6)
    0.005188
    """
    eps = float(non_negative("tolerance", tolerance))
    ql, qh = np.broadcast_arrays(np.asarray(q_l, float), np.asarray(q_h, float))
    worst = np.zeros(ql.shape)
    if eps == 0.0:
        return worst
    base = market_path(ql, qh)
    for dl in (-eps, eps):
        for dh in (-eps, eps):
            moved = market_path(np.clip(ql + dl, 0, 1), np.clip(qh + dh, 0, 1))
            change = np.maximum(np.abs(moved.U_l - base.U_l), np.abs(moved.U_h - base.U_h))
            worst = np.maximum(worst, change.reshape(worst.shape))
    return worst


@dataclass(frozen=True, slots=True)
class RevenueAudit:
    """Round-by-round revenue changes and whether any fell beyond the allowed slack.

    References
    ----------
    Werner (2024), ch. 3, §3.4, Proposition 3 (non-decreasing revenues).
    """

    change_low: NDArray[np.float64]
    change_high: NDArray[np.float64]
    slack: NDArray[np.float64]
    never_decreased: bool
    min_change_low: float
    min_change_high: float
    falls: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary: whether a revenue fell, the smallest changes, and when."""
        return plain(
            {
                "never_decreased": self.never_decreased,
                "min_change_low": self.min_change_low,
                "min_change_high": self.min_change_high,
                "rounds_with_a_fall": self.falls,
            }
        )

    def to_frame(self) -> Any:
        """A pandas DataFrame of the revenue changes and their allowed slack (needs pandas).

        One row per round ``t >= 1``: the changes from round ``t - 1`` to ``t``, with the slack
        allowed at ``t``.
        """
        t = np.arange(1, self.change_low.size + 1)
        table = frame(
            {
                "t": t,
                "change_low": self.change_low,
                "change_high": self.change_high,
                "slack": self.slack[1:],
                "fall": np.isin(t, self.falls),
            },
            "RevenueAudit",
        )
        return table.set_index("t")


def revenue_audit(
    q_l: ArrayLike, q_h: ArrayLike, *, tolerance: float = 0.0, atol: float = 1e-12
) -> RevenueAudit:
    r"""Audit whether either firm's revenue fell from one round to the next (Proposition 3).

    A fall counts when :math:`U_t - U_{t-1} < -(s_{t-1} + s_t + \text{atol})`, with
    :math:`s` the :func:`revenue_slack` of the measurement ``tolerance``. Revenues are the
    market's (:func:`market_path`); they equal (3.4) while the low firm's quality is at
    most the high firm's, as in Proposition 3.

    References
    ----------
    Werner (2024), ch. 3, §3.4 (p. 64), Proposition 3; revenues of Lemma 22, eq. (3.4).
    """
    ql, qh = np.asarray(q_l, float), np.asarray(q_h, float)
    if ql.shape != qh.shape or ql.ndim != 1 or ql.size < 2:
        raise ValueError("q_l and q_h must be 1-d sequences of equal length >= 2")
    market = market_path(ql, qh)
    s = revenue_slack(ql, qh, tolerance)
    allowed = s[:-1] + s[1:] + atol
    dl, dh = np.diff(market.U_l), np.diff(market.U_h)
    bad = np.flatnonzero((dl < -allowed) | (dh < -allowed)) + 1
    return RevenueAudit(
        change_low=dl,
        change_high=dh,
        slack=s,
        never_decreased=bad.size == 0,
        min_change_low=float(dl.min()),
        min_change_high=float(dh.min()),
        falls=tuple(int(t) for t in bad),
    )


@dataclass(frozen=True, slots=True)
class AuditComparison:
    """The revenue audit of one run under two measurements of its models.

    ``measured``: the qualities the rule saw (the target set); ``reference``: the same
    models measured apart, on a larger held-out set or as the true accuracies of a
    simulation. ``falls_unseen`` are the rounds where a revenue fell under the reference but
    not under the measurement: the falls the measurement noise hid from the rule.

    References
    ----------
    Werner (2024), ch. 3, §3.4, Proposition 3 (non-decreasing revenues), for exact qualities.
    """

    measured: RevenueAudit
    reference: RevenueAudit
    falls_unseen: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: both audits, the number of rounds with a fall under each, the unseen ones."""
        return plain(
            {
                "measured": self.measured.to_dict(),
                "reference": self.reference.to_dict(),
                "rounds": int(self.measured.change_low.size),
                "falls_measured": len(self.measured.falls),
                "falls_reference": len(self.reference.falls),
                "falls_unseen": self.falls_unseen,
            }
        )


def compare_audits(
    measured: tuple[ArrayLike, ArrayLike],
    reference: tuple[ArrayLike, ArrayLike],
    *,
    tolerance: float = 0.0,
) -> AuditComparison:
    """:func:`revenue_audit` of the ``(q_l, q_h)`` paths ``measured`` and ``reference``, side by side.

    References
    ----------
    Werner (2024), ch. 3, §3.4 (p. 64), Proposition 3.
    """
    seen = revenue_audit(*measured, tolerance=tolerance)
    truth = revenue_audit(*reference)
    if truth.change_low.size != seen.change_low.size:
        raise ValueError(
            f"the two paths must have the same rounds, got {seen.change_low.size + 1} and "
            f"{truth.change_low.size + 1}"
        )
    unseen = tuple(t for t in truth.falls if t not in seen.falls)
    return AuditComparison(seen, truth, unseen)

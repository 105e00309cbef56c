r"""Defection-free collaboration of n firms: raise the qualities towards the Nash bargain.

Algorithm 5 of Werner (2024), ch. 3, §3.4 (p. 64), "Defection-Free Collaborative Learning",
moves two firms towards their Nash bargaining solution so that neither revenue ever falls
(Proposition 3). This module extends its step rule to :math:`n` firms in any market of
qualities (:data:`econ.quality_bargaining.Revenues`), towards the n-firm solution
:math:`q^*` of :func:`econ.quality_bargaining.quality_bargaining`. One round from
:math:`q_t`, with revenues :math:`R(q_t)`:

1. the top firm (highest quality) moves to :math:`\min(b\, q_{\text{top}}, q^*_{\text{top}})`:
   Algorithm 5's paced high firm, growth factor at most the pace :math:`b` (the proof of
   Proposition 5 takes :math:`b = \tilde b`), or as far as no revenue falls below its
   value at the start of the round (in the uniform market the whole way:
   ``oligopoly.defection_free.top_first``);
2. then the other firms move towards their caps
   :math:`c_i = \max(q_i, \min(q^*_i, q^*_i\, q_{\text{top}, t+1} / q^*_{\text{top}}))`:
   their targets, and their places on the ray from 0 to :math:`q^*` at the top firm's new
   quality (for two firms, Algorithm 5's :math:`\min(\rho^* q_{h,t}, q_l^*)`). First
   jointly, :math:`q + s(c - q)` with the largest :math:`s \in [0, 1]` at which no revenue
   is below its value at the start of the round, :math:`R_j \ge R_j(q_t)` for all
   :math:`j`; then one at a time, from the highest quality down, each to the largest
   quality in :math:`[q_i, c_i]` under the same condition. A largest step is the full
   step where that is allowed and otherwise found by bisection, whose lower end is always
   an allowed point.

Why this order: in the uniform market raising the top firm's quality raises every firm's
revenue (checked as ``oligopoly.defection_free.top_first``), so the top firm's step makes
the room that the others' steps use, as the high firm's step does for the low firm in
Algorithm 5 (the cap :math:`B(\rho_{t-1}, b)\, q_{h,t}` of step 8 is the largest low
quality that keeps the high firm's revenue, :func:`econ.quality_caps.cap_high`); a firm's
step lowers the revenue of the firms above it, so the firms share the room in a joint
step first (on the ray the revenues scale with the qualities where the market is
homogeneous of degree 1, as the uniform one is), and what is left goes to the firms nearest
the top first. For two firms the joint and the single step coincide.

No revenue falls in any round, nor at any point within it, in any market: a step of size
0 leaves the current point, which satisfies :math:`R \ge R(q_t)` (it is :math:`q_t` or a point
accepted before), and a step is accepted only where the condition holds, evaluated as it is
then reported (``oligopoly.defection_free.no_revenue_falls`` checks the rounds). Qualities
never fall, and none passes its cap.

For two firms this is Algorithm 5 with the default rule of :mod:`games.defection_free.rules`
(``cap_mode="recommended"``, no gating): the low firm's largest allowed quality is
:math:`B(\rho_{t-1}, b)\, q_{h,t}` (the high firm's revenue binds first, Proposition 3), so
its new quality is :func:`econ.quality_caps.next_low_quality`'s
:math:`\max(q_{l,t-1}, \min(\hat q_{l,t}, \rho^* q_{h,t}, q_l^*))` up to the bisection; with
the high firm moving to :math:`\min(b\, q_{h,t-1}, Q)` and the low firm landing on its cap
(the ``oracle`` inner mode of :func:`games.defection_free.play`), the two paths agree round
by round. Where :math:`q_{l,0}` exceeds the thesis's :math:`q_l^*` the target is
:math:`q_{l,0}` (the reachable solution) and in both rules the low firm stays.

Whether the rounds reach :math:`q^*` is not proved beyond two firms (Proposition 5). With
three or more firms the rule can come to rest short of it: once the top firm is at
:math:`q^*_{\text{top}}` no step makes room, and a firm that had not caught up with its cap
stays behind. ``oligopoly.defection_free.reaches`` states the distance found (both registered
in :mod:`games.defection_free.n_firms_propositions`, kind ``derived``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from econ.outputs import plain
from econ.quality_bargaining import Revenues, quality_bargaining, uniform_revenues
from econ.validation import in_interval, positive_int, unit_interval
from games.defection_free.rules import B_TILDE

__all__ = ["NFirmPath", "n_firm_path", "n_firm_step"]


def n_firm_step(
    qualities: ArrayLike,
    target: ArrayLike,
    *,
    pace: float = B_TILDE,
    revenues: Revenues = uniform_revenues,
    bisections: int = 40,
    guard: bool = True,
) -> NDArray[np.float64]:
    r"""One round of the n-firm defection-free rule (module docstring).

    Parameters
    ----------
    qualities
        :math:`q_t`, one quality per firm; ties are ordered by index.
    target
        :math:`q^*`, the qualities the firms bargained for (each at least :math:`q_{t,i}`
        for the rule to move the firm).
    pace
        :math:`b > 1`, the top firm's largest growth factor in one round.
    revenues
        The market (:data:`econ.quality_bargaining.Revenues`).
    bisections
        Halvings of a step where the full step is not allowed.
    guard
        Keep every revenue at least its value at the round's start; ``False`` moves the
        firms to their caps unchecked (the comparison the registry's perturbation runs).

    Returns
    -------
    numpy.ndarray
        :math:`q_{t+1}`, never below :math:`q_t`.

    References
    ----------
    Werner (2024), ch. 3, §3.4 (p. 64), Algorithm 5, steps 2-11, for n firms; Proposition 3.
    """
    q = unit_interval("qualities", qualities).reshape(-1).copy()
    goal = unit_interval("target", target).reshape(-1)
    if goal.size != q.size:
        raise ValueError(f"target must have one entry per firm ({q.size}), got {goal.size}")
    in_interval("pace", pace, 1.0, low_open=True)
    bisections = positive_int("bisections", bisections)
    floor = np.asarray(revenues(q), dtype=np.float64)
    order = np.argsort(-q, kind="stable")
    top = int(order[0])

    def allowed(trial: NDArray[np.float64]) -> bool:
        return not guard or bool(np.all(revenues(trial) >= floor))

    def largest(move: NDArray[np.float64]) -> float:
        """The largest s in [0, 1] (up to the bisections) with q + s * move allowed."""
        if allowed(q + move):
            return 1.0
        lo, hi = 0.0, 1.0
        for _ in range(bisections):
            mid = (lo + hi) / 2
            if allowed(q + mid * move):
                lo = mid
            else:
                hi = mid
        return lo

    rise = np.zeros(q.size)
    rise[top] = max(0.0, min(pace * q[top], goal[top]) - q[top])
    q = q + largest(rise) * rise
    scale = q[top] / goal[top] if goal[top] > 0 else 1.0
    cap = np.maximum(q, np.minimum(goal, goal * scale))
    cap[top] = q[top]
    q = q + largest(cap - q) * (cap - q)
    for i in order[1:]:
        if cap[i] > q[i]:
            move = np.zeros(q.size)
            move[i] = cap[i] - q[i]
            q = q + largest(move) * move
    return q


@dataclass(frozen=True, slots=True)
class NFirmPath:
    """The rounds of the n-firm rule from a start, and the bargain they head for.

    Attributes
    ----------
    qualities, revenues
        ``(rounds + 1, n)``: the start, then each round.
    target
        :math:`q^*` of :func:`econ.quality_bargaining.quality_bargaining`.
    settled
        Whether the last round moved no quality (the rule is at rest).

    References
    ----------
    Werner (2024), ch. 3, §3.4 (p. 64), Algorithm 5, for n firms.
    """

    qualities: NDArray[np.float64]
    revenues: NDArray[np.float64]
    target: NDArray[np.float64]
    settled: bool

    @property
    def gap(self) -> float:
        """Largest distance of a final quality from its target."""
        return float(np.max(np.abs(self.qualities[-1] - self.target)))

    @property
    def worst_drop(self) -> float:
        """Largest fall of any revenue from one round to the next (<= 0 when none falls)."""
        if self.revenues.shape[0] < 2:
            return 0.0
        return float(np.max(self.revenues[:-1] - self.revenues[1:]))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the final qualities and revenues, the target, the gap, the rounds."""
        return plain(
            {
                "rounds": self.qualities.shape[0] - 1,
                "start": self.qualities[0],
                "final": self.qualities[-1],
                "final_revenue": self.revenues[-1],
                "start_revenue": self.revenues[0],
                "target": self.target,
                "gap": self.gap,
                "worst_drop": self.worst_drop,
                "settled": self.settled,
            }
        )


def n_firm_path(
    start: ArrayLike,
    *,
    q_max: float = 1.0,
    pace: float = B_TILDE,
    revenues: Revenues = uniform_revenues,
    max_rounds: int = 2000,
    target: ArrayLike | None = None,
    guard: bool = True,
) -> NFirmPath:
    r"""Run :func:`n_firm_step` from ``start`` until no quality moves or ``max_rounds``.

    The target is the Nash bargaining solution over :math:`[q^0_i, Q]`
    (:func:`econ.quality_bargaining.quality_bargaining`) unless given.

    References
    ----------
    Werner (2024), ch. 3, §3.4 (p. 64), Algorithm 5 and Proposition 3, for n firms.

    Examples
    --------
    >>> path = n_firm_path([0.2, 0.6])
    >>> path.qualities[-1].round(6).tolist(), path.worst_drop <= 0
    ([0.396832, 1.0], True)
    """
    q = unit_interval("start", start).reshape(-1)
    max_rounds = positive_int("max_rounds", max_rounds)
    goal = (
        quality_bargaining(q, q_max=q_max, revenues=revenues).quality
        if target is None
        else unit_interval("target", target).reshape(-1)
    )
    rows = [q]
    settled = False
    for _ in range(max_rounds):
        nxt = n_firm_step(rows[-1], goal, pace=pace, revenues=revenues, guard=guard)
        if np.array_equal(nxt, rows[-1]):
            settled = True
            break
        rows.append(nxt)
    qualities = np.array(rows)
    return NFirmPath(
        qualities=qualities,
        revenues=np.asarray(revenues(qualities), dtype=np.float64),
        target=goal,
        settled=settled,
    )

r"""The rules of Werner (2024), ch. 3: what each firm does in a round, from qualities alone.

The schemes of §3.3 (p. 62) and Algorithm 5, "Defection-Free Collaborative Learning" (§3.4,
p. 64): each answers :meth:`Scheme.high_move` (does the high firm step jointly, and at what
pace) and :meth:`Scheme.low_move` (does the low firm train jointly, and up to which cap),
with the pacing and cap rules they share (:func:`paced_step_size`, :func:`raise_to_cap`) and
the configuration that builds them (:class:`DefectionFreeConfig`, :func:`build_scheme`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from econ import bargaining, quality_caps
from econ.outputs import scalar_or_array
from econ.qualities import ModelQualities
from econ.validation import choice, in_interval

SCHEMES = ("defection-free", "complete", "one-sided-low", "one-sided-high")


CAP_MODES = ("recommended", "literal")


GATINGS = ("none", "line7", "text", "code")


SCHEDULES = ("paced", "const")


INNER_MODES = ("gd", "oracle", "while")


#: :math:`\tilde b = \min_{\rho \le 1} b_\rho` with
#: :math:`b_\rho = \max\{b \ge 1 : (4 - 5\rho)\log_{10} b \le B(\rho, b) - \rho\}`, the pace of
#: the high firm defined in the proof of Proposition 5 (Werner 2024, ch. 3, §3.7, Case 2),
#: computed by :func:`econ.quality_caps.b_tilde` (about 1.0297, at :math:`\rho \approx 0.341`).
B_TILDE: float = quality_caps.b_tilde()[0]


FIRM_NAMES = ("low", "high")


@dataclass(frozen=True, slots=True)
class HighMove:
    r"""What the high firm does this round.

    Attributes
    ----------
    joint
        Train on the joint objective (the low firm shares) or on its own data only.
    pace
        Largest growth factor :math:`q_{h,t}/q_{h,t-1}` the step aims at (Proposition 5's
        :math:`\tilde b`), or None for an unpaced step.
    undo_if_worse
        Keep the previous model when the step lowers the measured quality (qualities
        never degrade: assumption 4 of §3.3).
    idle
        Do not train at all this round.

    References
    ----------
    Werner (2024), ch. 3, §3.4 (p. 64), Algorithm 5, steps 2-4 (the high-quality model update);
    pace: proof of Proposition 5, §3.7 (:math:`\tilde b`).
    """

    joint: bool
    pace: float | None = None
    undo_if_worse: bool = False
    idle: bool = False


@dataclass(frozen=True, slots=True)
class LowMove:
    r"""What the low firm does after the high firm moved.

    Attributes
    ----------
    joint
        Train on the joint objective (the high firm shares) or on its own data only.
    cap
        Highest quality the low firm may reach this round; None means uncapped (a free
        round of training). A cap equal to the current quality means "wait".
    hat_q
        Algorithm 5's :math:`\hat q_{l,t} = B(\rho_{t-1}, b) q_{h,t}` where it was
        computed (None otherwise).

    References
    ----------
    Werner (2024), ch. 3, §3.4 (p. 64), Algorithm 5, steps 5-11 (the low-quality model update;
    :math:`\hat q_{l,t}` of step 8).
    """

    joint: bool
    cap: float | None = None
    hat_q: float | None = None


def paced_step_size(pace: float, quality: ArrayLike, grad_norm2: ArrayLike, max_step: float) -> Any:
    r"""The high firm's step size of the proof of Proposition 5 (Werner 2024, ch. 3, §3.7).

    .. math:: \alpha_{h,t} = \min\Big\{\frac{(\tilde b - 1)\, q_{h,t-1}}{\|\nabla f_{h,t-1}\|^2},
              \frac{1}{L}\Big\}

    For a convex, :math:`L`-smooth objective this keeps
    :math:`q_{h,t}/q_{h,t-1} \le \tilde b`; ``pace`` plays :math:`\tilde b` and ``max_step``
    :math:`1/L`. A zero gradient gets ``max_step``. Vectorised over ``quality`` and
    ``grad_norm2``; a Python ``float`` for scalars.

    References
    ----------
    Werner (2024), ch. 3, §3.7 (pp. 70ff), proof of Proposition 5 (the schedule
    :math:`\alpha_{h,t}`).

    Examples
    --------
    >>> round(float(paced_step_size(1.03, 0.5, 2.0, 0.1)), 6)
    0.0075
    >>> float(paced_step_size(1.03, 0.5, 0.0, 0.1))
    0.1
    """
    g2 = np.asarray(grad_norm2, dtype=np.float64)
    moving = g2 > 0
    paced = (pace - 1.0) * np.asarray(quality, dtype=np.float64) / np.where(moving, g2, 1.0)
    step = np.where(moving, np.minimum(paced, max_step), max_step)
    return scalar_or_array(step, quality, grad_norm2)


P = TypeVar("P")


G = TypeVar("G")


def raise_to_cap(
    start: P,
    cap: float,
    inner: str,
    *,
    quality: Callable[[P], float],
    gradient: Callable[[P, int], G],
    moved: Callable[[P, G, float], P],
    step: float,
    max_steps: int,
    max_halvings: int,
    sq_norm: Callable[[G], float] | None = None,
    monotone: bool = True,
    tol: float = 0.0,
    printed_step: float | None = None,
    visit: Callable[[P], None] | None = None,
) -> P:
    r"""The low firm's update of Algorithm 5, lines 9-11 (Werner 2024, ch. 3, §3.4, p. 64).

    ``inner="while"``: the loop as printed, :math:`x \leftarrow x - \alpha_{l,t} g` while
    :math:`q \le` ``cap``, with :math:`\alpha_{l,t}` = ``printed_step`` (default ``step``);
    it ends only once the quality has passed the cap (``thesis.ch3.alg5.while``).

    ``inner="gd"``: a guarded loop (``thesis.ch3.alg5.while.corrected``). Each step starts at
    :math:`\min\{(\text{cap} - q)/\|g\|^2, \text{step}\}`, the step of the proof of
    Proposition 3 (§3.7) with ``step`` = :math:`1/L`, when ``sq_norm`` is given, and otherwise
    at the last size tried (``step`` at first); it is halved, at most ``max_halvings``
    times, while the result would pass the cap (or, with ``monotone``, lower the quality).
    Without ``monotone`` a step that lowers the quality is a waypoint (accuracy is not
    monotone along SGD). The loop stops once the best quality met is within ``tol`` of the
    cap, after ``max_steps`` steps, or when no halving helps, and returns the best point met:
    its quality lies in :math:`[q_{l,t-1}, \text{cap}]`.

    Parameters
    ----------
    start
        The low firm's parameters :math:`x_{l,t-1}`.
    quality, gradient, moved
        :math:`q(x)`; the joint gradient at ``x`` for the ``k``-th step (a minibatch may
        depend on ``k``); :math:`x - \alpha g` as ``moved(x, g, alpha)``.
    visit
        Called with every point the loop moves to.

    References
    ----------
    Werner (2024), ch. 3, §3.4 (p. 64), Algorithm 5, lines 9-11; the step :math:`\alpha_{l,t}` of
    the proof of Proposition 3, §3.7; the reading of the printed loop is registered as
    ``thesis.ch3.alg5.while`` (docs/errata.md).
    """
    choice("inner", inner, ("gd", "while"))
    x = best = start
    q = best_q = quality(start)
    if inner == "while":  # Algorithm 5, lines 9-11, as printed
        size = step if printed_step is None else printed_step
        for k in range(max_steps):
            if q > cap:
                break
            x = moved(x, gradient(x, k), size)
            q = quality(x)
            if visit is not None:
                visit(x)
        return x
    size = step
    for k in range(max_steps):
        gap = cap - best_q
        if gap <= tol:
            break
        g = gradient(x, k)
        if sq_norm is not None:
            size = min(gap / sq_norm(g), step)
        floor = q if monotone else -math.inf
        for _ in range(max_halvings):
            candidate = moved(x, g, size)
            q_new = quality(candidate)
            if floor <= q_new <= cap:
                break
            size /= 2.0
        else:
            break
        x, q = candidate, q_new
        if visit is not None:
            visit(x)
        if q >= best_q:
            best, best_q = x, q
    return best


class Scheme(Protocol):
    """A collaboration scheme: per round, the high firm's move, then the low firm's.

    References
    ----------
    Werner (2024), ch. 3, §3.3 (p. 62), the collaboration schemes, and §3.4 (p. 64), Algorithm 5.
    """

    @property
    def name(self) -> str:
        """The scheme's name in reports (one of :data:`SCHEMES`)."""
        ...

    def high_move(self, q_l: float, q_h: float) -> HighMove:
        """The high firm's move this round, from the current qualities ``(q_l, q_h)``."""
        ...

    def low_move(self, q_l_prev: float, q_h_prev: float, q_h_new: float) -> LowMove:
        """The low firm's move, after the high firm's.

        From the low firm's quality ``q_l_prev`` and the high firm's before (``q_h_prev``) and after
        (``q_h_new``) its move.
        """
        ...


@dataclass(frozen=True, slots=True)
class CompleteCollaboration:
    """Both firms train on the joint objective, unrestricted (§3.3, p. 62).

    By Lemma 23 both revenues tend to 0. Each firm keeps its own model and the high firm moves
    first, as in the authors' code, rather than one shared FedAvg model.

    References
    ----------
    Werner (2024), ch. 3, §3.3 (p. 62), Complete Collaboration, Lemma 23 and Figure 3.1.
    """

    name: str = "complete"

    def high_move(self, q_l: float, q_h: float) -> HighMove:
        """Train on the joint objective, unpaced."""
        return HighMove(joint=True)

    def low_move(self, q_l_prev: float, q_h_prev: float, q_h_new: float) -> LowMove:
        """Train on the joint objective, uncapped."""
        return LowMove(joint=True)


@dataclass(frozen=True, slots=True)
class OneSided:
    """Only one firm shares; the other, the ``beneficiary``, trains on the joint objective.

    ``beneficiary="low"``: only the high firm shares (Fig. 3.2a; the low firm may overtake and
    the high firm loses revenue). ``beneficiary="high"``: only the low firm shares (Fig. 3.2b;
    both revenues rise by Proposition 1, but the low firm is stuck with its own data).

    The firm that receives nothing stays where it is, as the thesis assumes before
    Algorithm 5 (§3.4: both firms "have saturated training on their own datasets and will
    only update their models collaboratively going forward"); ``train_alone=True`` gives it an
    epoch on its own data each round instead, as the authors' code does for the experiments of
    §3.5.

    References
    ----------
    Werner (2024), ch. 3, §3.3 (p. 62), One-sided Collaboration, Figures 3.2a-b; §3.4 (the text
    before Algorithm 5); §3.5.
    """

    beneficiary: str
    train_alone: bool = False

    def __post_init__(self) -> None:
        """Refuse a ``beneficiary`` other than ``"low"`` or ``"high"``."""
        choice("beneficiary", self.beneficiary, FIRM_NAMES)

    @property
    def name(self) -> str:
        """``"one-sided-low"`` or ``"one-sided-high"``, after the beneficiary."""
        return f"one-sided-{self.beneficiary}"

    def high_move(self, q_l: float, q_h: float) -> HighMove:
        """The joint objective when the high firm benefits; else its own data or idle.

        Without ``train_alone`` the firm that receives nothing does not train.
        """
        shared = self.beneficiary == "high"
        return HighMove(joint=shared, idle=not (shared or self.train_alone))

    def low_move(self, q_l_prev: float, q_h_prev: float, q_h_new: float) -> LowMove:
        """The joint objective when the low firm benefits; else its own data or wait.

        Without ``train_alone`` the firm that receives nothing waits: its cap is its current
        quality.
        """
        if self.beneficiary == "low" or self.train_alone:
            return LowMove(joint=self.beneficiary == "low")
        return LowMove(joint=False, cap=q_l_prev)


@dataclass(frozen=True, slots=True)
class DefectionFreeConfig:
    r"""Options of Algorithm 5 (the defaults: the caps of the module docstring, no gating).

    Attributes
    ----------
    cap_mode
        ``"recommended"``: cap :math:`\min(\hat q, \rho^* q_{h,t}, q_l^*)`; ``"literal"``:
        :math:`\hat q` only, as printed (overshoots the Nash ratio when :math:`q_h` jumps).
    gating
        When the low firm may start an update: ``"none"`` (the caps make gating redundant),
        ``"line7"`` (step 7 as printed, read after step 6:
        :math:`q_{l,t-1} < q_l^*` and :math:`q_{l,t-1}/q_{h,t} \le \rho^*`),
        ``"text"`` (the text before Algorithm 5: :math:`q_{l,t-1} < q_l^*` and
        :math:`\rho_{t-1} \le \rho^*`),
        ``"code"`` (:math:`\rho_{t-1} \le \rho^*` and :math:`q_{l,t-1} \le \rho^*`, the
        authors' code with ``max_qh = 1``).
    schedule
        The high firm's pace: ``"paced"`` (growth at most ``b_tilde`` per round, Prop. 5) or
        ``"const"`` (a constant step).
    b_tilde
        The pace :math:`\tilde b`.
    q_max
        :math:`Q = \max_x q(x)`, the best reachable quality (default 1, as Lemma 25).
    tolerance
        Measurement tolerance of a quality: a rise of :math:`q_h` up to it counts as none,
        and the audit allows the revenue change a quality error of this size can cause.
    undo_if_worse
        Ask the driver to keep the high firm's previous model when a step lowers its
        measured quality (assumption 4 of §3.3; needed with stochastic training).

    References
    ----------
    Werner (2024), ch. 3, §3.4 (p. 64), Algorithm 5 (steps 7-8) and the proof of Proposition 5, §3.7
    (:math:`\tilde b`); Lemma 25 (:math:`q_h^* = 1`).
    """

    cap_mode: str = "recommended"
    gating: str = "none"
    schedule: str = "const"
    b_tilde: float = B_TILDE
    q_max: float = 1.0
    tolerance: float = 0.0
    undo_if_worse: bool = True

    def __post_init__(self) -> None:
        r"""Refuse unknown modes and an out-of-range pace, best quality or tolerance.

        ``cap_mode``, ``gating`` and ``schedule`` must be known; :math:`\tilde b > 1`,
        :math:`Q \in (0, 1]` and ``tolerance`` in [0, 1].
        """
        choice("cap_mode", self.cap_mode, CAP_MODES)
        choice("gating", self.gating, GATINGS)
        choice("schedule", self.schedule, SCHEDULES)
        in_interval("b_tilde", self.b_tilde, 1.0, low_open=True)
        in_interval("q_max", self.q_max, 0.0, 1.0, low_open=True)
        in_interval("tolerance", self.tolerance, 0.0, 1.0)


@dataclass(frozen=True, slots=True)
class DefectionFree:
    r"""Algorithm 5 from the disagreement point ``(q_l0, q_h0)`` (Werner 2024, ch. 3).

    :math:`\rho^*` and :math:`q_l^* = \rho^* Q` come from the constrained Nash bargaining
    solution (:func:`econ.bargaining.duopoly_nash_solution`); :math:`\hat q_{l,t}` from
    :func:`econ.quality_caps.hat_q` and the cap from :func:`econ.quality_caps.next_low_quality`,
    both with the cap factor ``cap_factor`` (:func:`econ.quality_caps.B`, step 8; the registry
    swaps in misprinted factors to see its checks fail).

    References
    ----------
    Werner (2024), ch. 3, §3.4 (p. 64), Algorithm 5, steps 7-8; Proposition 2 and the Nash
    bargaining program of §3.4.
    """

    q_l0: float
    q_h0: float
    config: DefectionFreeConfig = field(default_factory=DefectionFreeConfig)
    name: str = "defection-free"
    cap_factor: Callable[..., Any] = field(default=quality_caps.cap_ratio, repr=False)
    rho_star: float = field(init=False)
    q_l_star: float = field(init=False)

    def __post_init__(self) -> None:
        r"""Check the start; find :math:`\rho^*` and :math:`q_l^*` of the Nash bargaining solution.

        The start must satisfy ``0 <= q_l0 < q_h0 <= q_max``; the solution is
        :func:`econ.bargaining.duopoly_nash_solution` (Proposition 2).
        """
        if not 0.0 <= self.q_l0 < self.q_h0 <= self.config.q_max:
            raise ValueError(
                "the defection-free rule needs 0 <= q_l0 < q_h0 <= q_max, got "
                f"q_l0={self.q_l0!r}, q_h0={self.q_h0!r}, q_max={self.config.q_max!r}"
            )
        sol = bargaining.duopoly_nash_solution(  # the thesis's program (Proposition 4)
            self.q_l0, self.q_h0, self.config.q_max, allow_lower=True
        )
        object.__setattr__(self, "rho_star", float(sol.rho_star))
        object.__setattr__(self, "q_l_star", float(sol.q_l_star))

    def high_move(self, q_l: float, q_h: float) -> HighMove:
        r"""Algorithm 5, steps 2-4: the high firm trains on the joint objective.

        Paced at :math:`\tilde b` under the ``"paced"`` schedule; with ``undo_if_worse`` the driver
        keeps the previous model when a step lowers the measured quality.

        References
        ----------
        Werner (2024), ch. 3, §3.4 (p. 64), Algorithm 5, steps 2-4; pace: proof of Proposition 5,
        §3.7 (:math:`\tilde b`).
        """
        pace = self.config.b_tilde if self.config.schedule == "paced" else None
        return HighMove(joint=True, pace=pace, undo_if_worse=self.config.undo_if_worse)

    def _gate(self, q_l_prev: float, q_h_prev: float, q_h_new: float) -> bool:
        g, r = self.config.gating, self.rho_star
        if g == "line7":
            return q_l_prev < self.q_l_star and q_l_prev / q_h_new <= r
        if g == "text":
            return q_l_prev < self.q_l_star and q_l_prev / q_h_prev <= r
        if g == "code":
            return q_l_prev / q_h_prev <= r and q_l_prev <= r * 1.0  # max_qh = 1 in the code
        return True

    def low_move(self, q_l_prev: float, q_h_prev: float, q_h_new: float) -> LowMove:
        r"""Algorithm 5, steps 5-11: the low firm's capped move on the joint objective.

        The low firm waits (its cap is its current quality) unless the high firm's quality rose by
        more than ``tolerance`` and the ``gating`` allows an update. Its cap is then
        :func:`econ.quality_caps.next_low_quality` under ``cap_mode``, with step 8's
        :math:`\hat q_{l,t}` of :func:`econ.quality_caps.hat_q`.

        References
        ----------
        Werner (2024), ch. 3, §3.4 (p. 64), Algorithm 5, steps 5-11 (:math:`\hat q_{l,t}`: step 8).
        """
        wait = LowMove(joint=True, cap=q_l_prev)
        if q_h_new - q_h_prev <= self.config.tolerance or not self._gate(
            q_l_prev, q_h_prev, q_h_new
        ):
            return wait
        hat_q = quality_caps.hat_q(q_l_prev, q_h_prev, q_h_new, factor=self.cap_factor)
        cap = quality_caps.next_low_quality(
            q_l_prev,
            q_h_prev,
            q_h_new,
            rho_star=self.rho_star,
            q_l_star=self.q_l_star,
            cap_mode=self.config.cap_mode,
            factor=self.cap_factor,
        )
        return LowMove(joint=True, cap=float(cap), hat_q=float(hat_q))


def build_scheme(
    name: str,
    q_l0: float,
    q_h0: float,
    config: DefectionFreeConfig | None = None,
    *,
    train_alone: bool = False,
) -> Scheme:
    """The scheme called ``name`` (one of :data:`SCHEMES`) from the start ``(q_l0, q_h0)``.

    ``train_alone`` is :class:`OneSided`'s option for the firm that receives nothing.

    References
    ----------
    Werner (2024), ch. 3, §3.3 (p. 62) and §3.4 (p. 64), Algorithm 5 (the schemes it builds).
    """
    choice("scheme", name, SCHEMES)
    if name == "defection-free":
        return DefectionFree(q_l0, q_h0, config or DefectionFreeConfig())
    if name == "complete":
        return CompleteCollaboration()
    return OneSided(beneficiary=name.removeprefix("one-sided-"), train_alone=train_alone)


def estimate_q_max(pooled: Sequence[ModelQualities], q_h0: float) -> float:
    r"""Estimate :math:`Q = \max_x q(x)` as the best quality a pooled-training run reached.

    ``pooled`` are the per-round qualities of a run that trains on all the data (complete
    collaboration); the estimate is never below the high firm's start ``q_h0``.

    References
    ----------
    Werner (2024), ch. 3, §3.4, Proposition 2 (:math:`q_h^* = \max_x q(x)`); Complete Collaboration,
    §3.3.
    """
    if not pooled:
        raise ValueError("estimate_q_max needs the qualities of at least one pooled round")
    return float(max(q_h0, *(float(m.quality.max()) for m in pooled)))

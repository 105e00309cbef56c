r"""Collaboration between two competing firms as decision rules over model qualities.

Werner (2024), ch. 3: the schemes of §3.3 (p. 62) and Algorithm 5, "Defection-Free
Collaborative Learning" (§3.4, p. 64). Every rule answers two questions each round, from
qualities alone:

1. :meth:`Scheme.high_move` -- does the high firm take a *joint* step (on the averaged loss
   :math:`f = (f(\cdot;l) + f(\cdot;h))/2`, eq. 3.1) or one on its own data, and at what
   pace (the largest growth factor :math:`b = q_{h,t}/q_{h,t-1}` it aims at);
2. :meth:`Scheme.low_move` -- after the high firm moved, does the low firm train jointly,
   and up to which quality may it go. Algorithm 5 caps it at
   :math:`\hat q_{l,t} = B(\rho_{t-1}, b)\,q_{h,t}` (step 8). Steps 7-11 only gate the
   *start* of an update, so when :math:`q_h` jumps the printed cap lets the low firm pass
   :math:`q_l^*`, and qualities never fall (assumption 4 of §3.3), so it cannot come back;
   the default rule therefore caps it at :math:`\min(\hat q_{l,t}, \rho^* q_{h,t}, q_l^*)`,
   which also makes the gating of step 7 redundant. The printed cap and three gating
   conditions (step 7, the text before Algorithm 5, the authors' code) sit behind flags.

:func:`play` runs a rule against any pair of firms that can train (:class:`Firms`: the
convex toy of :mod:`games.quadratic_firms`, or the torch driver in
:mod:`learning.drivers.defection_free`); :func:`report` turns a run into the economics and
:func:`revenue_audit` checks that neither revenue fell.

Revenues are the market's (:func:`econ.market.market_round`): each round the better model
sells as the high firm of Lemma 22 (eq. 3.4, §3.2, pp. 59-62), whichever firm owns it. A
revenue is a price times a demand (Definition 3, eq. 3.3), both non-negative, so no revenue
is negative, and welfare is consumer surplus plus both revenues in every round. The firms keep
their names: ``U_l`` is the revenue of the firm that started with the lower quality, ``U_h``
that of the other. Evaluating (3.4) with fixed labels after the low firm overtakes gives a
negative ``U_h``; only the run figures draw those numbers, labelled as plotted in the thesis
(Fig. 3.2a, :mod:`games.defection_free.figures`).

Guards the thesis lacks: the high firm's measured quality falling (:math:`b \le 1`, where
:math:`B(a, b) < a` and the square root of step 8 can be imaginary: the low firm then
waits, and a driver may undo the high step), an unknown :math:`Q = \max_x q(x)` (``q_max``,
supplied or estimated from a pooled run; Proposition 2 makes :math:`q_h^* = Q`), and noisy
measurements (``tolerance``: a rise of :math:`q_h` within it does not count, and the audit
allows the revenue change that a quality error of that size can cause).

The schemes are named by the firm that benefits: ``one-sided-low`` means the low firm is
the *beneficiary* (only the high firm shares its data, Fig. 3.2a), ``one-sided-high`` that
the high firm is (only the low firm shares, Fig. 3.2b).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from econ import bargaining, duopoly, quality_caps
from econ.market import market_round
from econ.outputs import frame, plain, scalar_or_array
from econ.qualities import ModelQualities
from econ.validation import choice, in_interval, non_negative, positive_int, unit_interval

__all__ = [
    "B_TILDE",
    "CAP_MODES",
    "GATINGS",
    "INNER_MODES",
    "MARKET_COLUMNS",
    "REVENUE_CONVENTION",
    "SCHEDULES",
    "SCHEMES",
    "Claim",
    "CompleteCollaboration",
    "DefectionFree",
    "DefectionFreeConfig",
    "Firms",
    "HighMove",
    "LowMove",
    "MarketPath",
    "OneSided",
    "Play",
    "PlayReport",
    "RevenueAudit",
    "Scheme",
    "build_scheme",
    "estimate_q_max",
    "fixed_label_revenues",
    "market_path",
    "paced_step_size",
    "play",
    "raise_to_cap",
    "report",
    "revenue_audit",
    "revenue_slack",
    "scheme_claims",
]

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


# --------------------------------------------------------------------------- moves


@dataclass(frozen=True, slots=True)
class HighMove:
    """What the high firm does this round.

    Attributes
    ----------
    joint
        Train on the joint objective (the low firm shares) or on its own data only.
    pace
        Largest growth factor :math:`q_{h,t}/q_{h,t-1}` the step aims at (Proposition 5's
        :math:`\\tilde b`), or None for an unpaced step.
    undo_if_worse
        Keep the previous model when the step lowers the measured quality (qualities
        never degrade: assumption 4 of §3.3).
    idle
        Do not train at all this round.

    References
    ----------
    Werner (2024), ch. 3, §3.4 (p. 64), Algorithm 5, steps 2-4 (the high-quality model update);
    pace: proof of Proposition 5, §3.7 (:math:`\\tilde b`).
    """

    joint: bool
    pace: float | None = None
    undo_if_worse: bool = False
    idle: bool = False


@dataclass(frozen=True, slots=True)
class LowMove:
    """What the low firm does after the high firm moved.

    Attributes
    ----------
    joint
        Train on the joint objective (the high firm shares) or on its own data only.
    cap
        Highest quality the low firm may reach this round; None means uncapped (a free
        round of training). A cap equal to the current quality means "wait".
    hat_q
        Algorithm 5's :math:`\\hat q_{l,t} = B(\\rho_{t-1}, b) q_{h,t}` where it was
        computed (None otherwise).

    References
    ----------
    Werner (2024), ch. 3, §3.4 (p. 64), Algorithm 5, steps 5-11 (the low-quality model update;
    :math:`\\hat q_{l,t}` of step 8).
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


# --------------------------------------------------------------------------- schemes


class Scheme(Protocol):
    """A collaboration scheme: per round, the high firm's move, then the low firm's.

    References
    ----------
    Werner (2024), ch. 3, §3.3 (p. 62), the collaboration schemes, and §3.4 (p. 64), Algorithm 5.
    """

    @property
    def name(self) -> str: ...

    def high_move(self, q_l: float, q_h: float) -> HighMove: ...

    def low_move(self, q_l_prev: float, q_h_prev: float, q_h_new: float) -> LowMove: ...


@dataclass(frozen=True, slots=True)
class CompleteCollaboration:
    """Both firms train on the joint objective, unrestricted (§3.3, p. 62; Lemma 23: both
    revenues tend to 0). Each firm keeps its own model and the high firm moves first, as
    in the authors' code, rather than one shared FedAvg model.

    References
    ----------
    Werner (2024), ch. 3, §3.3 (p. 62), Complete Collaboration, Lemma 23 and Figure 3.1.
    """

    name: str = "complete"

    def high_move(self, q_l: float, q_h: float) -> HighMove:
        return HighMove(joint=True)

    def low_move(self, q_l_prev: float, q_h_prev: float, q_h_new: float) -> LowMove:
        return LowMove(joint=True)


@dataclass(frozen=True, slots=True)
class OneSided:
    """Only one firm shares; the other, the ``beneficiary``, trains on the joint objective.

    ``beneficiary="low"``: only the high firm shares (Fig. 3.2a; the low firm may overtake and
    the high firm loses revenue). ``beneficiary="high"``: only the low firm shares (Fig. 3.2b;
    both revenues rise by Proposition 1, but the low firm is stuck with its own data).

    The firm that receives nothing stays where it is, as the thesis assumes before
    Algorithm 5 (§3.4: both firms "have saturated training on their own datasets and will
    only update their models collaboratively going forward"); ``train_alone=True`` gives it an epoch on its own data each round
    instead, as the authors' code does for the experiments of §3.5.

    References
    ----------
    Werner (2024), ch. 3, §3.3 (p. 62), One-sided Collaboration, Figures 3.2a-b; §3.4 (the text
    before Algorithm 5); §3.5.
    """

    beneficiary: str
    train_alone: bool = False

    def __post_init__(self) -> None:
        choice("beneficiary", self.beneficiary, FIRM_NAMES)

    @property
    def name(self) -> str:
        return f"one-sided-{self.beneficiary}"

    def high_move(self, q_l: float, q_h: float) -> HighMove:
        shared = self.beneficiary == "high"
        return HighMove(joint=shared, idle=not (shared or self.train_alone))

    def low_move(self, q_l_prev: float, q_h_prev: float, q_h_new: float) -> LowMove:
        if self.beneficiary == "low" or self.train_alone:
            return LowMove(joint=self.beneficiary == "low")
        return LowMove(joint=False, cap=q_l_prev)


@dataclass(frozen=True, slots=True)
class DefectionFreeConfig:
    """Options of Algorithm 5 (the defaults: the caps of the module docstring, no gating).

    Attributes
    ----------
    cap_mode
        ``"recommended"``: cap :math:`\\min(\\hat q, \\rho^* q_{h,t}, q_l^*)`; ``"literal"``:
        :math:`\\hat q` only, as printed (overshoots the Nash ratio when :math:`q_h` jumps).
    gating
        When the low firm may start an update: ``"none"`` (the caps make gating redundant),
        ``"line7"`` (step 7 as printed, read after step 6:
        :math:`q_{l,t-1} < q_l^*` and :math:`q_{l,t-1}/q_{h,t} \\le \\rho^*`),
        ``"text"`` (the text before Algorithm 5: :math:`q_{l,t-1} < q_l^*` and
        :math:`\\rho_{t-1} \\le \\rho^*`),
        ``"code"`` (:math:`\\rho_{t-1} \\le \\rho^*` and :math:`q_{l,t-1} \\le \\rho^*`, the
        authors' code with ``max_qh = 1``).
    schedule
        The high firm's pace: ``"paced"`` (growth at most ``b_tilde`` per round, Prop. 5) or
        ``"const"`` (a constant step).
    b_tilde
        The pace :math:`\\tilde b`.
    q_max
        :math:`Q = \\max_x q(x)`, the best reachable quality (default 1, as Lemma 25).
    tolerance
        Measurement tolerance of a quality: a rise of :math:`q_h` up to it counts as none,
        and the audit allows the revenue change a quality error of this size can cause.
    undo_if_worse
        Ask the driver to keep the high firm's previous model when a step lowers its
        measured quality (assumption 4 of §3.3; needed with stochastic training).

    References
    ----------
    Werner (2024), ch. 3, §3.4 (p. 64), Algorithm 5 (steps 7-8) and the proof of Proposition 5, §3.7
    (:math:`\\tilde b`); Lemma 25 (:math:`q_h^* = 1`).
    """

    cap_mode: str = "recommended"
    gating: str = "none"
    schedule: str = "const"
    b_tilde: float = B_TILDE
    q_max: float = 1.0
    tolerance: float = 0.0
    undo_if_worse: bool = True

    def __post_init__(self) -> None:
        choice("cap_mode", self.cap_mode, CAP_MODES)
        choice("gating", self.gating, GATINGS)
        choice("schedule", self.schedule, SCHEDULES)
        in_interval("b_tilde", self.b_tilde, 1.0, low_open=True)
        in_interval("q_max", self.q_max, 0.0, 1.0, low_open=True)
        in_interval("tolerance", self.tolerance, 0.0, 1.0)


@dataclass(frozen=True, slots=True)
class DefectionFree:
    """Algorithm 5 from the disagreement point ``(q_l0, q_h0)`` (Werner 2024, ch. 3).

    :math:`\\rho^*` and :math:`q_l^* = \\rho^* Q` come from the constrained Nash bargaining
    solution (:func:`econ.bargaining.duopoly_nash_solution`); :math:`\\hat q_{l,t}` from
    :func:`econ.quality_caps.hat_q` and the cap from :func:`econ.quality_caps.next_low_quality`, both with
    the cap factor ``cap_factor`` (:func:`econ.quality_caps.B`, step 8; the registry swaps in
    misprinted factors to see its checks fail).

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
        if not 0.0 <= self.q_l0 < self.q_h0 <= self.config.q_max:
            raise ValueError(
                "the defection-free rule needs 0 <= q_l0 < q_h0 <= q_max, got "
                f"q_l0={self.q_l0!r}, q_h0={self.q_h0!r}, q_max={self.config.q_max!r}"
            )
        sol = bargaining.duopoly_nash_solution(self.q_l0, self.q_h0, self.config.q_max)
        object.__setattr__(self, "rho_star", float(sol.rho_star))
        object.__setattr__(self, "q_l_star", float(sol.q_l_star))

    def high_move(self, q_l: float, q_h: float) -> HighMove:
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
    """Estimate :math:`Q = \\max_x q(x)` as the best quality a pooled-training run reached.

    ``pooled`` are the per-round qualities of a run that trains on all the data (complete
    collaboration); the estimate is never below the high firm's start ``q_h0``.

    References
    ----------
    Werner (2024), ch. 3, §3.4, Proposition 2 (:math:`q_h^* = \\max_x q(x)`); Complete Collaboration,
    §3.3.
    """
    if not pooled:
        raise ValueError("estimate_q_max needs the qualities of at least one pooled round")
    return float(max(q_h0, *(float(m.quality.max()) for m in pooled)))


# --------------------------------------------------------------------------- play


class Firms(Protocol):
    """Two firms that can train: the convex toy, or real models (the torch driver).

    References
    ----------
    Werner (2024), ch. 3, §3.4 (p. 64), Algorithm 5 (the two models it updates); the objective of
    eq. (3.1).
    """

    def measure(self) -> ModelQualities:
        """Current qualities, names ``("low", "high")``."""
        ...

    def step_high(self, move: HighMove) -> None:
        """One round of the high firm's training as ``move`` says."""
        ...

    def undo_high(self) -> None:
        """Return the high firm to its model before the last :meth:`step_high`."""
        ...

    def step_low(self, joint: bool) -> None:
        """One free round of the low firm's training (no cap)."""
        ...

    def raise_low(self, cap: float, inner: str) -> None:
        """Gradient steps on the joint objective towards ``cap`` without passing it
        (``inner="gd"``: each step at most the gap over the squared gradient norm and at
        most the smooth step, halved while it would pass the cap), or Algorithm 5's
        steps 9-11 as printed, ``while q <= cap`` (``inner="while"``), which stop only once
        the quality has passed the cap."""
        ...


@dataclass(frozen=True, slots=True)
class Play:
    """The qualities of every round of a scheme, round 0 being the start.

    ``cap`` is the quality the low firm was allowed this round (NaN: uncapped), ``hat_q``
    Algorithm 5's :math:`\\hat q` (NaN where not computed). ``measured`` are the qualities
    the firms' models have; in the ``oracle`` inner mode the low firm's quality is set by the
    rule instead (``q_l`` then differs from ``measured``), as the authors' code does for the
    experiments of §3.5 (Fig. 3.3): it never trains the low model.

    References
    ----------
    Werner (2024), ch. 3, §3.4, Algorithm 5, and §3.5 (p. 69), Figure 3.3 (the quality-level runs).
    """

    scheme: str
    q_l: NDArray[np.float64]
    q_h: NDArray[np.float64]
    cap: NDArray[np.float64]
    hat_q: NDArray[np.float64]
    measured: tuple[ModelQualities, ...]

    def qualities(self) -> list[ModelQualities]:
        """Per-round qualities as the market sees them (the rule's in oracle mode)."""
        return [
            ModelQualities(
                names=m.names, quality=np.array([ql, qh]), metric=m.metric, n_eval=m.n_eval
            )
            for m, ql, qh in zip(self.measured, self.q_l, self.q_h, strict=True)
        ]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the scheme and one record per round, ``t, q_l, q_h, cap, hat_q``
        (NaN as None)."""
        columns = self._columns()
        rows = [dict(zip(columns, row, strict=True)) for row in zip(*columns.values(), strict=True)]
        return plain({"scheme": self.scheme, "rounds": rows})

    def to_frame(self) -> Any:
        """A pandas DataFrame indexed by round ``t``: ``q_l, q_h, cap, hat_q`` (needs
        pandas)."""
        return frame(self._columns(), "Play").set_index("t")

    def _columns(self) -> dict[str, Any]:
        return {
            "t": np.arange(self.q_l.size),
            "q_l": self.q_l,
            "q_h": self.q_h,
            "cap": self.cap,
            "hat_q": self.hat_q,
        }


def play(scheme: Scheme, firms: Firms, rounds: int, *, inner: str = "gd") -> Play:
    """Run ``scheme`` on ``firms`` for ``rounds`` rounds.

    Each round the high firm moves first (undone when its quality fell and the move asks
    for it), then the low firm: a free round of training, or a capped raise (``inner``
    ``"gd"``: guarded gradient steps; ``"oracle"``: the low quality is *set* to the cap,
    the thesis's quality-level simulation; ``"while"``: the literal loop of Algorithm 5).

    References
    ----------
    Werner (2024), ch. 3, §3.3 (p. 62) and §3.4 (p. 64), Algorithm 5 (lines 9-11 for
    ``inner="while"``).
    """
    rounds = positive_int("rounds", rounds)
    choice("inner", inner, INNER_MODES)
    first = firms.measure()
    q_l, q_h = first["low"], first["high"]
    ql, qh, cap, hat, measured = [q_l], [q_h], [np.nan], [np.nan], [first]
    for _ in range(rounds):
        high = scheme.high_move(q_l, q_h)
        if not high.idle:
            firms.step_high(high)
        q_h_new = firms.measure()["high"] if not high.idle else q_h
        if high.undo_if_worse and q_h_new < q_h:
            firms.undo_high()
            q_h_new = q_h
        low = scheme.low_move(q_l, q_h, q_h_new)
        if low.cap is None:
            firms.step_low(low.joint)
        elif inner != "oracle" and low.cap > q_l:
            firms.raise_low(low.cap, inner)
        now = firms.measure()
        q_l = max(q_l, low.cap) if inner == "oracle" and low.cap is not None else now["low"]
        q_h = now["high"]
        ql.append(q_l)
        qh.append(q_h)
        cap.append(np.nan if low.cap is None else low.cap)
        hat.append(np.nan if low.hat_q is None else low.hat_q)
        measured.append(now)
    return Play(
        scheme=scheme.name,
        q_l=np.array(ql),
        q_h=np.array(qh),
        cap=np.array(cap),
        hat_q=np.array(hat),
        measured=tuple(measured),
    )


# --------------------------------------------------------------------------- market


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


def _individually_rational(
    u_l: NDArray[np.float64],
    u_h: NDArray[np.float64],
    allowed: NDArray[np.float64] | float = 0.0,
) -> NDArray[np.bool_]:
    """Whether neither firm is worse off than at round 0 (the constraints of the Nash
    bargaining problem of §3.4, p. 64 ff.), up to ``allowed``."""
    return (u_l - u_l[0] >= -allowed) & (u_h - u_h[0] >= -allowed)


# --------------------------------------------------------------------------- audit


def revenue_slack(q_l: ArrayLike, q_h: ArrayLike, tolerance: float) -> NDArray[np.float64]:
    """Largest change of either revenue when each quality is off by at most ``tolerance``.

    The four corners :math:`(q_l \\pm \\epsilon, q_h \\pm \\epsilon)` (clipped to [0, 1]) of the
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
        """A pandas DataFrame of the changes from round ``t - 1`` to ``t`` (``t >= 1``), with
        the slack allowed at ``t`` (needs pandas)."""
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
    """Did either firm's revenue fall from one round to the next (Proposition 3)?

    A fall counts when :math:`U_t - U_{t-1} < -(s_{t-1} + s_t + \\text{atol})`, with
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


# --------------------------------------------------------------------------- report

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
    """A scheme's run in the economics' terms (the JSON of ``collabecon defection-free``).

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
        :math:`\\rho^*` of the Nash bargaining solution from the start, with ``q_max``.
    nash_star
        :math:`N(q_l^*, q_h^*)` with :math:`q_h^* = Q` = ``q_max`` (Proposition 2): the
        reference of Fig. 3.3's last panel.
    nash_max
        :math:`\\max_{q_l} N(q_l, \\bar q)` over the individually rational set, with
        :math:`\\bar q` the best quality either firm reached (Proposition 2 with
        :math:`Q := \\bar q`).
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
        return bool(self.rows[-1]["individually_rational"])

    def to_dict(self) -> dict[str, Any]:
        """The run, JSON-ready: scheme, rounds, the audit, rho*, the Nash references and
        the gap."""
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
        """A pandas DataFrame of :attr:`rows`, one row per round indexed by ``t`` (needs
        pandas)."""
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
    reference = bargaining.duopoly_nash_solution(*start, q)
    best = max(start[1], float(ql[-1]), float(qh[-1]))
    # models of quality 0 sell nothing (econ.oligopoly): every Nash product is then 0
    nash_max = (
        float(bargaining.duopoly_nash_solution(*start, best).nash_product) if best > 0 else 0.0
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


# --------------------------------------------------------------------------- the chapter's claims


@dataclass(frozen=True, slots=True)
class Claim:
    """One qualitative claim of the chapter about a run, with the numbers it rests on.

    References
    ----------
    Werner (2024), ch. 3, §§3.3-3.5 (the claims of Lemma 23, Propositions 3 and 5, Figures 3.2-3.3).
    """

    claim: str
    holds: bool
    evidence: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the claim, whether it holds, and the evidence."""
        return plain({"claim": self.claim, "holds": self.holds, "evidence": self.evidence})


def _ends(rep: PlayReport, key: str) -> tuple[float, float]:
    return float(rep.rows[0][key]), float(rep.rows[-1][key])


def scheme_claims(reports: dict[str, PlayReport], *, nash_gap: float = 0.05) -> list[Claim]:
    """Werner (2024) ch. 3's claims about the schemes, checked on runs from one start.

    Defection-free (Prop. 3, 5; Fig. 3.3): no revenue fell, both qualities rose, the ratio
    moved towards :math:`\\rho^*`, and the Nash product ends individually rational and
    within ``nash_gap`` (relative) of its maximum at the best quality reached. Complete
    collaboration (Lemma 23): the quality gap and the high firm's revenue shrink. Only the
    high firm shares (Fig. 3.2a): the high firm loses revenue. Only the low firm shares
    (Fig. 3.2b): both revenues rise, and the low firm ends below its defection-free
    revenue. Revenues are the market's (:data:`REVENUE_CONVENTION`). Claims about schemes
    missing from ``reports`` are skipped.

    References
    ----------
    Werner (2024), ch. 3, §3.3, Lemma 23 and Figures 3.2a-b; §3.4, Propositions 3 and 5; §3.5,
    Figure 3.3.
    """
    out = []
    df = reports.get("defection-free")
    if df is not None:
        a = df.audit
        out.append(
            Claim(
                "defection-free: no revenue fell in any round",
                a.never_decreased,
                f"min change U_l {a.min_change_low:.3g}, U_h {a.min_change_high:.3g}",
            )
        )
        (l0, l1), (h0, h1) = _ends(df, "q_l"), _ends(df, "q_h")
        out.append(
            Claim(
                "defection-free: both qualities rose",
                l1 > l0 and h1 > h0,
                f"q_l {l0:.3f} -> {l1:.3f}, q_h {h0:.3f} -> {h1:.3f}",
            )
        )
        r0, r1 = _ends(df, "rho")
        out.append(
            Claim(
                "defection-free: rho moved towards rho*",
                abs(r1 - df.rho_star) <= abs(r0 - df.rho_star),
                f"rho {r0:.3f} -> {r1:.3f}, rho* {df.rho_star:.3f}",
            )
        )
        rel = df.final_nash_gap / df.nash_max if df.nash_max > 0 else 0.0
        rational = df.final_individually_rational
        out.append(
            Claim(
                f"defection-free: Nash product within {nash_gap:.0%} of its maximum",
                rational and rel <= nash_gap,
                f"N_T {df.rows[-1]['nash_product']:.3g}"
                f"{'' if rational else ' (outside the individually rational set)'}, "
                f"max {df.nash_max:.3g}, gap {rel:.1%}",
            )
        )
    full = reports.get("complete")
    if full is not None:
        (l0, l1), (h0, h1) = _ends(full, "q_l"), _ends(full, "q_h")
        u0, u1 = _ends(full, "U_h")
        out.append(
            Claim(
                "complete: the qualities converge and the high firm's revenue falls",
                abs(h1 - l1) < abs(h0 - l0) and u1 < u0,
                f"|q_h - q_l| {abs(h0 - l0):.3f} -> {abs(h1 - l1):.3f}, U_h {u0:.4f} -> {u1:.4f}",
            )
        )
    low = reports.get("one-sided-low")
    if low is not None:
        u0, u1 = _ends(low, "U_h")
        out.append(
            Claim(
                "only the high firm shares: the high firm loses revenue",
                u1 < u0,
                f"U_h {u0:.4f} -> {u1:.4f}",
            )
        )
    high = reports.get("one-sided-high")
    if high is not None:
        (a0, a1), (b0, b1) = _ends(high, "U_l"), _ends(high, "U_h")
        out.append(
            Claim(
                "only the low firm shares: both revenues rise",
                a1 > a0 and b1 > b0,
                f"U_l {a0:.4f} -> {a1:.4f}, U_h {b0:.4f} -> {b1:.4f}",
            )
        )
        if df is not None:
            d1 = float(df.rows[-1]["U_l"])
            out.append(
                Claim(
                    "only the low firm shares: the low firm ends below defection-free",
                    a1 < d1,
                    f"U_l {a1:.4f} vs defection-free {d1:.4f}",
                )
            )
    return out

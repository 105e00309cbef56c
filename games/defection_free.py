r"""Collaboration between two competing firms as decision rules over model qualities.

Werner (2024), ch. 3 §3.3 and Algorithm 5 ("Defection-Free Collaborative Learning"); the
reconciled form of spec ch3 §8.3 is the default, the printed behaviours sit behind flags.
Every rule answers two questions each round, from qualities alone:

1. :meth:`Scheme.high_move` -- does the high firm take a *joint* step (on the averaged loss
   :math:`f = (f(\cdot;l) + f(\cdot;h))/2`, eq. 3.1) or one on its own data, and at what
   pace (the largest growth factor :math:`b = q_{h,t}/q_{h,t-1}` it aims at);
2. :meth:`Scheme.low_move` -- after the high firm moved, does the low firm train jointly,
   and up to which quality may it go. Algorithm 5 caps it at
   :math:`\hat q_{l,t} = B(\rho_{t-1}, b)\,q_{h,t}` (step 8) and the reconciled rule at
   :math:`\min(\hat q_{l,t}, \rho^* q_{h,t}, q_l^*)` (spec ch3 §8.3, typo 7-8).

:func:`play` runs a rule against any pair of firms that can train (:class:`Firms`: the
convex toy of :mod:`games.quadratic_firms`, or the torch driver in
:mod:`learning.defection_free`) and :func:`revenue_audit` checks that neither revenue fell.

Guards the thesis lacks: the high firm's measured quality falling (:math:`b \le 1`, spec
typo 10: the low firm then waits, and a driver may undo the high step), an unknown
:math:`Q = \max_x q(x)` (``q_max``, supplied or estimated from a pooled run, typo 9), and
noisy measurements (``tolerance``: a rise of :math:`q_h` within it does not count, and the
audit allows the revenue change that a quality error of that size can cause).

The schemes' names are unambiguous (spec ch3 §5, typo 27): ``one-sided-low`` means the low
firm is the *beneficiary* (only the high firm shares its data, Fig. 3.2a), ``one-sided-high``
that the high firm is (only the low firm shares, Fig. 3.2b).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from econ import bargaining, caps, duopoly
from econ.qualities import ModelQualities
from econ.validation import choice, in_interval, non_negative, positive_int

__all__ = [
    "B_TILDE",
    "CAP_MODES",
    "GATINGS",
    "INNER_MODES",
    "SCHEDULES",
    "SCHEMES",
    "Claim",
    "CompleteCollaboration",
    "DefectionFree",
    "DefectionFreeConfig",
    "Firms",
    "HighMove",
    "LowMove",
    "OneSided",
    "Play",
    "PlayReport",
    "RevenueAudit",
    "Scheme",
    "build_scheme",
    "estimate_q_max",
    "paced_step_size",
    "play",
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
#: :math:`\tilde b = \min_\rho b_\rho` (Proposition 5), as :func:`econ.caps.b_tilde` finds it.
B_TILDE = 1.0297284244
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
        Keep the previous model when the step lowers the measured quality (assumption A2).
    idle
        Do not train at all this round.
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
    """

    joint: bool
    cap: float | None = None
    hat_q: float | None = None


def paced_step_size(pace: float, quality: float, grad_norm2: float, max_step: float) -> float:
    r"""The high firm's step size of the proof of Proposition 5 (Werner 2024, ch. 3).

    .. math:: \alpha_{h,t} = \min\Big\{\frac{(\tilde b - 1)\, q_{h,t-1}}{\|\nabla f_{h,t-1}\|^2},
              \frac{1}{L}\Big\}

    For a convex, :math:`L`-smooth objective this keeps
    :math:`q_{h,t}/q_{h,t-1} \le \tilde b`; ``max_step`` plays :math:`1/L`.
    """
    if grad_norm2 <= 0.0:
        return max_step
    return min((pace - 1.0) * quality / grad_norm2, max_step)


# --------------------------------------------------------------------------- schemes


class Scheme(Protocol):
    """A collaboration scheme: per round, the high firm's move, then the low firm's."""

    @property
    def name(self) -> str: ...

    def high_move(self, q_l: float, q_h: float) -> HighMove: ...

    def low_move(self, q_l_prev: float, q_h_prev: float, q_h_new: float) -> LowMove: ...


@dataclass(frozen=True, slots=True)
class CompleteCollaboration:
    """Both firms train on the joint objective, unrestricted (thesis §3.3; Lemma 23: both
    revenues tend to 0). The code-faithful mode: separate models, high first (spec ch3 §5)."""

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

    The firm that receives nothing stays where it is, as assumption A3 has it (both firms
    saturated their own data before collaborating, and "afterwards they update only
    collaboratively"); ``train_alone=True`` gives it an epoch on its own data each round
    instead, as the authors' code does (spec ch3 §10).
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
    """Options of Algorithm 5 (spec ch3 §8.3; the defaults are the reconciled algorithm).

    Attributes
    ----------
    cap_mode
        ``"recommended"``: cap :math:`\\min(\\hat q, \\rho^* q_{h,t}, q_l^*)`; ``"literal"``:
        :math:`\\hat q` only, as printed (overshoots the Nash ratio when :math:`q_h` jumps).
    gating
        When the low firm may start an update: ``"none"`` (the caps make gating redundant),
        ``"line7"`` (:math:`q_{l,t-1} < q_l^*` and :math:`q_{l,t-1}/q_{h,t} \\le \\rho^*`),
        ``"text"`` (:math:`q_{l,t-1} < q_l^*` and :math:`\\rho_{t-1} \\le \\rho^*`),
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
        measured quality (A2; needed with stochastic training).
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
    solution (:func:`econ.bargaining.duopoly_nash_solution`); the cap from
    :func:`econ.caps.next_low_quality`.
    """

    q_l0: float
    q_h0: float
    config: DefectionFreeConfig = field(default_factory=DefectionFreeConfig)
    name: str = "defection-free"
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
        ratio = min(q_l_prev / q_h_prev, math.nextafter(1.0, 0.0))
        hat_q = float(caps.B(ratio, q_h_new / q_h_prev)) * q_h_new
        cap = caps.next_low_quality(
            q_l_prev,
            q_h_prev,
            q_h_new,
            rho_star=self.rho_star,
            q_l_star=self.q_l_star,
            cap_mode=self.config.cap_mode,
        )
        return LowMove(joint=True, cap=float(cap), hat_q=hat_q)


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
    """
    if not pooled:
        raise ValueError("estimate_q_max needs the qualities of at least one pooled round")
    return float(max(q_h0, *(float(m.quality.max()) for m in pooled)))


# --------------------------------------------------------------------------- play


class Firms(Protocol):
    """Two firms that can train: the convex toy, or real models (the torch driver)."""

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
        (``inner="gd"``, spec ch3 §8.3), or Algorithm 5's literal ``while q <= cap`` loop
        (``inner="while"``, typo 6)."""
        ...


@dataclass(frozen=True, slots=True)
class Play:
    """The qualities of every round of a scheme, round 0 being the start.

    ``cap`` is the quality the low firm was allowed this round (NaN: uncapped), ``hat_q``
    Algorithm 5's :math:`\\hat q` (NaN where not computed). ``measured`` are the qualities the firms' models have; in the ``oracle`` inner mode the
    low firm's quality is set by the rule instead (``q_l`` then differs from
    ``measured``), as in the thesis's experiments (spec ch3 typo 26).
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


def play(scheme: Scheme, firms: Firms, rounds: int, *, inner: str = "gd") -> Play:
    """Run ``scheme`` on ``firms`` for ``rounds`` rounds.

    Each round the high firm moves first (undone when its quality fell and the move asks
    for it), then the low firm: a free round of training, or a capped raise (``inner``
    ``"gd"``: guarded gradient steps; ``"oracle"``: the low quality is *set* to the cap,
    the thesis's quality-level simulation; ``"while"``: the literal loop of Algorithm 5).
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


# --------------------------------------------------------------------------- audit


def revenue_slack(q_l: ArrayLike, q_h: ArrayLike, tolerance: float) -> NDArray[np.float64]:
    """Largest change of either revenue when each quality is off by at most ``tolerance``.

    The four corners :math:`(q_l \\pm \\epsilon, q_h \\pm \\epsilon)` (clipped to [0, 1]) of the
    literal revenues (3.4); 0 when ``tolerance`` is 0.
    """
    eps = float(non_negative("tolerance", tolerance))
    ql, qh = np.broadcast_arrays(np.asarray(q_l, float), np.asarray(q_h, float))
    ul, uh = duopoly.revenues(ql, qh, literal=True)
    worst = np.zeros(ql.shape)
    if eps == 0.0:
        return worst
    for dl in (-eps, eps):
        for dh in (-eps, eps):
            vl, vh = duopoly.revenues(np.clip(ql + dl, 0, 1), np.clip(qh + dh, 0, 1), literal=True)
            worst = np.maximum(worst, np.maximum(np.abs(vl - ul), np.abs(vh - uh)))
    return worst


@dataclass(frozen=True, slots=True)
class RevenueAudit:
    """Round-by-round revenue changes and whether any fell beyond the allowed slack."""

    change_low: NDArray[np.float64]
    change_high: NDArray[np.float64]
    slack: NDArray[np.float64]
    never_decreased: bool
    min_change_low: float
    min_change_high: float
    falls: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "never_decreased": self.never_decreased,
            "min_change_low": self.min_change_low,
            "min_change_high": self.min_change_high,
            "rounds_with_a_fall": list(self.falls),
        }


def revenue_audit(
    q_l: ArrayLike, q_h: ArrayLike, *, tolerance: float = 0.0, atol: float = 1e-12
) -> RevenueAudit:
    """Did either firm's revenue fall from one round to the next (Proposition 3)?

    A fall counts when :math:`U_t - U_{t-1} < -(s_{t-1} + s_t + \\text{atol})`, with
    :math:`s` the :func:`revenue_slack` of the measurement ``tolerance``. Revenues use the
    literal labels of (3.4).
    """
    ql, qh = np.asarray(q_l, float), np.asarray(q_h, float)
    if ql.shape != qh.shape or ql.ndim != 1 or ql.size < 2:
        raise ValueError("q_l and q_h must be 1-d sequences of equal length >= 2")
    ul, uh = duopoly.revenues(ql, qh, literal=True)
    s = revenue_slack(ql, qh, tolerance)
    allowed = s[:-1] + s[1:] + atol
    dl, dh = np.diff(ul), np.diff(uh)
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


@dataclass(frozen=True, slots=True)
class PlayReport:
    """A scheme's run in the economics' terms (the JSON of ``collabecon defection-free``).

    Attributes
    ----------
    rows
        Per round: ``t, q_l, q_h, U_l, U_h, rho, nash_product`` (revenues with the literal
        labels of (3.4), as the thesis's figures; the Nash product
        :math:`(U_l - U_{l,0})(U_h - U_{h,0})` of D9 from them).
    audit
        :func:`revenue_audit` of the run.
    rho_star
        :math:`\\rho^*` of the Nash bargaining solution from the start, with ``q_max``.
    nash_max
        :math:`\\max_{q_l} N(q_l, q_{h,T})`: the Nash product's maximum at the high quality
        reached (Proposition 2 with :math:`Q := q_{h,T}`).
    final_nash_gap
        ``nash_max`` minus the final Nash product.
    """

    scheme: str
    rows: tuple[dict[str, float], ...]
    audit: RevenueAudit
    rho_star: float
    q_max: float
    nash_max: float
    final_nash_gap: float

    def to_dict(self) -> dict[str, Any]:
        """The JSON of the issue: scheme, rounds, the audit, rho*, the Nash maximum and gap."""
        return {
            "scheme": self.scheme,
            "rounds": list(self.rows),
            "revenue_never_decreased": self.audit.never_decreased,
            "min_revenue_change": {
                "low": self.audit.min_change_low,
                "high": self.audit.min_change_high,
            },
            "rho_star": self.rho_star,
            "nash_max": self.nash_max,
            "final_nash_gap": self.final_nash_gap,
        }


def report(run: Play, *, q_max: float = 1.0, tolerance: float = 0.0) -> PlayReport:
    """Revenues, ratio, Nash product, audit and Nash gap of a :class:`Play`."""
    ql, qh = run.q_l, run.q_h
    q_l0, q_h0 = float(ql[0]), float(qh[0])
    ul, uh = duopoly.revenues(ql, qh, literal=True)
    nash = (ul - ul[0]) * (uh - uh[0])
    rho = np.divide(ql, qh, out=np.zeros_like(ql), where=qh > 0)
    rows = tuple(
        {
            "t": t,
            "q_l": float(ql[t]),
            "q_h": float(qh[t]),
            "U_l": float(ul[t]),
            "U_h": float(uh[t]),
            "rho": float(rho[t]),
            "nash_product": float(nash[t]),
        }
        for t in range(ql.size)
    )
    start = min(q_l0, q_h0), max(q_l0, q_h0)
    reference = bargaining.duopoly_nash_solution(*start, max(start[1], q_max))
    reached = bargaining.duopoly_nash_solution(*start, max(start[1], float(qh[-1])))
    nash_max = float(reached.nash_product)
    return PlayReport(
        scheme=run.scheme,
        rows=rows,
        audit=revenue_audit(ql, qh, tolerance=tolerance),
        rho_star=float(reference.rho_star),
        q_max=float(q_max),
        nash_max=nash_max,
        final_nash_gap=nash_max - float(nash[-1]),
    )


# --------------------------------------------------------------------------- the chapter's claims


@dataclass(frozen=True, slots=True)
class Claim:
    """One qualitative claim of the chapter about a run, with the numbers it rests on."""

    claim: str
    holds: bool
    evidence: str

    def to_dict(self) -> dict[str, Any]:
        return {"claim": self.claim, "holds": self.holds, "evidence": self.evidence}


def _ends(rep: PlayReport, key: str) -> tuple[float, float]:
    return float(rep.rows[0][key]), float(rep.rows[-1][key])


def scheme_claims(reports: dict[str, PlayReport], *, nash_gap: float = 0.05) -> list[Claim]:
    """Werner (2024) ch. 3's claims about the schemes, checked on runs from one start.

    Defection-free (Prop. 3, 5; Fig. 3.3): no revenue fell, both qualities rose, the ratio
    moved towards :math:`\\rho^*`, and the Nash product ends within ``nash_gap`` (relative)
    of its maximum at the reached :math:`q_h`. Complete collaboration (Lemma 23): the
    quality gap and the high firm's revenue shrink. Only the high firm shares (Fig. 3.2a):
    the high firm loses revenue. Only the low firm shares (Fig. 3.2b): both revenues rise,
    and the low firm ends below its defection-free revenue. Claims about schemes missing
    from ``reports`` are skipped.
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
        out.append(
            Claim(
                f"defection-free: Nash product within {nash_gap:.0%} of its maximum",
                rel <= nash_gap,
                f"N_T {df.rows[-1]['nash_product']:.3g}, max {df.nash_max:.3g}, gap {rel:.1%}",
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

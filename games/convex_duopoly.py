r"""Two firms with convex quadratic losses: Algorithm 5 with real gradient steps, no torch.

Firm :math:`j \in \{l, h\}` has the loss :math:`f(x; j) = \sum_k a_{j,k} (x_k - u_{j,k})^2`
on its data, the joint objective is :math:`f = (f(\cdot; l) + f(\cdot; h))/2` (eq. 3.1)
and a model's quality is :math:`q(x) = 1 - f(x)` (Werner 2024, ch. 3, D3). The joint
objective is :math:`L`-smooth with :math:`L = \max_k (a_{l,k} + a_{h,k})` and its best
quality is :math:`Q = 1 - f(x^*)`, :math:`x^* = (a_l u_l + a_h u_h)/(a_l + a_h)`.

The thesis's toy (spec ch3 C23-C24) is :func:`thesis_toy`: :math:`u_l = (-1, 0)`,
:math:`u_h = (1, 0)`, :math:`a = 1/64`, so :math:`q(x) = 1 - (\|x\|^2 + 1)/64` and
:math:`Q = 63/64`. Propositions 3-5 are registered here as checked on such problems with the
guarded gradient-descent inner loop (ids ``thesis.ch3.prop*.gd``), beside the quality-level
checks of :mod:`econ.bargaining` and :mod:`econ.caps`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from econ import duopoly
from econ.qualities import ModelQualities
from econ.validation import choice, in_interval, positive, positive_int
from games.defection_free import (
    DefectionFree,
    DefectionFreeConfig,
    HighMove,
    Play,
    paced_step_size,
    play,
    revenue_audit,
)

__all__ = ["QuadraticFirms", "random_firms", "thesis_toy"]


@dataclass
class QuadraticFirms:
    """Two firms with diagonal quadratic losses; implements :class:`games.defection_free.Firms`.

    Parameters
    ----------
    centre, curvature
        Arrays ``(2, d)``: rows are the low and the high firm's optimum :math:`u_j` and
        diagonal curvature :math:`a_j > 0`.
    x_low, x_high
        Starting parameters of the two models.
    const_step
        An unpaced step is ``const_step / L`` (``const_step`` in (0, 1]).
    max_inner, tol, max_halvings
        The guarded inner loop of the low firm (spec ch3 §8.3).
    """

    centre: NDArray[np.float64]
    curvature: NDArray[np.float64]
    x_low: NDArray[np.float64]
    x_high: NDArray[np.float64]
    const_step: float = 0.5
    max_inner: int = 1000
    tol: float = 1e-13
    max_halvings: int = 60
    _previous_high: NDArray[np.float64] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.centre = np.array(self.centre, dtype=np.float64)
        self.curvature = positive("curvature", self.curvature).astype(np.float64)
        if self.centre.shape != self.curvature.shape or self.centre.shape[0] != 2:
            raise ValueError("centre and curvature must both have shape (2, d)")
        self.x_low = np.array(self.x_low, dtype=np.float64)
        self.x_high = np.array(self.x_high, dtype=np.float64)
        in_interval("const_step", self.const_step, 0.0, 1.0, low_open=True)

    # -- the objective
    def losses(self, x: ArrayLike) -> NDArray[np.float64]:
        """:math:`(f(x; l), f(x; h))`."""
        return np.sum(self.curvature * (np.asarray(x) - self.centre) ** 2, axis=1)

    def quality(self, x: ArrayLike) -> float:
        """:math:`q(x) = 1 - (f(x; l) + f(x; h))/2`."""
        return float(1.0 - self.losses(x).mean())

    def _gradient(self, x: NDArray[np.float64], joint: bool, firm: int) -> NDArray[np.float64]:
        if joint:
            return np.sum(self.curvature * (x - self.centre), axis=0)
        return 2.0 * self.curvature[firm] * (x - self.centre[firm])

    def _smoothness(self, joint: bool, firm: int) -> float:
        return float(np.max(self.curvature.sum(0) if joint else 2.0 * self.curvature[firm]))

    @property
    def smoothness(self) -> float:
        """:math:`L` of the joint objective."""
        return self._smoothness(True, 0)

    @property
    def q_max(self) -> float:
        """:math:`Q = 1 - f(x^*)`, the best quality of the joint objective."""
        best = (self.curvature * self.centre).sum(0) / self.curvature.sum(0)
        return self.quality(best)

    # -- the Firms protocol
    def measure(self) -> ModelQualities:
        q = np.array([self.quality(self.x_low), self.quality(self.x_high)])
        return ModelQualities(
            names=("low", "high"), quality=q, metric="1-loss", n_eval=np.ones(2, np.int64)
        )

    def _step(
        self, x: NDArray[np.float64], joint: bool, firm: int, pace: float | None
    ) -> NDArray[np.float64]:
        g = self._gradient(x, joint, firm)
        cap = 1.0 / self._smoothness(joint, firm)
        alpha = (
            paced_step_size(pace, self.quality(x), float(g @ g), cap)
            if pace is not None
            else self.const_step * cap
        )
        return x - alpha * g

    def step_high(self, move: HighMove) -> None:
        self._previous_high = self.x_high
        self.x_high = self._step(self.x_high, move.joint, 1, move.pace)

    def undo_high(self) -> None:
        if self._previous_high is None:
            raise ValueError("undo_high needs a step_high before it")
        self.x_high = self._previous_high

    def step_low(self, joint: bool) -> None:
        self.x_low = self._step(self.x_low, joint, 0, None)

    def raise_low(self, cap: float, inner: str) -> None:
        choice("inner", inner, ("gd", "while"))
        x, q = self.x_low, self.quality(self.x_low)
        step_max = 1.0 / self.smoothness
        for _ in range(self.max_inner):
            if inner == "while":  # Algorithm 5, lines 9-11, as printed
                if q > cap:
                    break
                x = x - step_max * self._gradient(x, True, 0)
                q = self.quality(x)
                continue
            gap = cap - q
            if gap <= self.tol:
                break
            g = self._gradient(x, True, 0)
            alpha = min(gap / float(g @ g), step_max)
            for _ in range(self.max_halvings):
                candidate = x - alpha * g
                q_new = self.quality(candidate)
                if q <= q_new <= cap:
                    break
                alpha /= 2.0
            else:
                break
            x, q = candidate, q_new
        self.x_low = x


def thesis_toy(x_low: ArrayLike, x_high: ArrayLike, **options: float) -> QuadraticFirms:
    """The convex toy of spec ch3 C23: :math:`q(x) = 1 - (\\|x\\|^2 + 1)/64`, :math:`Q = 63/64`."""
    return QuadraticFirms(
        centre=np.array([[-1.0, 0.0], [1.0, 0.0]]),
        curvature=np.full((2, 2), 1.0 / 64.0),
        x_low=np.asarray(x_low, dtype=np.float64),
        x_high=np.asarray(x_high, dtype=np.float64),
        **options,  # type: ignore[arg-type]
    )


def random_firms(
    seed: int | np.random.Generator | None = None, *, dim: int = 3, const_step: float = 0.5
) -> QuadraticFirms:
    """Random convex quadratic firms whose qualities stay in [0, 1] along any descent path.

    Centres in :math:`[-1, 1]^d`, curvatures in [0.5, 2] per coordinate, scaled so that the
    starting losses and the losses at either centre are at most 0.9; the low firm starts at
    the worse of two random points.
    """
    rng = np.random.default_rng(seed)
    dim = positive_int("dim", dim)
    centre = rng.uniform(-1.0, 1.0, (2, dim))
    curvature = rng.uniform(0.5, 2.0, (2, dim))
    starts = rng.uniform(-3.0, 3.0, (2, dim))

    def joint(x: NDArray[np.float64]) -> float:
        return float(np.sum(curvature * (x - centre) ** 2) / 2)

    worst = max(joint(p) for p in (*starts, *centre))
    curvature = curvature * (rng.uniform(0.3, 0.9) / worst)
    order = np.argsort([-joint(p) for p in starts])  # higher loss = the low firm
    return QuadraticFirms(
        centre=centre,
        curvature=curvature,
        x_low=starts[order[0]],
        x_high=starts[order[1]],
        const_step=const_step,
    )


# --------------------------------------------------------------------------------------------
# Propositions 3-5 with gradient-descent inner loops (Werner 2024, ch. 3; spec ch3 §8-9, C23-25)
# --------------------------------------------------------------------------------------------

from econ.propositions import Verdict, checked, proposition, refuted  # noqa: E402

_SRC = "Werner (2024), ch. 3"
_T1 = ((-5.0, 5.0), (2.0, 2.0))  # q_l0 = 13/64, q_h0 = 55/64 (Case 2)
_T2 = ((-5.0, 5.0), (float(np.sqrt(37.4)), 0.0))  # q_h0 = 0.4 (Case 1)


def _run(firms: QuadraticFirms, rounds: int, schedule: str = "const") -> tuple[DefectionFree, Play]:
    start = firms.measure()
    config = DefectionFreeConfig(q_max=firms.q_max, schedule=schedule)
    rule = DefectionFree(start["low"], start["high"], config)
    return rule, play(rule, firms, rounds)


@proposition(
    "thesis.ch3.prop3.gd",
    source=f"{_SRC}, Proposition 3, with the guarded inner loop of spec ch3 §8.3",
    statement="with real gradient steps on random convex quadratic firms, under paced and constant high schedules, no revenue ever falls under the reconciled Algorithm 5",
)
def _prop3_gd() -> Verdict:
    rng = np.random.default_rng(2024)
    worst, rounds = np.inf, 0
    for i, stream in enumerate(rng.spawn(8)):
        schedule = ("paced", "const")[i % 2]
        firms = random_firms(stream, const_step=float(stream.uniform(0.1, 1.0)))
        _, run = _run(firms, 120, schedule=schedule)
        audit = revenue_audit(run.q_l, run.q_h)
        worst = min(worst, audit.min_change_low, audit.min_change_high)
        rounds += run.q_l.size - 1
        if not audit.never_decreased:
            return refuted("a revenue fell", {"problem": i, "round": audit.falls[0]})
    return checked(
        f"8 random convex firm pairs x 120 rounds, gd inner loop: worst revenue step {worst:.1e}",
        rounds,
    )


@proposition(
    "thesis.ch3.prop4.gd",
    source=f"{_SRC}, Proposition 4, on the convex toy with gradient steps",
    statement="if q_l0 > q_l*, the low firm never updates, so Algorithm 5 cannot reach (q_l*, q_h*)",
)
def _prop4_gd() -> Verdict:
    # q_l0 = 0.6, q_h0 = 0.9 on the toy: ||x_l0||^2 = 24.6, ||x_h0||^2 = 5.4
    firms = thesis_toy((np.sqrt(24.6), 0.0), (0.0, np.sqrt(5.4)))
    x0 = firms.x_low.copy()
    rule, run = _run(firms, 200)
    if not (np.array_equal(firms.x_low, x0) and rule.q_l_star < run.q_l[0]):
        return refuted("the low firm moved", {"q_l_final": float(run.q_l[-1])})
    return checked(
        f"toy start (0.6, 0.9): q_l* = {rule.q_l_star:.6f} < 0.6 and x_l unchanged for 200 rounds",
        200,
    )


@proposition(
    "thesis.ch3.prop5.gd",
    source=f"{_SRC}, Proposition 5, on the convex toy with gradient steps (spec ch3 C23-C24)",
    statement="if q_l0 <= q_l*, the reconciled Algorithm 5 with gd inner loops converges to (q_l*, Q) without a revenue falling",
)
def _prop5_gd() -> Verdict:
    worst_gap, worst_drop, n = 0.0, np.inf, 0
    for start in (_T1, _T2):
        for schedule in ("paced", "const"):
            firms = thesis_toy(*start)
            rule, run = _run(firms, 400, schedule=schedule)
            audit = revenue_audit(run.q_l, run.q_h)
            gap = max(abs(run.q_l[-1] - rule.q_l_star), abs(run.q_h[-1] - firms.q_max))
            worst_gap = max(worst_gap, gap)
            worst_drop = min(worst_drop, audit.min_change_low, audit.min_change_high)
            n += 1
    if worst_gap > 1e-9 or worst_drop < -1e-12:
        return refuted("no convergence or a revenue fell", {"gap": worst_gap, "drop": worst_drop})
    return checked(
        f"toys T1 (Case 2) and T2 (Case 1) x paced/constant, 400 rounds: |q_T - q*| <= {worst_gap:.1e}, "
        f"worst revenue step {worst_drop:.1e}",
        n,
    )


@proposition(
    "thesis.ch3.alg5.while",
    source=f"{_SRC}, Algorithm 5, lines 9-11 as printed (spec ch3 typo 6)",
    statement="the low firm updates `while q_l,t <= hat q_l,t`, and no revenue falls",
    holds=False,
)
def _alg5_while() -> Verdict:
    firms = thesis_toy(*_T1)
    start = firms.measure()
    rule = DefectionFree(start["low"], start["high"], DefectionFreeConfig(q_max=firms.q_max))
    run = play(rule, firms, 1, inner="while")
    audit = revenue_audit(run.q_l, run.q_h)
    _, uh = duopoly.revenues(run.q_l, run.q_h, literal=True)
    return refuted(
        "the loop stops only once q_l has passed the cap, so the high firm's revenue falls",
        {
            "q_l_after": float(run.q_l[1]),
            "cap": float(run.cap[1]),
            "U_h_before": float(uh[0]),
            "U_h_after": float(uh[1]),
            "never_decreased": audit.never_decreased,
        },
    )


@proposition(
    "thesis.ch3.alg5.while.corrected",
    source=f"{_SRC}, Algorithm 5 with the guarded inner loop of spec ch3 §8.3",
    statement="steps of size min(gap/||g||^2, 1/L), halved when they would pass the cap, end within tol below the cap and never above it",
)
def _alg5_while_corrected() -> Verdict:
    firms = thesis_toy(*_T1)
    _, run = _run(firms, 60)
    moved = ~np.isnan(run.cap) & (run.cap > np.roll(run.q_l, 1))
    over = float(np.max(run.q_l[moved] - run.cap[moved]))
    short = float(np.max(run.cap[moved] - run.q_l[moved]))
    if over > 0 or short > 1e-12:
        return refuted("the loop passed or missed the cap", {"over": over, "short": short})
    return checked(
        f"toy T1, 60 rounds: {int(moved.sum())} capped raises, none above the cap, at most {short:.1e} below",
        int(moved.sum()),
    )

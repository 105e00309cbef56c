r"""Two firms with convex quadratic losses: Algorithm 5 with real gradient steps, no torch.

Firm :math:`j \in \{l, h\}` has the loss :math:`f(x; j) = \sum_k a_{j,k} (x_k - u_{j,k})^2`
on its data, the joint objective is :math:`f = (f(\cdot; l) + f(\cdot; h))/2` (eq. 3.1)
and a model's quality is :math:`q(x) = 1 - f(x)` (Werner 2024, ch. 3, §3.2). The joint
objective is :math:`L`-smooth with :math:`L = \max_k (a_{l,k} + a_{h,k})` and its best
quality is :math:`Q = 1 - f(x^*)`, :math:`x^* = (a_l u_l + a_h u_h)/(a_l + a_h)`.

A small symmetric instance is :func:`thesis_toy`: :math:`u_l = (-1, 0)`,
:math:`u_h = (1, 0)`, :math:`a = 1/64`, so :math:`q(x) = 1 - (\|x\|^2 + 1)/64` and
:math:`Q = 63/64`. Propositions 3-5 are registered here as checked on such problems with
real gradient steps (ids ``thesis.ch3.prop*.gd``), beside the quality-level checks of
:mod:`econ.bargaining` and :mod:`econ.caps`, and so is Algorithm 5's inner loop
(``thesis.ch3.alg5.while``).
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
    paced_step_size,
    play,
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
        The low firm's guarded inner loop (:meth:`raise_low`).
    loop_step
        The step of Algorithm 5's printed inner loop, in units of :math:`1/L` (in (0, 1]).
    """

    centre: NDArray[np.float64]
    curvature: NDArray[np.float64]
    x_low: NDArray[np.float64]
    x_high: NDArray[np.float64]
    const_step: float = 0.5
    max_inner: int = 1000
    tol: float = 1e-13
    max_halvings: int = 60
    loop_step: float = 1.0
    _previous_high: NDArray[np.float64] | None = field(default=None, repr=False)
    _visited: list[NDArray[np.float64]] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        self.centre = np.array(self.centre, dtype=np.float64)
        self.curvature = positive("curvature", self.curvature).astype(np.float64)
        if self.centre.shape != self.curvature.shape or self.centre.shape[0] != 2:
            raise ValueError("centre and curvature must both have shape (2, d)")
        self.x_low = np.array(self.x_low, dtype=np.float64)
        self.x_high = np.array(self.x_high, dtype=np.float64)
        in_interval("const_step", self.const_step, 0.0, 1.0, low_open=True)
        in_interval("loop_step", self.loop_step, 0.0, 1.0, low_open=True)
        self._visited = [self.x_low, self.x_high]

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

    def max_loss(self) -> float:
        """The largest loss :math:`f(x; j)` of either firm at any parameters either model took.

        The thesis's losses lie in [0, 1] (§3.2); the checks use this to stay inside.
        """
        return float(max(self.losses(x).max() for x in self._visited))

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
        self._visited.append(self.x_high)

    def undo_high(self) -> None:
        if self._previous_high is None:
            raise ValueError("undo_high needs a step_high before it")
        self.x_high = self._previous_high

    def step_low(self, joint: bool) -> None:
        self.x_low = self._step(self.x_low, joint, 0, None)
        self._visited.append(self.x_low)

    def raise_low(self, cap: float, inner: str) -> None:
        r"""Raise the low firm's quality towards ``cap`` by steps on the joint objective.

        ``inner="gd"``: steps :math:`\alpha = \min\{(\text{cap} - q)/\|g\|^2, 1/L\}`, the
        proof of Proposition 3's step with :math:`1/L` for its 1 (docs/errata.md,
        ``thesis.ch3.prop3.step``), halved while the result would lower the quality or pass
        the cap. ``inner="while"``: Algorithm 5, lines 9-11, as printed, with
        :math:`\alpha_{l,t}` = ``loop_step``/L: step while :math:`q \le` cap, which ends only
        above it.
        """
        choice("inner", inner, ("gd", "while"))
        x, q = self.x_low, self.quality(self.x_low)
        step_max = 1.0 / self.smoothness
        for _ in range(self.max_inner):
            if inner == "while":  # Algorithm 5, lines 9-11, as printed
                if q > cap:
                    break
                x = x - self.loop_step * step_max * self._gradient(x, True, 0)
                q = self.quality(x)
                self._visited.append(x)
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
            self._visited.append(x)
        self.x_low = x


def thesis_toy(x_low: ArrayLike, x_high: ArrayLike, **options: float) -> QuadraticFirms:
    """The symmetric convex toy: :math:`q(x) = 1 - (\\|x\\|^2 + 1)/64`, :math:`Q = 63/64`."""
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
# Propositions 3-5 and Algorithm 5's inner loop with real gradient steps (Werner 2024, ch. 3)
# --------------------------------------------------------------------------------------------

from collections.abc import Callable, Iterator  # noqa: E402
from typing import Any  # noqa: E402

from econ import caps  # noqa: E402
from econ.propositions import Verdict, checked, proposition, refuted  # noqa: E402
from games.defection_free import LowMove  # noqa: E402

_SRC = "Werner (2024), ch. 3"
_PROPS = f"{_SRC}, §3.4 (pp. 64-69)"
_PROOFS = f"{_SRC}, §3.7 (pp. 70ff)"
_T1 = ((-5.0, 5.0), (2.0, 2.0))  # q_l0 = 13/64, q_h0 = 55/64 (rho_0 < rho*)
_T2 = ((-5.0, 5.0), (float(np.sqrt(37.4)), 0.0))  # q_h0 = 0.4 (rho_0 >= rho*)


@dataclass(frozen=True)
class _Recapped:
    """Algorithm 5's rule with the cap factor ``b_formula`` in place of :func:`econ.caps.B`.

    Gating and waiting are the rule's; where the rule computes a cap, it is recomputed as
    :math:`\\max(q_{l,t-1}, \\min(b(\\rho_{t-1}, q_{h,t}/q_{h,t-1}) q_{h,t}, \\rho^* q_{h,t}, q_l^*))`.
    """

    rule: DefectionFree
    b_formula: Callable[..., Any]

    @property
    def name(self) -> str:
        return self.rule.name

    def high_move(self, q_l: float, q_h: float) -> HighMove:
        return self.rule.high_move(q_l, q_h)

    def low_move(self, q_l_prev: float, q_h_prev: float, q_h_new: float) -> LowMove:
        move = self.rule.low_move(q_l_prev, q_h_prev, q_h_new)
        if move.hat_q is None:
            return move
        hat_q = float(self.b_formula(q_l_prev / q_h_prev, q_h_new / q_h_prev)) * q_h_new
        top = min(hat_q, self.rule.rho_star * q_h_new, self.rule.q_l_star)
        return LowMove(joint=True, cap=max(q_l_prev, top), hat_q=hat_q)


def _b_with_eleven(a: float, b: float) -> float:
    """:math:`B(a, b)` with the printed constant 12 replaced by 11 (stable form)."""
    return float(4.0 - 5.5 / (1.0 + np.sqrt(1.0 - 11.0 * (1.0 - a) / (b * (4.0 - a) ** 2))))


def _worst_revenue_step(q_l: NDArray[np.float64], q_h: NDArray[np.float64]) -> float:
    """The most negative round-to-round change of either revenue (labels of eq. 3.4)."""
    u_l, u_h = duopoly.revenues(q_l, q_h, literal=True)
    return float(min(np.diff(u_l).min(), np.diff(u_h).min()))


def _toy_start(rng: np.random.Generator) -> QuadraticFirms:
    """The toy from a uniform (q_l0, q_h0) with q_l0 < q_h0 < 63/64, in random directions."""
    q_l0, q_h0 = np.sort(rng.uniform(0.02, 0.97, 2))
    radius = np.sqrt(64.0 * (1.0 - np.array([q_l0, q_h0])) - 1.0)
    angles = rng.uniform(0.0, 2.0 * np.pi, 2)
    points = radius[:, None] * np.stack([np.cos(angles), np.sin(angles)], axis=1)
    return thesis_toy(points[0], points[1])


def _starts(seed: int, n_toy: int, n_random: int) -> Iterator[tuple[str, QuadraticFirms]]:
    """T1, T2, then of ``n_toy`` uniform toy starts and ``n_random`` :func:`random_firms`
    (seeded) those at which both firms' losses lie in [0, 1] (§3.2)."""
    yield "toy T1", thesis_toy(*_T1)
    yield "toy T2", thesis_toy(*_T2)
    rng = np.random.default_rng(seed)
    for i in range(n_toy):
        firms = _toy_start(rng)
        if firms.max_loss() <= 1.0:
            yield f"toy start {i}", firms
    for i, stream in enumerate(rng.spawn(n_random)):
        firms = random_firms(stream, const_step=float(stream.uniform(0.1, 1.0)))
        if firms.max_loss() <= 1.0:
            yield f"random firms {i}", firms


def _rule(firms: QuadraticFirms, **config: Any) -> DefectionFree:
    start = firms.measure()
    return DefectionFree(
        start["low"], start["high"], DefectionFreeConfig(q_max=firms.q_max, **config)
    )


@proposition(
    "thesis.ch3.prop3.gd",
    source=f"{_PROPS}, Proposition 3, with the low firm's steps of {_PROOFS}, proof of "
    "Proposition 3 (1/L for its 1: docs/errata.md, thesis.ch3.prop3.step)",
    statement="with real gradient steps on convex quadratic firms, the high firm paced or at a "
    "constant step <= 1/L and the low firm raised by gradient steps up to min(hat q_{l,t}, "
    "rho* q_{h,t}, q_l*), neither revenue falls in any round",
    perturb={"b_formula": _b_with_eleven},
)
def _prop3_gd(b_formula: Callable[..., Any] = caps.B) -> Verdict:
    worst, n, outside = np.inf, 0, 0
    for i, (label, firms) in enumerate(_starts(2024, n_toy=20, n_random=30)):
        schedule = ("paced", "const")[i % 2]
        rule = _Recapped(_rule(firms, schedule=schedule), b_formula)
        run = play(rule, firms, 60)
        if firms.max_loss() > 1.0:
            outside += 1
            continue
        step = _worst_revenue_step(run.q_l, run.q_h)
        n += 1
        if step < -1e-12 or np.any(np.diff(run.q_l) < 0):
            u_l, u_h = duopoly.revenues(run.q_l, run.q_h, literal=True)
            t = int(np.argmin(np.minimum(np.diff(u_l), np.diff(u_h))))
            return refuted(
                "a revenue falls",
                {
                    "start": label,
                    "schedule": schedule,
                    "worst_revenue_step": step,
                    "round": t + 1,
                    "q_l": run.q_l[t : t + 2].tolist(),
                    "q_h": run.q_h[t : t + 2].tolist(),
                },
            )
        worst = min(worst, step)
    return checked(
        f"worst round-to-round revenue change {worst:.1e} (>= -1e-12)",
        n,
        drawn="one trajectory of 60 rounds per start: toys T1 and T2, of 20 toy starts with "
        "(q_l0, q_h0) uniform below 63/64 and 30 random convex quadratic firm pairs (seed 2024) "
        "those with both firms' losses in [0, 1], the high firm paced and at a constant step in "
        f"turn; {outside} runs whose losses left [0, 1] skipped",
    )


def _copy(firms: QuadraticFirms) -> QuadraticFirms:
    return QuadraticFirms(
        centre=firms.centre,
        curvature=firms.curvature,
        x_low=firms.x_low.copy(),
        x_high=firms.x_high.copy(),
        const_step=firms.const_step,
        loop_step=firms.loop_step,
    )


def _runs(side: str, rounds: int, n_starts: int) -> tuple[list[dict[str, Any]], int, int]:
    """Runs of Algorithm 5 from the first ``n_starts`` starts with q_l0 above/below q_l*.

    Each start runs twice, the high firm paced and at a constant step. Returns one record
    per run, the number of starts used, and the number of starts on the other side plus
    runs whose losses left [0, 1].
    """
    records: list[dict[str, Any]] = []
    skipped = used = 0
    for label, firms in _starts(7, n_toy=60, n_random=60):
        probe = _rule(firms)
        if (probe.q_l0 > probe.q_l_star) != (side == "above"):
            skipped += 1
            continue
        used += 1
        for schedule in ("paced", "const"):
            trial = _copy(firms)
            rule = _rule(trial, schedule=schedule)
            run = play(rule, trial, rounds)
            if trial.max_loss() > 1.0:
                skipped += 1
                continue
            records.append(
                {
                    "start": label,
                    "schedule": schedule,
                    "q_l0_minus_q_l_star": rule.q_l0 - rule.q_l_star,
                    "low_moved": not np.array_equal(trial.x_low, firms.x_low),
                    "gap": float(
                        max(abs(run.q_l[-1] - rule.q_l_star), abs(run.q_h[-1] - trial.q_max))
                    ),
                    "gap_low": float(abs(run.q_l[-1] - rule.q_l_star)),
                    "revenue_step": _worst_revenue_step(run.q_l, run.q_h),
                }
            )
        if used == n_starts:
            break
    return records, used, skipped


_DRAWN_RUNS = (
    "{n} runs from the first {starts} starts with q_l0 {side} q_l* among toys T1 and T2, toy "
    "starts with (q_l0, q_h0) uniform below 63/64 and random convex quadratic firm pairs (seed 7), "
    "those with both firms' losses in [0, 1], each run with the high firm paced and at a constant "
    "step; {skipped} starts on the other side or runs leaving [0, 1] skipped"
)


@proposition(
    "thesis.ch3.prop4.gd",
    source=f"{_PROPS}, Proposition 4 and its proof (qualities never fall, assumption A2)",
    statement="if q_l0 > q_l*, Algorithm 5 cannot converge to (q_l*, q_h*): on convex quadratic "
    "firms with gradient steps the low firm never moves, so q_l,T - q_l* = q_l0 - q_l* > 0",
    perturb={"side": "below"},
)
def _prop4_gd(side: str = "above") -> Verdict:
    records, used, skipped = _runs(side, rounds=60, n_starts=20)
    for r in records:
        if r["low_moved"] or not float(r["gap_low"]) > 1e-6:
            return refuted("the low firm moved, or q_l,T came within 1e-6 of q_l*", r)
    least = min(float(r["q_l0_minus_q_l_star"]) for r in records)
    return checked(
        f"x_l never changed in 60 rounds and q_l,T - q_l* = q_l0 - q_l* >= {least:.3f}",
        len(records),
        drawn=_DRAWN_RUNS.format(n=len(records), starts=used, side=">", skipped=skipped),
    )


@proposition(
    "thesis.ch3.prop5.gd",
    source=f"{_PROPS}, Proposition 5, with the pacing of {_PROOFS}, proof of Proposition 5",
    statement="if q_l0 <= q_l*, Algorithm 5 with gradient steps on convex quadratic firms (low "
    "firm capped at min(hat q_{l,t}, rho* q_{h,t}, q_l*)) reaches (q_l*, Q) within 1e-9 in 150 "
    "rounds, no revenue falling",
    perturb={"side": "above"},
)
def _prop5_gd(side: str = "below") -> Verdict:
    records, used, skipped = _runs(side, rounds=150, n_starts=20)
    for r in records:
        if float(r["gap"]) > 1e-9 or float(r["revenue_step"]) < -1e-12:
            return refuted("no convergence to (q_l*, Q), or a revenue fell", r)
    gap = max(float(r["gap"]) for r in records)
    drop = min(float(r["revenue_step"]) for r in records)
    return checked(
        f"|(q_l,T, q_h,T) - (q_l*, Q)| <= {gap:.1e}; worst revenue step {drop:.1e}",
        len(records),
        drawn=_DRAWN_RUNS.format(n=len(records), starts=used, side="<=", skipped=skipped),
    )


def _printed_rounds(inner: str, n_random: int) -> tuple[list[dict[str, Any]], int]:
    """One round of Algorithm 5 as printed (line 7's gate, hat q of step 8) from each start.

    The high firm steps as Algorithm 5's line 3 allows (paced, or a constant step <= 1/L);
    the low firm's loop is ``inner``. Starts at which line 7's gate closes, or a loss leaves
    [0, 1], are skipped and counted.
    """
    records, gated = [], 0
    for i, (label, firms) in enumerate(_starts(11, n_toy=n_random, n_random=n_random)):
        schedule = ("const", "paced")[i % 2]
        firms.loop_step = 0.05
        rule = _rule(firms, schedule=schedule, cap_mode="literal", gating="line7")
        run = play(rule, firms, 1, inner=inner)
        if np.isnan(run.hat_q[1]) or firms.max_loss() > 1.0:
            gated += 1
            continue
        u_l, u_h = duopoly.revenues(run.q_l, run.q_h, literal=True)
        records.append(
            {
                "start": label,
                "schedule": schedule,
                "q_l_prev": float(run.q_l[0]),
                "q_h_prev": float(run.q_h[0]),
                "q_h_new": float(run.q_h[1]),
                "hat_q": float(run.hat_q[1]),
                "q_l_new": float(run.q_l[1]),
                "U_l_change": float(u_l[1] - u_l[0]),
                "U_h_change": float(u_h[1] - u_h[0]),
            }
        )
    return records, gated


def _alg5_loop(inner: str, reach: float | None) -> Verdict:
    """Rounds of Algorithm 5 with the loop ``inner``; ``reach``: how close below hat q it ends."""
    records, gated = _printed_rounds(inner, n_random=80)
    failing = [
        r
        for r in records
        if float(r["q_l_new"]) > float(r["hat_q"])
        or min(float(r["U_l_change"]), float(r["U_h_change"])) < -1e-12
    ]
    if failing:  # a round where the low firm stays below the high firm, if there is one
        r = next((r for r in failing if r["q_l_new"] <= r["q_h_new"]), failing[0])
        return refuted(
            f"the loop ends above hat q_{{l,t}} or a revenue falls in {len(failing)} of "
            f"{len(records)} rounds. Read as printed, `while q_{{l,t}} <= hat q_{{l,t}}` ends only "
            "once q_{l,t} > hat q_{l,t}, whatever the step sizes, which is past the right root of "
            "(3.14), so U_h falls. Inside the hypotheses, checked in code: convex quadratic "
            "L-smooth losses, both firms' losses in [0, 1] at every point visited, alpha_h <= 1/L "
            "(line 3), alpha_l = 1/(20L), line 7's gate open",
            r,
        )
    short = max(float(r["hat_q"]) - float(r["q_l_new"]) for r in records)
    if reach is not None and short > reach:
        return refuted(f"the loop ends more than {reach} below hat q", {"shortfall": short})
    return checked(
        f"q_{{l,t-1}} <= q_{{l,t}} <= hat q_{{l,t}}, at most {short:.1e} below it, and neither "
        "revenue falls",
        len(records),
        drawn=f"one round from each of toys T1, T2, 80 uniform toy starts and 80 random convex "
        f"quadratic firm pairs (seed 11), high firm paced or at a constant step in turn; "
        f"{gated} starts where line 7's gate closes or a loss leaves [0, 1] skipped",
    )


@proposition(
    "thesis.ch3.alg5.while",
    source=f"{_PROPS}, Algorithm 5, lines 9-11",
    statement="as printed: the low firm updates `while q_{l,t} <= hat q_{l,t}`, and no revenue "
    "falls (Proposition 3)",
    holds=False,
    perturb={"inner": "gd"},
)
def _alg5_while(inner: str = "while") -> Verdict:
    return _alg5_loop(inner, reach=None)


@proposition(
    "thesis.ch3.alg5.while.corrected",
    source=f"{_PROPS}, Algorithm 5, lines 9-11, with the step of {_PROOFS}, proof of Proposition 3",
    statement="lines 9-11 as a guarded loop: steps min{(hat q_{l,t} - q_{l,t})/||g||^2, 1/L}, "
    "halved when the result would pass hat q_{l,t} or lower q_{l,t}, end at most 1e-9 below "
    "hat q_{l,t} and never above it, and no revenue falls",
    perturb={"inner": "while"},
)
def _alg5_while_corrected(inner: str = "gd") -> Verdict:
    return _alg5_loop(inner, reach=1e-9)

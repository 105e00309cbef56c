r"""Algorithm 5's dynamics checked: Propositions 3-5, Theorem 5, Corollary 1 (Werner 2024, ch. 3).

Two families of checks of :mod:`games.defection_free`'s rule on the convex firms of
:mod:`games.quadratic_firms`:

* with real gradient steps on :func:`~games.quadratic_firms.thesis_toy` and
  :func:`~games.quadratic_firms.random_firms` (ids ``thesis.ch3.prop*.gd`` and Algorithm 5's
  inner loop, ``thesis.ch3.alg5.while``), run by :func:`games.defection_free.play`;
* on the toy's qualities, vectorised over hundreds of starts (``thesis.ch3.prop4``,
  ``.prop5``, ``.thm5``, ``.cor1``): along the toy's gradient path the high firm's quality
  has a closed form, its step is :func:`games.defection_free.paced_step_size` or a constant,
  and the low firm steps to :func:`econ.quality_caps.next_low_quality`.

The quality-level results these rest on (the cap :math:`B`, Proposition 3, the Nash
bargaining solution) are registered in :mod:`econ.quality_caps` and :mod:`econ.bargaining`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike, NDArray

from econ import duopoly, quality_caps
from econ.bargaining import duopoly_nash_solution, nash_product
from econ.duopoly_propositions import same_expression
from econ.propositions import Verdict, checked, on_points, proposition, refuted
from games.defection_free import (
    B_TILDE,
    DefectionFree,
    DefectionFreeConfig,
    paced_step_size,
    play,
)
from games.quadratic_firms import QuadraticFirms, random_firms, thesis_toy

_SRC = "Werner (2024), ch. 3"
_PROPS = f"{_SRC}, §3.4 (pp. 64-69)"
_PROOFS = f"{_SRC}, §3.7 (pp. 70ff)"
_THESIS = "Werner (2024), Collaborative Learning: Aligning Goals and Outcomes, ch. 3"
_S34 = f"{_THESIS}, section 3.4 (pp. 64-69)"
_S37 = f"{_THESIS}, section 3.7 (pp. 70ff)"


# --------------------------------------------------------------------------------------------
# Real gradient steps: Propositions 3-5 and Algorithm 5's inner loop
# --------------------------------------------------------------------------------------------

_T1 = ((-5.0, 5.0), (2.0, 2.0))  # q_l0 = 13/64, q_h0 = 55/64 (rho_0 < rho*)
_T2 = ((-5.0, 5.0), (float(np.sqrt(37.4)), 0.0))  # q_h0 = 0.4 (rho_0 >= rho*)


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


def _rule(
    firms: QuadraticFirms, cap_factor: Callable[..., Any] = quality_caps.cap_ratio, **config: Any
) -> DefectionFree:
    start = firms.measure()
    return DefectionFree(
        start["low"],
        start["high"],
        DefectionFreeConfig(q_max=firms.q_max, **config),
        cap_factor=cap_factor,
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
def _prop3_gd(b_formula: Callable[..., Any] = quality_caps.cap_ratio) -> Verdict:
    worst, n, outside = np.inf, 0, 0
    for i, (label, firms) in enumerate(_starts(2024, n_toy=20, n_random=30)):
        schedule = ("paced", "const")[i % 2]
        rule = _rule(firms, b_formula, schedule=schedule)
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


# --------------------------------------------------------------------------------------------
# The toy's qualities over many starts: Propositions 4-5, Theorem 5, Corollary 1
# --------------------------------------------------------------------------------------------

#: The convex toy :func:`~games.quadratic_firms.thesis_toy`: f(x) = (||x||^2 + 1)/64 for both
#: firms, so q(x) = 1 - f(x), Q = 63/64, grad f = x/32 and L = 1/32. Every quality in
#: [q(x), Q] is one gradient step from x (the step runs straight to the minimiser 0), so the
#: low firm can choose its learning rate to land on any target quality: the oracle low-firm
#: update of quality_caps.next_low_quality.
_TOY = thesis_toy((0.0, 0.0), (0.0, 0.0))
_TOY_Q = _TOY.q_max
_TOY_L = _TOY.smoothness


def _toy_quality(norm2: NDArray[np.float64]) -> NDArray[np.float64]:
    """The toy's quality 1 - (||x||^2 + 1)/64 at points of squared norm ``norm2``."""
    return 1 - (norm2 + 1) / 64


def _toy_high_path(qh0: ArrayLike, alpha: ArrayLike | None, rounds: int) -> tuple[NDArray, NDArray]:
    """High-firm qualities and step sizes of gradient descent on the toy, one column per start.

    ``alpha=None`` is the proof of Proposition 5's pacing (:func:`paced_step_size` with
    :data:`B_TILDE`); otherwise a constant step (<= 1/L) per start. A step alpha scales x by
    1 - alpha L, so only ||x||^2 is tracked.
    """
    norm2 = (1 - np.asarray(qh0, dtype=np.float64)) * 64 - 1  # ||x_0||^2
    qs, alphas = np.empty((rounds, *norm2.shape)), np.empty((rounds, *norm2.shape))
    for t in range(rounds):
        if alpha is None:
            step = paced_step_size(B_TILDE, _toy_quality(norm2), norm2 * _TOY_L**2, 1 / _TOY_L)
        else:
            step = np.broadcast_to(np.asarray(alpha, dtype=np.float64), norm2.shape)
        norm2 = norm2 * (1 - step * _TOY_L) ** 2
        qs[t], alphas[t] = _toy_quality(norm2), step
    return qs, alphas


def _simulate(
    ql0: ArrayLike, qh0: ArrayLike, q_h_path: ArrayLike, q_max: float = 1.0
) -> NDArray[np.float64]:
    """Low-firm qualities of Algorithm 5 along given high-firm paths (one column per start).

    The low firm steps to min(hat q_{l,t}, rho* q_{h,t}, q_l*) (never below where it is), a
    learning rate that lines 9-11 of Algorithm 5 allow: it keeps q_{l,t} <= hat q_{l,t}.
    """
    sol = duopoly_nash_solution(ql0, qh0, q_max)
    path = np.asarray(q_h_path, dtype=np.float64)
    out = np.empty_like(path)
    ql, prev = np.asarray(ql0, dtype=np.float64), np.asarray(qh0, dtype=np.float64)
    for t, qh in enumerate(path):
        ql = quality_caps.next_low_quality(
            ql, prev, qh, rho_star=sol.rho_star, q_l_star=sol.q_l_star
        )
        out[t], prev = ql, qh
    return out


_SCHEDULES = (None, 1 / _TOY_L, 1 / (4 * _TOY_L), 1 / (32 * _TOY_L))
_SCHEDULE_WORDS = "high-firm steps cycling through the proof's pacing min{(b~-1)q/||g||^2, 1/L}, 1/L, 1/(4L), 1/(32L)"


@functools.cache
def _toy_runs(rounds: int = 500) -> dict[str, NDArray[np.float64]]:
    """Algorithm 5 on the toy from 400 seeded starts, each with one of four high-firm schedules."""
    rng = np.random.default_rng(0)
    qh0 = rng.uniform(0.02, _TOY_Q, 400)
    ql0 = rng.uniform(0.0, 1.0, 400) * qh0
    q_h = np.empty((rounds, 400))
    alphas = np.empty((rounds, 400))
    for k, alpha in enumerate(_SCHEDULES):
        cols = np.arange(400) % len(_SCHEDULES) == k
        q_h[:, cols], alphas[:, cols] = _toy_high_path(qh0[cols], alpha, rounds)
    q_l = _simulate(ql0, qh0, q_h, _TOY_Q)
    sol = duopoly_nash_solution(ql0, qh0, _TOY_Q)
    ul, uh = duopoly.revenues(np.vstack([ql0, q_l]), np.vstack([qh0, q_h]))
    drop = np.minimum(
        np.diff(ul, axis=0) / np.maximum(ul[:-1], 1e-300),
        np.diff(uh, axis=0) / np.maximum(uh[:-1], 1e-300),
    )
    return {
        "q_l0": ql0,
        "q_h0": qh0,
        "q_l": q_l,
        "q_h": q_h,
        "alpha": alphas,
        "q_l_star": sol.q_l_star,
        "rho_star": sol.rho_star,
        "N_star": sol.nash_product,
        "worst_drop": drop.min(axis=0),
        "lowest_q_l": q_l.min(axis=0),
    }


_TOY_DRAWN = (
    "400 seeded starts on the convex toy f(x) = (||x||^2+1)/64 (Q = 63/64, L = 1/32): q_h0 uniform in "
    f"[0.02, Q], q_l0 = u q_h0 with u uniform (seed 0); {_SCHEDULE_WORDS}; 500 rounds; each start's "
    "trajectory is one point"
)


def _toy_points(keys: Sequence[str]) -> list[dict[str, float]]:
    runs = _toy_runs()
    return [
        {
            "q_l0": float(a),
            "q_h0": float(b),
            "q_l_star": float(c),
            **{k: float(runs[k][-1, i] if runs[k].ndim == 2 else runs[k][i]) for k in keys},
        }
        for i, (a, b, c) in enumerate(
            zip(runs["q_l0"], runs["q_h0"], runs["q_l_star"], strict=True)
        )
    ]


@proposition(
    "thesis.ch3.prop4",
    source=f"{_S34}, Proposition 4",
    statement="if q_l0 > q_l*, Algorithm 5 cannot converge to (q_l*, q_h*)",
    perturb={"start_above": False},
)
def _prop4(start_above: bool = True) -> Verdict:
    return on_points(
        lambda q_l0, q_h0, q_l_star, q_l, lowest_q_l: (
            lowest_q_l >= q_l0 and abs(q_l - q_l_star) > 1e-6
        ),
        _toy_points(["q_l", "lowest_q_l"]),
        "the low firm never falls below q_l0, so it ends at least q_l0 - q_l* > 1e-6 from q_l*",
        drawn=_TOY_DRAWN,
        hypothesis=(lambda q_l0, q_l_star, **_: q_l0 > q_l_star)
        if start_above
        else (lambda q_l0, q_l_star, **_: q_l0 <= q_l_star),
    )


@proposition(
    "thesis.ch3.prop5",
    source=f"{_S34}, Proposition 5; proof in section 3.7",
    statement="if q_l0 <= q_l*, there exist learning-rate schedules {alpha_l,t}, {alpha_h,t} such that after T rounds "
    "Algorithm 5 converges to (q_l*, q_h*)",
    perturb={"start_above": True},
)
def _prop5(start_above: bool = False) -> Verdict:
    return on_points(
        lambda q_l0, q_h0, q_l_star, q_l, q_h, worst_drop: (
            abs(q_l - q_l_star) <= 1e-9 and abs(q_h - _TOY_Q) <= 1e-9 and worst_drop >= -1e-12
        ),
        _toy_points(["q_l", "q_h", "worst_drop"]),
        "with the low firm's schedule stepping to min(hat q_l,t, rho* q_h,t, q_l*) each round, (q_l, q_h) ends "
        "within 1e-9 of (q_l*, Q) and no revenue ever falls (relative step >= -1e-12), under every one of the "
        "four high-firm schedules",
        drawn=_TOY_DRAWN,
        hypothesis=(lambda q_l0, q_l_star, **_: q_l0 > q_l_star)
        if start_above
        else (lambda q_l0, q_l_star, **_: q_l0 <= q_l_star),
    )


_x, _xs, _g = (sp.Matrix(sp.symbols(f"{n}1 {n}2", real=True)) for n in ("x", "s", "g"))
_ALPHA = sp.Symbol("alpha", positive=True)


@proposition(
    "thesis.ch3.thm5.identity",
    source=f"{_S37}, proof of Theorem 5, last line of the gradient-descent chain",
    statement="as printed: f* + g'(x - x*) - (alpha/2)||g||^2 = f* + (2/alpha)(||x - x*||^2 - ||x - alpha g - x*||^2)",
    holds=False,
    perturb={"factor": 1 / (2 * _ALPHA)},
)
def _thm5_identity(factor: sp.Expr = 2 / _ALPHA) -> Verdict:
    lhs = (_g.T * (_x - _xs))[0] - _ALPHA / 2 * (_g.T * _g)[0]
    step = _x - _ALPHA * _g - _xs
    rhs = factor * (((_x - _xs).T * (_x - _xs))[0] - (step.T * step)[0])
    return same_expression(
        lhs,
        rhs,
        f"g'(x - x*) - (alpha/2)||g||^2 minus ({factor})(||x - x*||^2 - ||x - alpha g - x*||^2) in R^2",
    )


proposition(
    "thesis.ch3.thm5.identity.corrected",
    source=f"{_S37}, proof of Theorem 5, with 1/(2 alpha) in place of 2/alpha",
    statement="g'(x - x*) - (alpha/2)||g||^2 = (1/(2 alpha))(||x - x*||^2 - ||x - alpha g - x*||^2), so "
    "f_T - f* <= ||x_0 - x*||^2/(2 sum alpha)",
    perturb={"factor": 2 / _ALPHA},
)(lambda factor=1 / (2 * _ALPHA): _thm5_identity(factor))


@proposition(
    "thesis.ch3.thm5",
    source=f"{_S34}, Theorem 5, eq. (3.5); proof in section 3.7",
    statement="if q_l0 <= q_l*, N* - N_T <~ ||x_h0 - x_h*||^2/sum_t alpha_h,t + |rho* - rho_T|; instantiated as "
    "N* - N_T <= c((1 + rho*)||x_h0 - x*||^2/(2 sum alpha) + |rho* - rho_T|) with c = 1/27",
    perturb={"constant": 1 / 2700},
)
def _thm5(constant: float = 1 / 27) -> Verdict:
    runs = _toy_runs()
    q_l, q_h, alpha = runs["q_l"], runs["q_h"], runs["alpha"]
    gap = runs["N_star"][None, :] - nash_product(
        q_l, q_h, runs["q_l0"][None, :], runs["q_h0"][None, :]
    )
    dist2 = (1 - runs["q_h0"]) * 64 - 1
    bound = constant * (
        (1 + runs["rho_star"]) * dist2 / (2 * np.cumsum(alpha, axis=0))
        + np.abs(runs["rho_star"] - q_l / q_h)
    )
    excess = (gap - bound).max(axis=0)
    return on_points(
        lambda q_l0, q_h0, q_l_star, excess: excess <= 1e-15,
        [
            {"q_l0": float(a), "q_h0": float(b), "q_l_star": float(c), "excess": float(e)}
            for a, b, c, e in zip(runs["q_l0"], runs["q_h0"], runs["q_l_star"], excess, strict=True)
        ],
        f"the bound with c = {constant:.6g} holds at every one of the 500 rounds",
        drawn=_TOY_DRAWN,
        hypothesis=lambda q_l0, q_h0, q_l_star, excess: q_l0 <= q_l_star,
    )


@proposition(
    "thesis.ch3.cor1",
    source=f"{_S34}, Corollary 1; proof in section 3.7 (log read as log10, as in the proof of Proposition 5)",
    statement="if q_l0 <= q_l*, after T >= max{log(rho_0/rho*)/log b~, log(q_h*/q_h0)/log((b~+1)/2) + "
    "L||x_h0 - x*||^2/(2 eps)} rounds with the paced schedule, q_h* - q_h,T <= eps and "
    "|rho* - rho_T| <= (4 - 5 rho*) log10(q_h*/(q_h* - eps))",
    perturb={"rounds_scale": 0.1},
)
def _cor1(rounds_scale: float = 1.0) -> Verdict:
    b_t = B_TILDE
    runs = _toy_runs()
    starts = [
        (a, b)
        for a, b, c in zip(runs["q_l0"], runs["q_h0"], runs["q_l_star"], strict=True)
        if a <= c
    ][::4]
    ql0, qh0 = (np.array([s[i] for s in starts]) for i in (0, 1))
    sol = duopoly_nash_solution(ql0, qh0, _TOY_Q)
    points = []
    for eps in (1e-2, 1e-3):
        dist2 = (1 - qh0) * 64 - 1
        case1 = np.log(np.maximum(ql0 / qh0, 1e-300) / sol.rho_star) / np.log(b_t)
        case2 = np.log(_TOY_Q / qh0) / np.log((b_t + 1) / 2) + _TOY_L * dist2 / (2 * eps)
        rounds = np.maximum(np.ceil(rounds_scale * np.maximum(case1, case2)).astype(int), 1)
        q_h, _ = _toy_high_path(qh0, None, int(rounds.max()))
        q_l = _simulate(ql0, qh0, q_h, _TOY_Q)
        at = rounds - 1, np.arange(len(rounds))
        points += [
            {
                "q_l0": float(a),
                "q_h0": float(b),
                "eps": eps,
                "T": int(t),
                "q_h_gap": float(_TOY_Q - h),
                "rho_gap": float(abs(r - lo / h)),
                "rho_bound": float((4 - 5 * r) * np.log10(_TOY_Q / (_TOY_Q - eps))),
            }
            for a, b, t, h, lo, r in zip(
                ql0, qh0, rounds, q_h[at], q_l[at], sol.rho_star, strict=True
            )
        ]
    return on_points(
        lambda q_l0, q_h0, eps, T, q_h_gap, rho_gap, rho_bound: (
            q_h_gap <= eps and rho_gap <= rho_bound + 1e-12
        ),
        points,
        f"at the prescribed T (scaled by {rounds_scale}) both bounds hold",
        drawn="every fourth start with q_l0 <= q_l* of the convex-toy sample (400 seeded starts, seed 0), "
        "each with eps = 1e-2 and 1e-3, paced high schedule",
    )


def _case1_points(rate: float) -> list[dict[str, float]]:
    """Case-1 starts of the toy (rho_0 > rho*, q_l0 <= q_l*) and rho_T after log(rho_0/rho*)/log(rate) rounds."""
    rng = np.random.default_rng(1)
    qh0 = rng.uniform(0.02, _TOY_Q, 2000)
    ql0 = rng.uniform(0.0, 1.0, 2000) * qh0
    sol = duopoly_nash_solution(ql0, qh0, _TOY_Q)
    keep = (ql0 / qh0 > sol.rho_star + 1e-9) & (ql0 <= sol.q_l_star)
    ql0, qh0, r = ql0[keep], qh0[keep], sol.rho_star[keep]
    rounds = np.maximum(np.ceil(np.log(ql0 / qh0 / r) / np.log(rate)).astype(int), 1)
    q_h, _ = _toy_high_path(qh0, None, int(rounds.max()))
    q_l = _simulate(ql0, qh0, q_h, _TOY_Q)
    at = rounds - 1, np.arange(rounds.size)
    return [
        {"q_l0": float(a), "q_h0": float(b), "rho_star": float(c), "T": int(t), "rho_T": float(d)}
        for a, b, c, t, d in zip(ql0, qh0, r, rounds, q_l[at] / q_h[at], strict=True)
    ]


@proposition(
    "thesis.ch3.cor1.case1",
    source=f"{_S37}, proof of Corollary 1, Case 1",
    statement="as printed: if rho_0 >= rho*, then since q_h,t/q_h,t-1 <= b~ (the paced schedule of Proposition 5's "
    "proof), rho_T = rho* after log(rho_0/rho*)/log(b~) rounds",
    holds=False,
    perturb={"rate": "(b~+1)/2"},
)
def _cor1_case1(rate: str = "b~") -> Verdict:
    b_t = B_TILDE
    value = {"b~": b_t, "(b~+1)/2": (b_t + 1) / 2}[rate]
    return on_points(
        lambda q_l0, q_h0, rho_star, T, rho_T: abs(rho_T - rho_star) <= 1e-9,
        _case1_points(value),
        f"after ceil(log(rho_0/rho*)/log({rate})) paced rounds rho_T = rho* (to 1e-9): growth per round is at most "
        "b~, so this many rounds is a lower bound on the wait, not an upper one",
        drawn="the Case-1 starts (rho_0 > rho*, q_l0 <= q_l*) among 2000 seeded starts of the convex toy "
        "f(x) = (||x||^2+1)/64 (q_h0 uniform in [0.02, 63/64], q_l0 = u q_h0, seed 1); paced high schedule "
        "min{(b~-1)q/||g||^2, 1/L}; the low firm idles until q_l0/q_h,t <= rho*, then holds rho*",
    )


proposition(
    "thesis.ch3.cor1.case1.corrected",
    source=f"{_S37}, proof of Corollary 1, Case 1, with the per-round growth (b~+1)/2 of Proposition 5's proof",
    statement="if rho_0 >= rho*, the paced schedule grows q_h by at least (b~+1)/2 per round while paced (and a 1/L step "
    "reaches Q on the toy), so rho_T = rho* after log(rho_0/rho*)/log((b~+1)/2) rounds",
    perturb={"rate": "b~"},
)(lambda rate="(b~+1)/2": _cor1_case1(rate))

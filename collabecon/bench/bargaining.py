"""Nash bargaining of the duopoly: vectorised closed form vs a per-point bounded search.

The straightforward approach (what the authors' code does, made correct by bounding the search
to the individually rational interval) runs ``scipy.optimize.minimize_scalar(method="bounded")``
once per starting point. Ours solves every stationarity cubic in one batched eigenvalue call
and filters by feasibility. Both are scored against a 40-digit mpmath reference; an error is a
ratio off by more than 1e-9.

A second row times one call per start, the way a caller with one start at a time uses it
(``--scalar-calls``): starts given as scalars take the scalar path of
:func:`econ.bargaining.duopoly_nash_solution`, timed against the same starts as 1-element
arrays and against the bounded search of each.

Run: ``collabecon bench bargaining [--points 100000] [--baseline-points 5000]
[--reference-points 5000] [--scalar-calls 2000] [--repeats 5]``. The sizes are refused before any work when the
batched side's arrays (:data:`BYTES_PER_POINT` per point) cannot fit in memory or a side's
work exceeds its ceiling: :data:`MAX_POINT_SOLVES`, :data:`MAX_BASELINE_SEARCHES`,
:data:`MAX_REFERENCE_POINTS`.
"""

from __future__ import annotations

import platform
from collections.abc import Callable
from typing import Any

import mpmath as mp
import numpy as np
from scipy.optimize import minimize_scalar

from collabecon.bench.timing import best_of, best_of_each, repeats_count, within
from econ import bargaining, duopoly
from econ.validation import fits_in_memory, positive_int

__all__ = [
    "BYTES_PER_POINT",
    "MAX_BASELINE_SEARCHES",
    "MAX_POINT_SOLVES",
    "MAX_REFERENCE_POINTS",
    "baseline",
    "measure_bargaining",
    "reference",
    "starting_points",
]

#: bytes per starting point of the batched side: the peak of
#: :func:`econ.bargaining.duopoly_nash_solution` (about 170, measured with tracemalloc) and
#: the starting points themselves
BYTES_PER_POINT = 256
#: the most points the batched side solves over its repeats (about 20 minutes at 0.13 us)
MAX_POINT_SOLVES = 10**10
#: the most bounded searches of the per-point baseline over its repeats (about 10 minutes at
#: 67 us each)
MAX_BASELINE_SEARCHES = 10**7
#: the most points of the 40-digit reference (about half an hour)
MAX_REFERENCE_POINTS = 10**6


def starting_points(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    r"""``n`` random starting qualities of the duopoly, the low one below the high one.

    :math:`q_{H,0} \sim U(0.01, 1)` and :math:`q_{L,0} = u \, q_{H,0}` with
    :math:`u \sim U(0, 1)`, so that :math:`0 \le q_{L,0} < q_{H,0}`; all drawn from ``rng``.

    Returns
    -------
    q_l0, q_h0 : numpy.ndarray
        The low and the high firm's starting qualities, shape ``(n,)`` each.
    """
    q_h0 = rng.uniform(0.01, 1.0, n)
    return q_h0 * rng.uniform(0.0, 1.0, n), q_h0


def baseline(q_l0: np.ndarray, q_h0: np.ndarray) -> np.ndarray:
    """One bounded scalar search per point, on the feasible interval (Q = 1)."""
    lo, hi = bargaining.feasible_interval(q_l0, q_h0, allow_lower=True)
    ul0, uh0 = duopoly.revenues(q_l0, q_h0)
    out = np.empty(q_l0.size)
    for i in range(q_l0.size):
        a, h = float(ul0[i]), float(uh0[i])

        def negative_nash(r: float, a: float = a, h: float = h) -> float:
            return -(r * (1 - r) / (4 - r) ** 2 - a) * (4 * (1 - r) / (4 - r) ** 2 - h)

        out[i] = (
            minimize_scalar(negative_nash, bounds=(lo[i], hi[i]), method="bounded").x
            if hi[i] > lo[i]
            else lo[i]
        )
    return out


def reference(q_l0: np.ndarray, q_h0: np.ndarray) -> np.ndarray:
    """rho* at 40 digits: the cubic's roots with mpmath, the best rational one (Q = 1)."""
    mp.mp.dps = 40
    out = np.empty(q_l0.size)
    for i in range(q_l0.size):
        ql, qh = mp.mpf(float(q_l0[i])), mp.mpf(float(q_h0[i]))
        a = ql * qh * (qh - ql) / (4 * qh - ql) ** 2
        h = 4 * qh**2 * (qh - ql) / (4 * qh - ql) ** 2

        def u_l(r: mp.mpf) -> mp.mpf:
            return r * (1 - r) / (4 - r) ** 2

        def u_h(r: mp.mpf) -> mp.mpf:
            return 4 * (1 - r) / (4 - r) ** 2

        coeffs = [4 + 7 * h + 4 * a, 32 - 60 * h - 24 * a, 144 * h - 52, 16 - 64 * h + 128 * a]
        roots = [
            mp.re(r)
            for r in mp.polyroots(coeffs, maxsteps=200, extraprec=60)
            if abs(mp.im(r)) < mp.mpf(10) ** -30
        ]
        rational = [r for r in roots if 0 <= r <= 1 and u_l(r) >= a and u_h(r) >= h]
        ends = [ql / qh] if qh > 0 else [mp.mpf(0)]
        best = max(rational + ends, key=lambda r: (u_l(r) - a) * (u_h(r) - h))
        out[i] = float(best)
    return out


def measure_bargaining(
    *,
    points: int = 100_000,
    baseline_points: int = 5_000,
    reference_points: int = 5_000,
    scalar_calls: int = 2_000,
    repeats: int = 5,
    seed: int = 0,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Time :func:`econ.bargaining.duopoly_nash_solution` against :func:`baseline`.

    Both solve the thesis's program (``allow_lower=True``), as :func:`reference` does.

    The solution is timed on ``points`` starting points and the baseline on the first
    ``baseline_points``; the errors of each (off by more than 1e-9) are counted against
    :func:`reference` on the first ``reference_points``.

    The speed ratio compares microseconds per point; each time is the best of ``repeats``.
    ``progress`` is called with a short text as each side starts.

    With ``scalar_calls`` > 0, the first ``scalar_calls`` starts are also solved one call each:
    given as Python floats (``scalar``: the scalar path), as 1-element arrays (``array``: the
    general path) and by :func:`baseline`, one point at a time, the three timed alternately;
    ``scalar_max_abs_difference`` compares the scalar calls' ρ* with the batched ones.

    Raises
    ------
    ValueError
        A size not a positive integer, ``baseline_points`` or ``reference_points`` above
        ``points``, a side's work above its ceiling, or the points beyond memory.
    """
    for name, value in (
        ("points", points),
        ("baseline_points", baseline_points),
        ("reference_points", reference_points),
    ):
        positive_int(name, value)
    if isinstance(scalar_calls, bool) or not isinstance(scalar_calls, int) or scalar_calls < 0:
        raise ValueError(f"scalar_calls must be an integer >= 0, got {scalar_calls!r}")
    repeats_count(repeats)
    for name, value in (
        ("baseline_points", baseline_points),
        ("reference_points", reference_points),
        ("scalar_calls", scalar_calls),
    ):
        if value > points:
            raise ValueError(
                f"{name}={value} exceeds points={points}: the baseline and the reference "
                "take the first points of the batched side"
            )
    within(
        f"points={points}, repeats={repeats}", points * repeats, MAX_POINT_SOLVES, "point solves"
    )
    within(
        f"baseline_points={baseline_points}, repeats={repeats}",
        baseline_points * repeats,
        MAX_BASELINE_SEARCHES,
        "bounded searches",
    )
    within(
        f"scalar_calls={scalar_calls}, repeats={repeats}",
        scalar_calls * repeats,
        MAX_BASELINE_SEARCHES,
        "scalar calls and bounded searches",
    )
    within(
        f"reference_points={reference_points}",
        reference_points,
        MAX_REFERENCE_POINTS,
        "40-digit solves",
    )
    fits_in_memory(f"points={points}", float(BYTES_PER_POINT) * points)
    rng = np.random.default_rng(seed)
    q_l0, q_h0 = starting_points(points, rng)

    progress(f"batched closed form: {points} points, best of {repeats}")
    bargaining.duopoly_nash_solution(q_l0[:10], q_h0[:10], allow_lower=True)  # warm-up
    ours_t = best_of(
        lambda: bargaining.duopoly_nash_solution(q_l0, q_h0, allow_lower=True).rho_star, repeats
    )
    ours_s, ours = ours_t.seconds, ours_t.result
    nb = baseline_points
    progress(f"per-point bounded search: {nb} points, best of {repeats}")
    base_t = best_of(lambda: baseline(q_l0[:nb], q_h0[:nb]), repeats)
    base_s, base = base_t.seconds, base_t.result

    scalar = _scalar_calls(q_l0, q_h0, ours, scalar_calls, repeats, progress)
    nr = reference_points
    progress(f"40-digit reference: {nr} points")
    ref = reference(q_l0[:nr], q_h0[:nr])
    return {
        "machine": f"{platform.machine()} {platform.processor() or platform.system()}",
        "points": points,
        "repeats": repeats,
        "ours_seconds": round(ours_s, 4),
        "ours_us_per_point": round(1e6 * ours_s / points, 3),
        "baseline_points": nb,
        "baseline_us_per_point": round(1e6 * base_s / nb, 3),
        "speed_ratio": round((base_s / nb) / (ours_s / points), 1),
        "reference_points": nr,
        "ours_errors": int(np.sum(np.abs(ours[:nr] - ref) > 1e-9)),
        "ours_max_abs_error": float(np.max(np.abs(ours[:nr] - ref))),
        "baseline_errors": int(np.sum(np.abs(base[: min(nb, nr)] - ref[: min(nb, nr)]) > 1e-9)),
        "baseline_max_abs_error": float(np.max(np.abs(base[: min(nb, nr)] - ref[: min(nb, nr)]))),
        **scalar,
    }


def _scalar_calls(
    q_l0: np.ndarray,
    q_h0: np.ndarray,
    batched: np.ndarray,
    calls: int,
    repeats: int,
    progress: Callable[[str], None],
) -> dict[str, Any]:
    """One call per start on the first ``calls`` starts: scalars, 1-element arrays, baseline."""
    if calls == 0:
        return {}
    starts = [(float(a), float(b)) for a, b in zip(q_l0[:calls], q_h0[:calls], strict=True)]
    arrays = [(np.array([a]), np.array([b])) for a, b in starts]
    solve = bargaining.duopoly_nash_solution
    progress(f"one call per start: {calls} starts as scalars, as arrays and by search")
    solve(*starts[0], allow_lower=True)  # warm-up
    best = best_of_each(
        {
            "scalar": lambda: [solve(a, b, allow_lower=True).rho_star for a, b in starts],
            "array": lambda: [solve(a, b, allow_lower=True).rho_star for a, b in arrays],
            "baseline": lambda: baseline(q_l0[:calls], q_h0[:calls]),
        },
        repeats,
    )
    per_call = {name: 1e6 * t.seconds / calls for name, t in best.items()}
    return {
        "scalar_calls": calls,
        "scalar_us_per_call": round(per_call["scalar"], 2),
        "array_us_per_call": round(per_call["array"], 2),
        "scalar_baseline_us_per_point": round(per_call["baseline"], 2),
        "scalar_speed_ratio": round(per_call["baseline"] / per_call["scalar"], 2),
        "scalar_vs_array_ratio": round(per_call["array"] / per_call["scalar"], 2),
        "scalar_max_abs_difference": float(
            np.max(np.abs(np.array(best["scalar"].result) - batched[:calls]))
        ),
    }

"""Nash bargaining of the duopoly: vectorised closed form vs a per-point bounded search.

The straightforward approach (what the authors' code does, made correct by bounding the search
to the individually rational interval) runs ``scipy.optimize.minimize_scalar(method="bounded")``
once per starting point. Ours solves every stationarity cubic in one batched eigenvalue call
and filters by feasibility. Both are scored against a 40-digit mpmath reference; an error is a
ratio off by more than 1e-9.

Run: ``python bench/bargaining.py [--points 100000] [--baseline-points 5000] [--reference-points 5000]``
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import mpmath as mp
import numpy as np
from scipy.optimize import minimize_scalar

from econ import bargaining, duopoly


def starting_points(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    q_h0 = rng.uniform(0.01, 1.0, n)
    return q_h0 * rng.uniform(0.0, 1.0, n), q_h0


def baseline(q_l0: np.ndarray, q_h0: np.ndarray) -> np.ndarray:
    """One bounded scalar search per point, on the feasible interval (Q = 1)."""
    lo, hi = bargaining.feasible_interval(q_l0, q_h0)
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


def best_of(repeats: int, work):
    """Smallest wall time over ``repeats`` runs (the machine may be shared), and the result."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = work()
        times.append(time.perf_counter() - start)
    return min(times), out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--baseline-points", type=int, default=5_000)
    parser.add_argument("--reference-points", type=int, default=5_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--repeats", type=int, default=5, help="best of this many timings, each side"
    )
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    q_l0, q_h0 = starting_points(args.points, rng)

    bargaining.duopoly_nash_solution(q_l0[:10], q_h0[:10])  # warm-up
    ours_s, ours = best_of(
        args.repeats, lambda: bargaining.duopoly_nash_solution(q_l0, q_h0).rho_star
    )
    nb = min(args.baseline_points, args.points)
    base_s, base = best_of(args.repeats, lambda: baseline(q_l0[:nb], q_h0[:nb]))

    nr = min(args.reference_points, args.points)
    ref = reference(q_l0[:nr], q_h0[:nr])
    result = {
        "machine": f"{platform.machine()} {platform.processor() or platform.system()}",
        "points": args.points,
        "repeats": args.repeats,
        "ours_seconds": round(ours_s, 4),
        "ours_us_per_point": round(1e6 * ours_s / args.points, 3),
        "baseline_points": nb,
        "baseline_us_per_point": round(1e6 * base_s / nb, 3),
        "speed_ratio": round((base_s / nb) / (ours_s / args.points), 1),
        "reference_points": nr,
        "ours_errors": int(np.sum(np.abs(ours[:nr] - ref) > 1e-9)),
        "ours_max_abs_error": float(np.max(np.abs(ours[:nr] - ref))),
        "baseline_errors": int(np.sum(np.abs(base[: min(nb, nr)] - ref[: min(nb, nr)]) > 1e-9)),
        "baseline_max_abs_error": float(np.max(np.abs(base[: min(nb, nr)] - ref[: min(nb, nr)]))),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

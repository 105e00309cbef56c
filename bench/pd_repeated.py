"""Benchmark: the vectorised repeated PD game against a per-round, per-buyer Python loop.

Issue 3's target: 100 independent runs x 20,000 rounds x 10 buyers for each of Exp3,
contextual Exp3 and alpha*-PD (thesis parameters), all three in at most 10 s, and at least 100x
faster per run than the straightforward implementation in ``bench/pd_baseline.py``. The baseline
is timed on fewer runs and rounds and compared per run-round; both sides also report the mean
seller utility per buyer so that the two agree in distribution.

Run: ``python bench/pd_repeated.py [--runs 100] [--rounds 20000] [--baseline-runs 8]
[--baseline-rounds 2000] [--scale-runs 1000] [--repeats 3]``; every time is the best of
``--repeats`` because the machine is shared.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from pd_baseline import run_baseline

from games.price_discrimination.game import THESIS_GAME
from games.price_discrimination.repeated import simulate
from games.price_discrimination.sellers import SELLERS

SELLER_NAMES = ("exp3", "cexp3", "alpha-pd")


def _best(repeats: int, work: Callable[..., Any], *args: Any) -> tuple[float, Any]:
    """The shortest of ``repeats`` wall-clock times of ``work(*args)`` (the machine is shared),
    and the last result."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = work(*args)
        times.append(time.perf_counter() - start)
    return min(times), result


def _vectorised(name: str, runs: int, rounds: int, seed: int) -> Any:
    return simulate(THESIS_GAME, SELLERS[name](), rounds, runs, seed)


def _baseline(name: str, runs: int, rounds: int) -> np.ndarray:
    return np.array(
        [run_baseline(THESIS_GAME, name, rounds, 100 + r)["seller"] for r in range(runs)]
    )


def _mean_se(x: np.ndarray) -> str:
    return f"{x.mean():.3f} +- {x.std(ddof=1) / np.sqrt(x.size):.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=20_000)
    parser.add_argument("--baseline-runs", type=int, default=8)
    parser.add_argument("--baseline-rounds", type=int, default=2_000)
    parser.add_argument("--scale-runs", type=int, default=1_000, help="extra row; 0 to skip")
    parser.add_argument("--repeats", type=int, default=3, help="each time is the best of these")
    args = parser.parse_args()

    for name in SELLER_NAMES:  # warm-up: first-call imports and allocations
        _vectorised(name, 2, 100, 0)
    print(
        f"vectorised: {args.runs} runs x {args.rounds} rounds x {THESIS_GAME.n} buyers per seller"
    )
    print(
        f"baseline:   {args.baseline_runs} runs x {args.baseline_rounds} rounds, "
        "Python loop over rounds and buyers (bench/pd_baseline.py)"
    )
    print(f"times: best of {args.repeats}")
    header = ("seller", "vec s", "vec us/run-rd", "loop us/run-rd", "speed-up")
    print("".join(f"{h:>16}" for h in header))
    total_vec, sum_vec, sum_loop, agreement = 0.0, 0.0, 0.0, []
    for k, name in enumerate(SELLER_NAMES):
        vec, _ = _best(args.repeats, _vectorised, name, args.runs, args.rounds, k)
        loop, base = _best(args.repeats, _baseline, name, args.baseline_runs, args.baseline_rounds)
        total_vec += vec
        per_vec = vec / (args.runs * args.rounds) * 1e6
        per_loop = loop / (args.baseline_runs * args.baseline_rounds) * 1e6
        sum_vec, sum_loop = sum_vec + per_vec, sum_loop + per_loop
        print(
            f"{name:>16}{vec:>16.2f}{per_vec:>16.3f}{per_loop:>16.2f}{per_loop / per_vec:>15.0f}x"
        )
        short = _vectorised(name, args.runs, args.baseline_rounds, 50 + k)
        agreement.append((name, _mean_se(short.seller_utility().mean(axis=1)), _mean_se(base)))
    print(
        f"all three: {total_vec:.2f} s vectorised (target <= 10 s); per run-round speed-up "
        f"{sum_loop / sum_vec:.0f}x (target >= 100x)"
    )
    print(f"mean seller utility per buyer at T = {args.baseline_rounds} (vectorised vs loop):")
    for name, vec_stat, loop_stat in agreement:
        print(f"  {name:<10} {vec_stat:>18} {loop_stat:>18}")
    if args.scale_runs:
        print(f"scaling: {args.scale_runs} runs x {args.rounds} rounds")
        for k, name in enumerate(SELLER_NAMES):
            seconds, _ = _best(args.repeats, _vectorised, name, args.scale_runs, args.rounds, k)
            per = seconds / (args.scale_runs * args.rounds) * 1e6
            print(f"  {name:<10} {per:.3f} us/run-round ({seconds:.2f} s)")


if __name__ == "__main__":
    main()

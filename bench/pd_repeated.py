"""Benchmark: the vectorised repeated PD game against a per-round, per-buyer Python loop.

Issue 3's target: 100 independent runs x 20,000 rounds x 10 buyers for each of Exp3,
contextual Exp3 and alpha*-PD (thesis parameters), all three in at most 10 s, and at least 100x
faster per run than the straightforward implementation in ``bench/pd_baseline.py``. The baseline
is timed on fewer runs and rounds and compared per run-round; both sides also report the mean
seller utility per buyer so that the two agree in distribution.

Run: ``python bench/pd_repeated.py [--runs 100] [--rounds 20000] [--baseline-runs 8]
[--baseline-rounds 2000] [--scale-runs 1000]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from pd_baseline import run_baseline

from games.price_discrimination.game import THESIS_GAME
from games.price_discrimination.repeated import simulate
from games.price_discrimination.sellers import SELLERS

SELLER_NAMES = ("exp3", "cexp3", "alpha-pd")


def _mean_se(x: np.ndarray) -> str:
    return f"{x.mean():.3f} +- {x.std(ddof=1) / np.sqrt(x.size):.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=20_000)
    parser.add_argument("--baseline-runs", type=int, default=8)
    parser.add_argument("--baseline-rounds", type=int, default=2_000)
    parser.add_argument("--scale-runs", type=int, default=1_000, help="extra row; 0 to skip")
    args = parser.parse_args()

    game = THESIS_GAME
    for name in SELLER_NAMES:  # warm-up: first-call imports and allocations
        simulate(game, SELLERS[name](), 100, 2, seed=0)
    print(f"vectorised: {args.runs} runs x {args.rounds} rounds x {game.n} buyers per seller")
    print(
        f"baseline:   {args.baseline_runs} runs x {args.baseline_rounds} rounds, "
        "Python loop over rounds and buyers (bench/pd_baseline.py)"
    )
    header = ("seller", "vec s", "vec us/run-rd", "loop us/run-rd", "speed-up")
    print("".join(f"{h:>16}" for h in header))
    total_vec, sum_vec, sum_loop, agreement = 0.0, 0.0, 0.0, []
    for k, name in enumerate(SELLER_NAMES):
        start = time.perf_counter()
        simulate(game, SELLERS[name](), args.rounds, args.runs, seed=k)
        vec = time.perf_counter() - start
        total_vec += vec
        start = time.perf_counter()
        base = np.array(
            [
                run_baseline(game, name, args.baseline_rounds, seed=100 + r)["seller"]
                for r in range(args.baseline_runs)
            ]
        )
        loop = time.perf_counter() - start
        per_vec = vec / (args.runs * args.rounds) * 1e6
        per_loop = loop / (args.baseline_runs * args.baseline_rounds) * 1e6
        sum_vec, sum_loop = sum_vec + per_vec, sum_loop + per_loop
        print(
            f"{name:>16}{vec:>16.2f}{per_vec:>16.3f}{per_loop:>16.2f}{per_loop / per_vec:>15.0f}x"
        )
        short = simulate(game, SELLERS[name](), args.baseline_rounds, args.runs, seed=50 + k)
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
            start = time.perf_counter()
            simulate(game, SELLERS[name](), args.rounds, args.scale_runs, seed=k)
            per = (time.perf_counter() - start) / (args.scale_runs * args.rounds) * 1e6
            print(f"  {name:<10} {per:.3f} us/run-round")


if __name__ == "__main__":
    main()

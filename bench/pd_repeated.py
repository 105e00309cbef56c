"""Benchmark: the vectorised repeated PD game against a per-round, per-buyer Python loop.

Issue 3's target: 100 independent runs x 20,000 rounds x 10 buyers for each of Exp3,
contextual Exp3 and alpha*-PD (thesis parameters), all three in at most 10 s, and at least 100x
faster per run than the straightforward implementation in ``bench/pd_baseline.py``. The baseline
is timed on fewer runs and rounds and compared per run-round; both sides also report the mean
seller utility per buyer so that the two agree in distribution.

Run: ``python bench/pd_repeated.py [--runs 100] [--rounds 20000] [--baseline-runs 2]
[--baseline-rounds 4000]``.
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=20_000)
    parser.add_argument("--baseline-runs", type=int, default=2)
    parser.add_argument("--baseline-rounds", type=int, default=4_000)
    args = parser.parse_args()

    total_vectorised = 0.0
    rows = []
    for k, name in enumerate(SELLER_NAMES):
        start = time.perf_counter()
        run = simulate(THESIS_GAME, SELLERS[name](), args.rounds, args.runs, seed=k)
        vec = time.perf_counter() - start
        total_vectorised += vec
        vec_short = run.seller_utility()[:, : args.baseline_rounds].mean()

        start = time.perf_counter()
        base = [
            run_baseline(THESIS_GAME, name, args.baseline_rounds, seed=100 + r)
            for r in range(args.baseline_runs)
        ]
        loop = time.perf_counter() - start
        per_vec = vec / (args.runs * args.rounds)
        per_loop = loop / (args.baseline_runs * args.baseline_rounds)
        rows.append(
            (
                name,
                vec,
                per_vec,
                per_loop,
                per_loop / per_vec,
                vec_short,
                float(np.mean([b["seller"] for b in base])),
            )
        )

    print(
        f"vectorised: {args.runs} runs x {args.rounds} rounds x {THESIS_GAME.n} buyers per seller"
    )
    print(
        f"baseline:   {args.baseline_runs} runs x {args.baseline_rounds} rounds, per-round per-buyer loop"
    )
    print(
        f"{'seller':<10}{'vec s':>8}{'vec us/run-round':>18}{'loop us/run-round':>19}"
        f"{'speed-up':>10}{'seller (vec, first T_b)':>25}{'seller (loop)':>15}"
    )
    for name, vec, pv, pl, ratio, sv, sl in rows:
        print(
            f"{name:<10}{vec:>8.2f}{pv * 1e6:>18.3f}{pl * 1e6:>19.2f}{ratio:>9.0f}x{sv:>25.3f}{sl:>15.3f}"
        )
    all_vec = sum(r[2] for r in rows)
    all_loop = sum(r[3] for r in rows)
    print(
        f"all three: {total_vectorised:.2f} s vectorised; per run-round speed-up "
        f"{all_loop / all_vec:.0f}x"
    )


if __name__ == "__main__":
    main()

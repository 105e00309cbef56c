"""Benchmark: the vectorised repeated PD game against a per-round, per-buyer Python loop.

Target: 100 independent runs x 20,000 rounds x 10 buyers for each of Exp3,
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


def _best(repeats: int, work: Callable[..., Any], *args: Any) -> tuple[float, float, Any]:
    """The shortest of ``repeats`` wall-clock times and of ``repeats`` CPU times of this process
    for ``work(*args)``, and the last result. Both sides run on one core, so on a shared machine
    the CPU time is the steadier of the two."""
    walls, cpus, result = [], [], None
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        result = work(*args)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus), result


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
    print(f"times: best of {args.repeats}; us per run-round as wall clock / CPU time")
    header = ("seller", "vec s", "vec us", "loop us", "speed-up wall", "speed-up CPU")
    print("".join(f"{h:>16}" for h in header))
    total_vec = 0.0
    sums = {"vec_wall": 0.0, "vec_cpu": 0.0, "loop_wall": 0.0, "loop_cpu": 0.0}
    agreement = []
    vec_work, loop_work = (
        args.runs * args.rounds / 1e6,
        args.baseline_runs * args.baseline_rounds / 1e6,
    )
    for k, name in enumerate(SELLER_NAMES):
        vec_wall, vec_cpu, _ = _best(args.repeats, _vectorised, name, args.runs, args.rounds, k)
        loop_wall, loop_cpu, base = _best(
            args.repeats, _baseline, name, args.baseline_runs, args.baseline_rounds
        )
        total_vec += vec_wall
        per = {
            "vec_wall": vec_wall / vec_work,
            "vec_cpu": vec_cpu / vec_work,
            "loop_wall": loop_wall / loop_work,
            "loop_cpu": loop_cpu / loop_work,
        }
        for key in sums:
            sums[key] += per[key]
        print(
            f"{name:>16}{vec_wall:>16.2f}"
            f"{per['vec_wall']:>8.3f}/{per['vec_cpu']:<7.3f}"
            f"{per['loop_wall']:>8.2f}/{per['loop_cpu']:<7.2f}"
            f"{per['loop_wall'] / per['vec_wall']:>15.0f}x"
            f"{per['loop_cpu'] / per['vec_cpu']:>15.0f}x"
        )
        short = _vectorised(name, args.runs, args.baseline_rounds, 50 + k)
        agreement.append((name, _mean_se(short.seller_utility().mean(axis=1)), _mean_se(base)))
    print(
        f"all three: {total_vec:.2f} s vectorised (target <= 10 s); per run-round speed-up "
        f"{sums['loop_wall'] / sums['vec_wall']:.0f}x wall, "
        f"{sums['loop_cpu'] / sums['vec_cpu']:.0f}x CPU (target >= 100x)"
    )
    print(f"mean seller utility per buyer at T = {args.baseline_rounds} (vectorised vs loop):")
    for name, vec_stat, loop_stat in agreement:
        print(f"  {name:<10} {vec_stat:>18} {loop_stat:>18}")
    if args.scale_runs:
        print(f"scaling: {args.scale_runs} runs x {args.rounds} rounds")
        for k, name in enumerate(SELLER_NAMES):
            seconds, _, _ = _best(args.repeats, _vectorised, name, args.scale_runs, args.rounds, k)
            per = seconds / (args.scale_runs * args.rounds) * 1e6
            print(f"  {name:<10} {per:.3f} us/run-round ({seconds:.2f} s)")


if __name__ == "__main__":
    main()

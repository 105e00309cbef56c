"""Benchmark: the vectorised repeated PD game against a per-round, per-buyer Python loop.

Target: 100 independent runs x 20,000 rounds x 10 buyers for each of Exp3,
contextual Exp3 and alpha*-PD (thesis parameters), all three in at most 10 s, and at least 100x
faster per run than the straightforward implementation in
:mod:`collabecon.bench.pricing_baseline`. The baseline
is timed on fewer runs and rounds and compared per run-round; both sides also report the mean
seller utility per buyer so that the two agree in distribution.

Run: ``collabecon bench pricing-repeated [--runs 100] [--rounds 20000] [--baseline-runs 8]
[--baseline-rounds 2000] [--scale-runs 1000] [--repeats 3]``; every time is the best of
``--repeats`` (:mod:`collabecon.bench.timing`) as wall clock and as CPU time of this
process: both sides run on one core, so on a shared machine the CPU time is the steadier.
The sizes are refused before any work when the vectorised runs cannot fit in memory
(:data:`BYTES_PER_RUN_ROUND`) or a side's work exceeds its ceiling
(:data:`MAX_VECTORISED_RUN_ROUNDS`, :data:`MAX_LOOP_RUN_ROUNDS`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from collabecon.bench.pricing_baseline import run_baseline
from collabecon.bench.timing import best_of, repeats_count, within
from econ.validation import fits_in_memory, positive_int
from games.price_discrimination.game import THESIS_GAME
from games.price_discrimination.repeated import simulate
from games.price_discrimination.sellers import SELLERS

__all__ = [
    "BYTES_PER_RUN_ROUND",
    "MAX_LOOP_RUN_ROUNDS",
    "MAX_VECTORISED_RUN_ROUNDS",
    "SELLER_NAMES",
    "measure_pricing_repeated",
]

SELLER_NAMES = ("exp3", "cexp3", "alpha-pd")
#: bytes per run-round of the vectorised side: the peak of one simulation (about 64,
#: measured with tracemalloc) while the timer holds the previous one's result (about 42)
BYTES_PER_RUN_ROUND = 128
#: the most run-rounds the vectorised side simulates over all sellers and repeats (about a
#: quarter of an hour at 0.1 us each)
MAX_VECTORISED_RUN_ROUNDS = 10**10
#: the most run-rounds of the Python loop over all sellers and repeats (about 20 minutes at
#: 11 us each)
MAX_LOOP_RUN_ROUNDS = 10**8


def _vectorised(name: str, runs: int, rounds: int, seed: int) -> Any:
    return simulate(THESIS_GAME, SELLERS[name](), rounds, runs, seed)


def _baseline(name: str, runs: int, rounds: int) -> np.ndarray:
    return np.array(
        [run_baseline(THESIS_GAME, name, rounds, 100 + r)["seller"] for r in range(runs)]
    )


def _mean_se(x: np.ndarray) -> dict[str, float]:
    return {"mean": float(x.mean()), "se": float(x.std(ddof=1) / np.sqrt(x.size))}


def measure_pricing_repeated(
    *,
    runs: int = 100,
    rounds: int = 20_000,
    baseline_runs: int = 8,
    baseline_rounds: int = 2_000,
    scale_runs: int = 1_000,
    repeats: int = 3,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Microseconds per run-round of the vectorised simulator and of the loop, per seller.

    Each seller (:data:`SELLER_NAMES`) is simulated for ``runs`` x ``rounds`` (vectorised)
    and ``baseline_runs`` x ``baseline_rounds`` (loop); the speed-up compares time per
    run-round. ``agreement`` gives each side's mean seller utility per buyer (mean and
    standard error over runs) at ``baseline_rounds``; ``scaling`` the vectorised cost at
    ``scale_runs`` runs (0 skips it). ``progress`` is called with a short text as each
    seller's timings start.

    Raises
    ------
    ValueError
        A size not a positive integer (``scale_runs`` may be 0), fewer than 2 runs, a side's
        work above its ceiling, or the runs beyond memory.
    """
    for name, value in (
        ("runs", runs),
        ("rounds", rounds),
        ("baseline_runs", baseline_runs),
        ("baseline_rounds", baseline_rounds),
    ):
        positive_int(name, value)
    repeats_count(repeats)
    if isinstance(scale_runs, bool) or not isinstance(scale_runs, int) or scale_runs < 0:
        raise ValueError(f"scale_runs must be an integer >= 0, got {scale_runs!r}")
    if runs < 2 or baseline_runs < 2:
        raise ValueError(
            f"runs and baseline_runs must be >= 2 (a standard error), got {runs}, {baseline_runs}"
        )
    sellers_times = len(SELLER_NAMES) * repeats
    within(
        f"runs={runs}, rounds={rounds}, scale_runs={scale_runs}, repeats={repeats}",
        (runs + scale_runs) * rounds * sellers_times,
        MAX_VECTORISED_RUN_ROUNDS,
        "simulated run-rounds",
    )
    within(
        f"baseline_runs={baseline_runs}, baseline_rounds={baseline_rounds}, repeats={repeats}",
        baseline_runs * baseline_rounds * sellers_times,
        MAX_LOOP_RUN_ROUNDS,
        "looped run-rounds",
    )
    largest = max(runs, scale_runs) * max(rounds, baseline_rounds)
    fits_in_memory(
        f"runs={runs}, scale_runs={scale_runs}, rounds={rounds}, baseline_rounds={baseline_rounds}",
        float(BYTES_PER_RUN_ROUND) * largest,
    )
    for name in SELLER_NAMES:  # warm-up: first-call imports and allocations
        _vectorised(name, 2, 100, 0)
    vec_work, loop_work = runs * rounds / 1e6, baseline_runs * baseline_rounds / 1e6
    sellers = []
    total_vec = 0.0
    sums = {"vec_wall": 0.0, "vec_cpu": 0.0, "loop_wall": 0.0, "loop_cpu": 0.0}
    for k, name in enumerate(SELLER_NAMES):
        progress(f"{name}: vectorised {runs} x {rounds}, loop {baseline_runs} x {baseline_rounds}")
        vec = best_of(partial(_vectorised, name, runs, rounds, k), repeats)
        loop = best_of(partial(_baseline, name, baseline_runs, baseline_rounds), repeats)
        total_vec += vec.seconds
        per = {
            "vec_wall": vec.seconds / vec_work,
            "vec_cpu": vec.cpu_seconds / vec_work,
            "loop_wall": loop.seconds / loop_work,
            "loop_cpu": loop.cpu_seconds / loop_work,
        }
        for key in sums:
            sums[key] += per[key]
        short = _vectorised(name, runs, baseline_rounds, 50 + k)
        sellers.append(
            {
                "seller": name,
                "vectorised_s": vec.seconds,
                "vectorised_us_wall": per["vec_wall"],
                "vectorised_us_cpu": per["vec_cpu"],
                "loop_us_wall": per["loop_wall"],
                "loop_us_cpu": per["loop_cpu"],
                "speedup_wall": per["loop_wall"] / per["vec_wall"],
                "speedup_cpu": per["loop_cpu"] / per["vec_cpu"],
                "vectorised_seller_utility": _mean_se(short.seller_utility().mean(axis=1)),
                "loop_seller_utility": _mean_se(loop.result),
            }
        )
    scaling = []
    if scale_runs:
        for k, name in enumerate(SELLER_NAMES):
            progress(f"{name}: vectorised, scaling to {scale_runs} runs")
            seconds = best_of(partial(_vectorised, name, scale_runs, rounds, k), repeats).seconds
            scaling.append(
                {
                    "seller": name,
                    "seconds": seconds,
                    "us_per_run_round": seconds / (scale_runs * rounds) * 1e6,
                }
            )
    return {
        "runs": runs,
        "rounds": rounds,
        "buyers": THESIS_GAME.n,
        "baseline_runs": baseline_runs,
        "baseline_rounds": baseline_rounds,
        "repeats": repeats,
        "sellers": sellers,
        "all_three_vectorised_s": total_vec,
        "speedup_wall": sums["loop_wall"] / sums["vec_wall"],
        "speedup_cpu": sums["loop_cpu"] / sums["vec_cpu"],
        "scale_runs": scale_runs,
        "scaling": scaling,
    }

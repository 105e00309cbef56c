"""Benchmark: the simulator of the repeated PD game against a per-round, per-buyer Python loop.

Targets, for each of Exp3, contextual Exp3 and alpha*-PD (thesis parameters, 10 buyers):
one run of 20,000 rounds at least 300x faster per round than the straightforward
implementation in :mod:`collabecon.bench.pricing_baseline` (the ``single`` rows), and 100
independent runs x 20,000 rounds at least 1,000x faster per run-round (the ``sellers`` rows).
The baseline is timed on fewer runs and rounds and compared per run-round, each side timed
alternately with it (:func:`~collabecon.bench.timing.best_of_each`); both sides also report
the mean seller utility per buyer so that the two agree in distribution.

Run: ``collabecon bench pricing-repeated [--runs 100] [--rounds 20000] [--baseline-runs 8]
[--baseline-rounds 2000] [--single-rounds 20000] [--scale-runs 1000] [--repeats 3]``; every
time is the best of ``--repeats`` (:mod:`collabecon.bench.timing`) as wall clock and as CPU
time of this process: both sides run on one core, so on a shared machine the CPU time is the
steadier. The single run is timed whole (tables, draws, the compiled rounds and the logs)
against one loop run of ``--baseline-rounds`` rounds; ``--single-rounds 0`` skips it.
The sizes are refused before any work when the vectorised runs cannot fit in memory
(:data:`BYTES_PER_RUN_ROUND`) or a side's work exceeds its ceiling
(:data:`MAX_VECTORISED_RUN_ROUNDS`, :data:`MAX_LOOP_RUN_ROUNDS`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from collabecon.bench.pricing_baseline import run_baseline
from collabecon.bench.timing import best_of, best_of_each, repeats_count, within
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


def _single(
    name: str,
    k: int,
    rounds: int,
    baseline_rounds: int,
    repeats: int,
    progress: Callable[[str], None],
) -> dict[str, Any]:
    """One run of ``rounds`` rounds against one loop run of ``baseline_rounds``, per round.

    A timing of our side plays :func:`_runs_per_sample` runs one after the other, so that it
    lasts long enough for the CPU clock (which ticks every few milliseconds while a profiling
    timer is armed) to measure it.
    """
    progress(f"{name}: one run of {rounds} rounds, loop one run of {baseline_rounds}")
    one = partial(_vectorised, name, 1, rounds, k)
    inner = _runs_per_sample(best_of(one, 1).seconds)
    timed = best_of_each(
        {
            "ours": partial(_in_a_row, one, inner),
            "loop": partial(_baseline, name, 1, baseline_rounds),
        },
        repeats,
    )
    ours, loop = timed["ours"], timed["loop"]
    per = {
        "ours_us_wall": ours.seconds / (inner * rounds) * 1e6,
        "ours_us_cpu": ours.cpu_seconds / (inner * rounds) * 1e6,
        "loop_us_wall": loop.seconds / baseline_rounds * 1e6,
        "loop_us_cpu": loop.cpu_seconds / baseline_rounds * 1e6,
    }
    return {
        "seller": name,
        "ours_s": ours.seconds,
        **per,
        "speedup_wall": _ratio(per["loop_us_wall"], per["ours_us_wall"]),
        "speedup_cpu": _ratio(per["loop_us_cpu"], per["ours_us_cpu"]),
    }


#: The shortest timing sample of one run's side (seconds).
SAMPLE_S = 0.05


def _runs_per_sample(seconds: float) -> int:
    """How many runs of ``seconds`` each make a timing sample of at least :data:`SAMPLE_S`."""
    return max(1, math.ceil(SAMPLE_S / max(seconds, 1e-6)))


def _in_a_row(work: Callable[[], Any], times: int) -> Any:
    """``work()`` ``times`` times; the last result."""
    for _ in range(times - 1):
        work()
    return work()


def _together(single: list[dict[str, Any]]) -> dict[str, float | None]:
    """The single run's speed-up for the sellers together: summed loop over summed ours."""
    if not single:
        return {}
    return {
        f"single_speedup_{clock}": _ratio(
            sum(s[f"loop_us_{clock}"] for s in single), sum(s[f"ours_us_{clock}"] for s in single)
        )
        for clock in ("wall", "cpu")
    }


def _ratio(loop: float, ours: float) -> float | None:
    """``loop / ours``; None where our side took no measurable time.

    The process's CPU clock can advance in ticks of a few milliseconds (while a profiling timer
    is armed), so a tiny run may measure 0 s of CPU: there is no ratio to give then.
    """
    return loop / ours if ours > 0 else None


def _mean_se(x: np.ndarray) -> dict[str, float]:
    return {"mean": float(x.mean()), "se": float(x.std(ddof=1) / np.sqrt(x.size))}


def measure_pricing_repeated(
    *,
    runs: int = 100,
    rounds: int = 20_000,
    baseline_runs: int = 8,
    baseline_rounds: int = 2_000,
    single_rounds: int = 20_000,
    scale_runs: int = 1_000,
    repeats: int = 3,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Microseconds per run-round of the simulator and of the loop, per seller.

    Each seller (:data:`SELLER_NAMES`) is simulated for ``runs`` x ``rounds`` (vectorised)
    and ``baseline_runs`` x ``baseline_rounds`` (loop), the two timed alternately; the
    speed-up compares time per run-round. ``single`` does the same for one run of
    ``single_rounds`` rounds against one loop run of ``baseline_rounds`` (0 skips it).
    Each seller's mean seller utility per buyer (mean and standard error over runs) is
    given for both sides at ``baseline_rounds``; ``scaling`` gives the vectorised cost at
    ``scale_runs`` runs (0 skips it). ``progress`` is called with a short text as each
    seller's timings start.

    Raises
    ------
    ValueError
        A size not a positive integer (``single_rounds`` and ``scale_runs`` may be 0), fewer
        than 2 runs, a side's work above its ceiling, or the runs beyond memory.
    """
    for name, value in (
        ("runs", runs),
        ("rounds", rounds),
        ("baseline_runs", baseline_runs),
        ("baseline_rounds", baseline_rounds),
    ):
        positive_int(name, value)
    repeats_count(repeats)
    for name, value in (("single_rounds", single_rounds), ("scale_runs", scale_runs)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    if runs < 2 or baseline_runs < 2:
        raise ValueError(
            f"runs and baseline_runs must be >= 2 (a standard error), got {runs}, {baseline_runs}"
        )
    sellers_times = len(SELLER_NAMES) * repeats
    within(
        f"runs={runs}, rounds={rounds}, single_rounds={single_rounds}, scale_runs={scale_runs}, "
        f"repeats={repeats}",
        ((runs + scale_runs) * rounds + single_rounds) * sellers_times,
        MAX_VECTORISED_RUN_ROUNDS,
        "simulated run-rounds",
    )
    within(
        f"baseline_runs={baseline_runs}, baseline_rounds={baseline_rounds}, repeats={repeats}",
        (baseline_runs + 1) * baseline_rounds * sellers_times,
        MAX_LOOP_RUN_ROUNDS,
        "looped run-rounds",
    )
    largest = max(max(runs, scale_runs) * max(rounds, baseline_rounds), single_rounds)
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
        timed = best_of_each(
            {
                "vec": partial(_vectorised, name, runs, rounds, k),
                "loop": partial(_baseline, name, baseline_runs, baseline_rounds),
            },
            repeats,
        )
        vec, loop = timed["vec"], timed["loop"]
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
                "speedup_wall": _ratio(per["loop_wall"], per["vec_wall"]),
                "speedup_cpu": _ratio(per["loop_cpu"], per["vec_cpu"]),
                "vectorised_seller_utility": _mean_se(short.seller_utility().mean(axis=1)),
                "loop_seller_utility": _mean_se(loop.result),
            }
        )
    single = (
        [
            _single(name, k, single_rounds, baseline_rounds, repeats, progress)
            for k, name in enumerate(SELLER_NAMES)
        ]
        if single_rounds
        else []
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
        "speedup_wall": _ratio(sums["loop_wall"], sums["vec_wall"]),
        "speedup_cpu": _ratio(sums["loop_cpu"], sums["vec_cpu"]),
        "single_rounds": single_rounds,
        "single": single,
        **_together(single),
        "scale_runs": scale_runs,
        "scaling": scaling,
    }

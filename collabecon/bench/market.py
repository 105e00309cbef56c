"""The market of many firms: the vectorised ladder vs the bottom-up recursion, firm by firm.

:func:`econ.market.market_round` solves the Bertrand equilibrium of ``n`` firms
(:mod:`econ.oligopoly`): a sort, then the ratios :math:`r_i = f_i(r_{i-1})` of the ladder as
the fixed point of whole-array sweeps, then the prices as a cumulative product. The
straightforward way (:func:`recursion_equilibrium`) runs the recursion and the prices in a
Python loop over numpy scalars, one firm at a time; both give the same floats, which the
benchmark checks.

Run: ``collabecon bench market [--firms 100000] [--repeats 5]``. Both sides are timed
alternately at ``--firms`` and at a tenth of it; the slope of the time against the number of
firms on a log-log scale (1 for linear work) is read between the two. The sizes are refused
before any work when the baseline's work exceeds :data:`MAX_BASELINE_FIRMS` firm-steps or the
arrays (:data:`BYTES_PER_FIRM` per firm) cannot fit in memory.
"""

from __future__ import annotations

import functools
import math
import platform
from collections.abc import Callable
from typing import Any

import numpy as np

from collabecon.bench.timing import best_of_each, repeats_count, within
from econ.market import market_round
from econ.oligopoly import SCALE_EXP, oligopoly_equilibrium
from econ.validation import fits_in_memory, positive_int

__all__ = [
    "BYTES_PER_FIRM",
    "MAX_BASELINE_FIRMS",
    "measure_market",
    "recursion_equilibrium",
]

#: bytes per firm of either side: about twenty float64 arrays of the firms' length
BYTES_PER_FIRM = 256
#: the most firm-steps of the baseline's loop over its repeats (about 15 minutes at 9 us each)
MAX_BASELINE_FIRMS = 10**8


def recursion_equilibrium(qualities: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Prices, demands and consumer surplus by the recursion of :mod:`econ.oligopoly`, firm by firm.

    The baseline of this benchmark and the tests' reference. It shares no code with
    :mod:`econ.oligopoly` (its shares, indifferent types and surplus are written out again)
    so that the tests' bit-for-bit comparison with the vectorised ladder can fail.

    Ties, exits and the scaling by ``2**SCALE_EXP`` as in
    :func:`econ.oligopoly.oligopoly_equilibrium`; the ladder is the module docstring's
    recursion :math:`r_i = 1/(2 + (d_{i+1}/d_i)(2 - r_{i-1}))`, :math:`p_i = r_i p_{i+1}`,
    evaluated firm by firm.

    References
    ----------
    Werner (2024), ch. 3, §3.2, Definitions 2-3, Lemmas 21-23, with n firms.
    """
    scale = 2.0**SCALE_EXP
    q = np.asarray(qualities, dtype=np.float64) * scale
    values, counts = np.unique(q[q > 0], return_counts=True)
    tied = values[counts > 1]
    base = float(tied[-1]) if tied.size else 0.0
    above = q > base
    price, demand = np.zeros(q.size), np.zeros(q.size)
    theta_first, surplus = 1.0, 0.0
    if np.any(above):
        order = np.flatnonzero(above)[np.argsort(q[above], kind="stable")]
        qs = q[order]
        gaps = np.diff(qs, prepend=base)
        n = gaps.size
        r = np.zeros(n)
        with np.errstate(over="ignore"):
            for i in range(n - 1):
                r[i] = 1.0 / (2.0 + gaps[i + 1] / gaps[i] * (2.0 - (r[i - 1] if i else 0.0)))
        p = np.empty(n)
        p[-1] = gaps[-1] / (2.0 - (r[-2] if n > 1 else 0.0))
        for i in range(n - 2, -1, -1):
            p[i] = r[i] * p[i + 1]
        share = p / gaps + np.append(p[:-1] / gaps[1:], 0.0)
        theta = p * (1.0 - np.concatenate(([0.0], r[:-1]))) / gaps
        bounds = np.append(theta, 1.0)
        price[order], demand[order] = p, share
        theta_first = float(theta[0])
        surplus = float(np.sum(qs * (bounds[1:] ** 2 - bounds[:-1] ** 2) / 2 - p * share))
    if tied.size:
        group = q == base
        demand[group] = theta_first / np.count_nonzero(group)
        surplus += base * theta_first**2 / 2
    return price / scale, demand, surplus / scale


def measure_market(
    *,
    firms: int = 100_000,
    repeats: int = 5,
    seed: int = 0,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    r"""Time :func:`econ.oligopoly.oligopoly_equilibrium` against :func:`recursion_equilibrium`.

    The same work on both sides: prices, demands and surplus of the qualities.
    :func:`econ.market.market_round`, which adds the firms' names (built once per number of
    firms) and the result record, is timed with them (``market_round_seconds``).

    Qualities are drawn uniformly from [0, 1) (``seed``). At ``firms`` and at ``firms // 10``
    (at least 1) both sides are timed alternately, each the best of ``repeats`` after a
    warm-up; a side's ``slope`` is :math:`\log(t_n / t_m) / \log(n / m)` between the two
    sizes (``None`` for one firm). The results of the two sides are compared:
    ``max_abs_difference`` (0 when they agree bit for bit) over prices, demands and the
    consumer surplus.

    Raises
    ------
    ValueError
        A size not a positive integer, the baseline's work above
        :data:`MAX_BASELINE_FIRMS`, or the arrays beyond memory.
    """
    positive_int("firms", firms)
    repeats_count(repeats)
    small = max(1, firms // 10)
    within(
        f"firms={firms}, repeats={repeats}",
        float(firms + small) * (repeats + 1),
        MAX_BASELINE_FIRMS,
        "firm-steps of the loop",
    )
    fits_in_memory(f"firms={firms}", float(BYTES_PER_FIRM) * firms)
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {
        "machine": f"{platform.machine()} {platform.processor() or platform.system()}",
        "firms": firms,
        "small_firms": small,
        "repeats": repeats,
    }
    times, rounds = {}, {}
    for n in (small, firms):
        q = rng.random(n)
        progress(f"{n} firms: vectorised ladder and firm-by-firm loop, best of {repeats}")
        market_round(q[: min(n, 10)])  # warm-up
        best = best_of_each(
            {
                "ours": functools.partial(oligopoly_equilibrium, q),
                "market_round": functools.partial(market_round, q),
                "baseline": functools.partial(recursion_equilibrium, q),
            },
            repeats,
        )
        times[n] = (best["ours"].seconds, best["baseline"].seconds)
        rounds[n] = best["market_round"].seconds
        ours, (price, demand, surplus) = best["ours"].result, best["baseline"].result
        out["max_abs_difference" if n == firms else "small_max_abs_difference"] = max(
            float(np.max(np.abs(ours.price - price))),
            float(np.max(np.abs(ours.demand - demand))),
            abs(ours.consumer_surplus - surplus),
            float(np.max(np.abs(best["market_round"].result.price - price))),
        )
    (ours_small, base_small), (ours_s, base_s) = times[small], times[firms]
    out.update(
        {
            "ours_seconds": round(ours_s, 5),
            "baseline_seconds": round(base_s, 4),
            "speed_ratio": round(base_s / ours_s, 1),
            "market_round_seconds": round(rounds[firms], 5),
            "small_market_round_seconds": round(rounds[small], 5),
            "small_ours_seconds": round(ours_small, 5),
            "small_baseline_seconds": round(base_small, 4),
            "ours_slope": _slope(ours_small, ours_s, small, firms),
            "baseline_slope": _slope(base_small, base_s, small, firms),
        }
    )
    return out


def _slope(t_small: float, t_large: float, small: int, large: int) -> float | None:
    if small == large:
        return None
    return round(math.log(t_large / t_small) / math.log(large / small), 2)

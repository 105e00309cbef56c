"""The one timer of every benchmark: the best of ``repeats`` timings.

On a shared machine a timing can only be lengthened by other jobs, never shortened, so the
least disturbed one, the minimum over repeats, is the estimate of the work's cost. Two
sides of a comparison are timed alternately (:func:`best_of_each`), so that a slow spell of
the machine falls on both. Warm-up calls (first-call imports, allocations, compilation) are
the caller's, before timing.

This module imports neither torch nor numpy; a GPU side passes ``sync`` (for instance
``torch.cuda.synchronize``) so that the clock stops when the device has finished.

Every benchmark checks its sizes before any work: the repeats against :data:`MAX_REPEATS`
(:func:`repeats_count`) and the work it would time against its own documented ceiling
(:func:`within`), so that a mistyped size is one line of error, not hours of timing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_REPEATS", "Timing", "best_of", "best_of_each", "repeats_count", "within"]

#: the most timed repeats of one side: the best of a few is the estimate, a thousand is a typo
MAX_REPEATS = 1000


@dataclass(frozen=True)
class Timing:
    """The shortest wall-clock and CPU times over the repeats, and the last call's result.

    ``seconds`` is the shortest wall-clock time and ``cpu_seconds`` the shortest CPU time of
    this process, each minimised on its own; ``result`` is what the last call returned.
    """

    seconds: float
    cpu_seconds: float
    result: Any


def repeats_count(repeats: int) -> int:
    """Check that ``repeats`` is an integer in [1, :data:`MAX_REPEATS`] and return it.

    Raises
    ------
    ValueError
        ``repeats`` not an integer, below 1 or above :data:`MAX_REPEATS`.
    """
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be an integer >= 1, got {repeats!r}")
    if repeats > MAX_REPEATS:
        raise ValueError(f"repeats must be at most {MAX_REPEATS}, got {repeats}")
    return repeats


def within(sizes: str, work: float, ceiling: float, unit: str) -> None:
    """Refuse a benchmark whose timed ``work`` (in ``unit``) exceeds its ``ceiling``.

    Parameters
    ----------
    sizes : str
        The sizes that ask for the work (``"clients=80, steps=5"``), for the message.
    work, ceiling : float
        The work the sizes ask for and the most a benchmark times, in ``unit``.
    unit : str
        What is counted (``"example-gradients"``).

    Raises
    ------
    ValueError
        ``work`` above ``ceiling``, naming the sizes and both amounts.
    """
    if work > ceiling:
        raise ValueError(
            f"{sizes} ask for {work:.3g} {unit}, above the ceiling of {ceiling:.3g} {unit} "
            "of this benchmark; choose smaller sizes"
        )


def best_of_each(
    works: Mapping[str, Callable[[], Any]],
    repeats: int,
    *,
    sync: Callable[[], None] | None = None,
) -> dict[str, Timing]:
    """Time every ``works[name]()`` ``repeats`` times, alternating, and keep each one's best.

    Parameters
    ----------
    works : mapping of str to callable
        The sides, each a call without arguments; called in order, once per repeat.
    repeats : int
        Timings of each side (>= 1).
    sync : callable, optional
        Called before the clock starts and before it stops (wait for a device).

    Returns
    -------
    dict of str to Timing
        ``min`` over the repeats of the wall-clock and of the CPU time of each side.
    """
    repeats_count(repeats)
    wall = {name: float("inf") for name in works}
    cpu = dict(wall)
    last: dict[str, Any] = {}
    for _ in range(repeats):
        for name, work in works.items():
            if sync is not None:
                sync()
            began, began_cpu = time.perf_counter(), time.process_time()
            last[name] = work()
            if sync is not None:
                sync()
            wall[name] = min(wall[name], time.perf_counter() - began)
            cpu[name] = min(cpu[name], time.process_time() - began_cpu)
    return {name: Timing(wall[name], cpu[name], last[name]) for name in works}


def best_of(
    work: Callable[[], Any], repeats: int, *, sync: Callable[[], None] | None = None
) -> Timing:
    """The best of ``repeats`` timings of ``work()`` (:func:`best_of_each` with one side)."""
    return best_of_each({"work": work}, repeats, sync=sync)["work"]

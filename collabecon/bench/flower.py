"""A run in Flower's simulation engine vs the same run in process: start-up, rounds, ratio.

Both sides get the same :class:`learning.train.TrainConfig` and compute the same models (for
a given seed the Flower federation reproduces :func:`learning.train.train`,
:mod:`learning.runtimes.flower`): ``train`` is :func:`learning.train.train` on the CPU,
``flower`` is :func:`learning.runtimes.flower.simulation.simulate`, the work of
``collabecon flower simulate``: the partitions written to a fresh folder, Ray and one
ClientApp actor per CPU started, the run, Ray shut down. They are timed alternately, after
one warm-up call of each, and the best of ``repeats`` of each counts
(:func:`collabecon.bench.timing.best_of_each`).

The Flower side is split with the time its server spends in the rounds
(:attr:`learning.runtimes.flower.apps.FlowerResult.seconds`, from the first round's message
to the final evaluation): ``flower_round_seconds`` is the best of it over the repeats divided
by the rounds, ``flower_startup_seconds`` the best whole run minus the best rounds (the fixed
cost: partitions, Ray, the actors' imports, the nodes' first answers, shutting Ray down).
Without the ``flower`` extra the benchmark returns ``skipped`` and the reason.
"""

from __future__ import annotations

import importlib.util
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import torch

from collabecon.bench.clients import MAX_EXAMPLE_GRADIENTS, max_weight_difference
from collabecon.bench.timing import best_of_each, repeats_count, within
from econ.outputs import plain
from econ.validation import positive_int
from learning.train import TrainConfig, train

__all__ = ["FlowerBenchmark", "flower_missing", "measure_flower"]


@dataclass(frozen=True, slots=True)
class FlowerBenchmark:
    """Seconds of one run in process and in Flower's simulation engine, and their ratio.

    ``ratio`` is ``flower_seconds / train_seconds``; ``train_round_seconds`` is the whole
    in-process run divided by the rounds.
    """

    algorithm: str
    dataset: str
    model: str
    clients: int
    rounds: int
    repeats: int
    threads: int
    cpus: int
    train_seconds: float
    flower_seconds: float
    ratio: float
    flower_startup_seconds: float
    flower_round_seconds: float
    train_round_seconds: float
    max_weight_difference: float

    def to_dict(self) -> dict[str, Any]:
        """The benchmark's fields as JSON-ready data (:func:`econ.outputs.plain`)."""
        return plain(asdict(self))


def flower_missing() -> str | None:
    """Why the Flower side cannot run here (``flwr`` or ``ray`` not installed), else None."""
    for module in ("flwr", "ray"):
        if importlib.util.find_spec(module) is None:
            return f'{module} is not installed: pip install -e ".[flower]" (flwr[simulation])'
    return None


def measure_flower(
    *,
    algorithm: str = "fedavg",
    dataset: str = "mnist5k",
    model: str = "lenet5",
    clients: int = 10,
    rounds: int = 10,
    repeats: int = 2,
    cpus: int | None = None,
    seed: int = 0,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Time ``config`` in process and in a Flower simulation on ``cpus`` CPUs.

    The other settings of the run are :class:`learning.train.TrainConfig`'s defaults.
    ``cpus`` (default: torch's threads) is Ray's CPUs, one ClientApp actor each;
    ``progress`` is called with a short text as each phase starts.

    Returns
    -------
    dict
        The fields of :class:`FlowerBenchmark`, or ``skipped`` (why) without Flower.

    Raises
    ------
    ValueError
        A size not a positive integer, ``repeats`` above the ceiling, more work than
        :data:`collabecon.bench.clients.MAX_EXAMPLE_GRADIENTS`, a run the configuration or
        the Flower federation refuses.
    """
    repeats = repeats_count(repeats)
    threads = torch.get_num_threads()
    cpus = threads if cpus is None else positive_int("cpus", cpus)
    config = TrainConfig(
        algorithm=algorithm,
        dataset=dataset,
        model=model,
        clients=clients,
        rounds=rounds,
        seed=seed,
    )
    within(
        f"clients={config.clients}, rounds={config.rounds}, repeats={repeats}",
        2.0
        * config.clients
        * config.rounds
        * config.local_steps
        * config.batch_size
        * (repeats + 1),
        MAX_EXAMPLE_GRADIENTS,
        "example-gradients",
    )
    missing = flower_missing()
    if missing is not None:
        progress(f"skipped: {missing}")
        return {"skipped": missing}
    from learning.runtimes.flower.apps import check_flower_config
    from learning.runtimes.flower.simulation import simulate

    check_flower_config(config)
    rounds_seconds: list[float] = []

    def in_flower() -> Any:
        with tempfile.TemporaryDirectory(prefix="collabecon-bench-flower-") as work:
            result = simulate([config], work, cpus=cpus)[0]
        rounds_seconds.append(result.seconds)
        return result

    works = {"train": lambda: train(config, device="cpu"), "flower": in_flower}
    progress(f"warm-up: one run in process and one in Flower ({cpus} CPUs)")
    for work in works.values():
        work()
    rounds_seconds.clear()
    progress(f"timing the run in process and in Flower: best of {repeats}")
    timings = best_of_each(works, repeats)
    best = {name: t.seconds for name, t in timings.items()}
    best_rounds = min(rounds_seconds)
    return FlowerBenchmark(
        algorithm=config.algorithm,
        dataset=config.dataset,
        model=config.model,
        clients=config.clients,
        rounds=config.rounds,
        repeats=repeats,
        threads=threads,
        cpus=cpus,
        train_seconds=best["train"],
        flower_seconds=best["flower"],
        ratio=best["flower"] / best["train"],
        flower_startup_seconds=best["flower"] - best_rounds,
        flower_round_seconds=best_rounds / config.rounds,
        train_round_seconds=best["train"] / config.rounds,
        max_weight_difference=max_weight_difference(
            timings["train"].result.models, timings["flower"].result.models
        ),
    ).to_dict()

"""Experiments in Flower's simulation engine (Ray): one virtual SuperNode per client.

:func:`simulate` writes each experiment's partitions (:mod:`learning.runtimes.flower.partitions`),
starts one simulated federation with as many SuperNodes as the largest experiment has
clients, and runs the experiments one after another on it (:func:`learning.runtimes.flower.apps.serve`):
node ``k`` reads only ``partition-<k>.npz``. The Ray workers import this same ``learning``
package (its root is put first on their ``PYTHONPATH``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import learning
from learning.runtimes.flower.apps import (
    FlowerResult,
    check_flower_config,
    client_app,
    server_app_for,
)
from learning.runtimes.flower.partitions import write_partitions
from learning.train import TrainConfig

__all__ = ["simulate", "simulate_directories"]


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


def simulate(
    configs: Sequence[TrainConfig],
    work_dir: str | os.PathLike[str],
    *,
    data_dir: str | None = None,
    cpus: int | None = None,
) -> list[FlowerResult]:
    """Run every experiment of ``configs`` in one Flower simulation; their results in order.

    Parameters
    ----------
    configs : sequence of TrainConfig
        The experiments (each as :func:`learning.train.train` would run it).
    work_dir : path
        Where the partitions (``run-<i>-<algorithm>/``) are written.
    data_dir : str, optional
        Where the datasets are read from (:func:`learning.federation.make_federation`).
    cpus : int, optional
        CPUs Ray may use (one per ClientApp running at a time); all by default.

    Raises
    ------
    ValueError
        An experiment the federation does not run (:func:`check_flower_config`), or none.
    RuntimeError
        The server failed (its exception is chained).
    """
    if not configs:
        raise ValueError("configs must name at least one experiment")
    for config in configs:
        check_flower_config(config)
    runs = []
    for i, config in enumerate(configs):
        directory = Path(work_dir) / f"run-{i}-{config.algorithm}"
        write_partitions(config, directory, data_dir)
        runs.append((str(directory), str(directory)))
    return simulate_directories(runs, max(c.clients for c in configs), cpus=cpus)


def simulate_directories(
    runs: Sequence[tuple[str, str]], supernodes: int, *, cpus: int | None = None
) -> list[Any]:
    """Run the federations already written to disk in one simulation; their results in order.

    Each is a ``(meta_dir, node_data_dir)`` of any kind
    :func:`learning.runtimes.flower.apps.serve_any` serves; the simulation has
    ``supernodes`` SuperNodes.

    Raises
    ------
    RuntimeError
        The server failed (its exception is chained).
    """
    from flwr.simulation import run_simulation

    results: list[Any] = []
    root = str(Path(learning.__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    init: dict[str, Any] = {"include_dashboard": False}
    if cpus is not None:
        init["num_cpus"] = int(cpus)
    with _environment({"PYTHONPATH": path, "FLWR_TELEMETRY_ENABLED": "0"}):
        run_simulation(
            server_app_for(list(runs), results),
            client_app,
            num_supernodes=int(supernodes),
            backend_config={
                "client_resources": {"num_cpus": 1, "num_gpus": 0.0},
                "init_args": init,
            },
        )
    for outcome in results:
        if isinstance(outcome, Exception):
            raise RuntimeError(f"the Flower server failed: {outcome}") from outcome
    if len(results) != len(runs):
        raise RuntimeError(f"the Flower server finished {len(results)} of {len(runs)} runs")
    return results

"""Experiments in Flower's simulation engine (Ray): one virtual SuperNode per client.

:func:`simulate` writes each experiment's partitions (:mod:`learning.runtimes.flower.partitions`),
starts one simulated federation with as many SuperNodes as the largest experiment has
clients, and runs the experiments one after another on it (:func:`learning.runtimes.flower.apps.serve`):
node ``k`` reads only ``partition-<k>.npz``. The Ray workers import this same ``learning``
package (its root is put first on their ``PYTHONPATH``).

The federation runs in the simulation runtime that ``flwr run`` starts on a SuperLink in
simulation mode (``flwr-simulation``), called in this process without the SuperLink, the
Flower App bundle and the extra processes around it (``flwr.simulation.run_simulation``, the
deprecated entry point, wraps the same runtime). Ray is started here, lean
(:data:`RAY_INIT`: no dashboard, no log streaming to this process, no usage report, no runtime
environment per worker), with one ClientApp actor per CPU, and shut down when the runs end
(Flower's runtime shuts down a Ray it finds already running, too).
"""

from __future__ import annotations

import contextlib
import logging
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

__all__ = ["RAY_INIT", "run_apps", "simulate", "simulate_directories"]

#: ``ray.init`` settings of a simulation (with ``num_cpus``): no dashboard, ClientApps' output
#: left in Ray's session logs, Ray's own messages from warnings up
RAY_INIT: dict[str, Any] = {
    "include_dashboard": False,
    "log_to_driver": False,
    "logging_level": logging.WARNING,
}

#: the environment of a simulation: no telemetry, no Ray usage report
_QUIET = {"FLWR_TELEMETRY_ENABLED": "0", "RAY_USAGE_STATS_ENABLED": "0"}


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


def run_apps(
    server_app: Any,
    client_app: Any,
    supernodes: int,
    *,
    cpus: int | None = None,
    pythonpath: Sequence[str] = (),
) -> None:
    """Run any ``ServerApp`` with ``supernodes`` SuperNodes of ``client_app`` in the simulation.

    The runtime of ``flwr run``'s simulation mode, in this process, on a lean Ray
    (:data:`RAY_INIT`) with one ClientApp actor per CPU: a user's own apps (with the
    mechanisms of :mod:`learning.runtimes.flower.compose` around their strategy) run here as
    collabecon's do. The Ray workers import ``learning`` and the folders of ``pythonpath``
    (where the user's App modules live), ahead of the caller's ``PYTHONPATH``.

    Raises
    ------
    ValueError
        ``supernodes`` or ``cpus`` below 1.
    """
    import ray
    from flwr.simulation.run_simulation import _run_simulation
    from flwr.supercore.telemetry import EventType

    if int(supernodes) < 1:
        raise ValueError(f"supernodes must be at least 1, got {supernodes!r}")
    if cpus is not None and int(cpus) < 1:
        raise ValueError(f"cpus must be at least 1, got {cpus!r}")
    root = str(Path(learning.__file__).resolve().parents[1])
    parts = (*(str(p) for p in pythonpath), root, os.environ.get("PYTHONPATH", ""))
    # the workers inherit this environment from the raylet, which Ray starts here
    with _environment({"PYTHONPATH": os.pathsep.join(p for p in parts if p), **_QUIET}):
        started = not ray.is_initialized()
        if started:
            ray.init(**RAY_INIT, num_cpus=None if cpus is None else int(cpus))
        try:
            _run_simulation(
                num_supernodes=int(supernodes),
                exit_event=EventType.PYTHON_API_RUN_SIMULATION_LEAVE,
                client_app=client_app,
                server_app=server_app,
                backend_name="ray",
                backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0}},
            )
        finally:
            if started:
                ray.shutdown()


def simulate_directories(
    runs: Sequence[tuple[str, str]], supernodes: int, *, cpus: int | None = None
) -> list[Any]:
    """Run the federations already written to disk in one simulation; their results in order.

    Each is a ``(meta_dir, node_data_dir)`` of any kind
    :func:`learning.runtimes.flower.apps.serve_any` serves; the simulation has
    ``supernodes`` SuperNodes (:func:`run_apps`).

    Raises
    ------
    RuntimeError
        The server failed (its exception is chained).
    """
    results: list[Any] = []
    run_apps(server_app_for(list(runs), results), client_app, supernodes, cpus=cpus)
    for outcome in results:
        if isinstance(outcome, Exception):
            raise RuntimeError(f"the Flower server failed: {outcome}") from outcome
    if len(results) != len(runs):
        raise RuntimeError(f"the Flower server finished {len(results)} of {len(runs)} runs")
    return results

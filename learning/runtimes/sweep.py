"""Grid sweeps of training runs: planning, a result store that resumes, and the engines.

A sweep is the cartesian product of a ``[grid]`` over fixed ``[train]`` fields of
:class:`learning.train.TrainConfig` (:func:`plan`). Each run is identified by its
*key*, the first 16 hex digits of the SHA-256 of its complete configuration
(``TrainConfig.to_dict()`` as canonical JSON, defaults included), so two runs with the same
configuration share a key and a changed field gives a new one.

:class:`ResultStore` keeps one JSON file per finished run, ``<key>.json``, written atomically
(a temporary file in the same folder, then :func:`os.replace`) the moment the run finishes,
and one ``<key>.error.txt`` per run that failed after its retries. A sweep started again over
the same folder skips every run whose result file exists and records the same configuration,
so a sweep that was interrupted resumes where it stopped; failed runs are run again.

Engines (:data:`ENGINES`) run the runs still to do and yield each outcome as it arrives:

``local``
    one run after another in this process (``workers == 1``), or a
    :class:`concurrent.futures.ProcessPoolExecutor` of ``workers`` spawned processes.
``ray``
    one Ray task per run (:func:`ray_runner`): on a running cluster
    (``address="auto"`` or ``"host:port"``) with the cluster's own resources, or on a local
    Ray of ``workers`` CPUs. The packages ``econ``, ``games`` and ``learning`` travel to the
    workers in the job's ``runtime_env`` (``py_modules``). With ``device="cuda"`` every task
    asks Ray for ``gpus_per_run`` GPUs (a fraction shares one GPU between runs).

A run that raises is tried again up to ``retries`` times; one that still fails is recorded
in its error file and reported, and the other runs go on.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import itertools
import json
import multiprocessing
import os
import re
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any

from econ.outputs import plain, write_atomically

#: the measures of one run, in the order of the CSV columns after the grid values
MEASURES = ("mean_accuracy", "mean_loss", "target_accuracy", "seconds")
ENGINES = ("local", "ray")
#: what never travels to Ray workers with the packages
RUNTIME_EXCLUDES = ["__pycache__", "*.pyc", "data/", "outputs/", "out/", "runs/"]
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # terminal colours in Ray's error text


@dataclasses.dataclass(frozen=True)
class Run:
    """One point of a sweep's grid.

    ``grid`` holds this point's grid values, ``fields`` the keyword arguments of its
    ``TrainConfig``, ``config`` that configuration in full (``TrainConfig.to_dict()``) and
    ``key`` the hash naming its files.
    """

    index: int
    grid: dict[str, Any]
    fields: dict[str, Any]
    config: dict[str, Any]
    key: str


@dataclasses.dataclass(frozen=True)
class RunOutcome:
    """What became of one run: its measures, or the error text after ``attempts`` tries."""

    run: Run
    measures: dict[str, Any] | None
    error: str | None = None
    attempts: int = 1


def _set(fields: dict[str, Any], key: str, value: Any) -> None:
    head, _, rest = key.partition(".")
    if rest:
        inner = dict(fields.get(head) or {})
        inner[rest] = value
        fields[head] = inner
    else:
        fields[head] = value


def expand_grid(train: Mapping[str, Any], grid: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every point of the grid: ``train`` updated with one value of each ``grid`` list.

    A dotted grid key (``"partition_params.alpha"``) sets one entry of a mapping field.
    """
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            raise ValueError(f"grid entry {key!r} must be a non-empty list, got {values!r}")
    points = []
    for combo in itertools.product(*grid.values()):
        fields = {k: dict(v) if isinstance(v, Mapping) else v for k, v in train.items()}
        for key, value in zip(grid, combo, strict=True):
            _set(fields, key, value)
        points.append({"grid": dict(zip(grid, combo, strict=True)), "fields": fields})
    return points


def make_config(fields: Mapping[str, Any]) -> Any:
    """The ``TrainConfig`` of ``fields``; an unknown field name is a ValueError."""
    from learning.train import TrainConfig

    try:
        return TrainConfig(**fields)
    except TypeError as exc:  # an unknown field name
        raise ValueError(f"[train]/[grid] name a field TrainConfig does not have: {exc}") from exc


def run_key(config: Mapping[str, Any]) -> str:
    """First 16 hex digits of the SHA-256 of ``config`` as canonical JSON (sorted keys)."""
    text = json.dumps(plain(dict(config)), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def plan(train: Mapping[str, Any], grid: Mapping[str, Any]) -> list[Run]:
    """The runs of a sweep in grid order, every configuration checked before any run."""
    runs = []
    for index, point in enumerate(expand_grid(train, grid)):
        config = make_config(point["fields"]).to_dict()
        runs.append(Run(index, point["grid"], point["fields"], config, run_key(config)))
    return runs


def run_point(
    fields: Mapping[str, Any], device: str | None, data_dir: str | None
) -> dict[str, Any]:
    """Train one configuration and return its measures (:data:`MEASURES`); runs in a worker.

    A run whose training diverged (:attr:`learning.train.TrainResult.diverged`) has no
    measures: it raises :class:`learning.loop.DivergedError` with the reason, and the sweep
    records it as failed.
    """
    from learning.loop import DivergedError
    from learning.train import train

    result = train(make_config(fields), device=device, data_dir=data_dir, on_divergence="stop")
    if result.diverged is not None:
        raise DivergedError(result.diverged)
    target = result.target
    return {
        "mean_accuracy": None if result.mean_accuracy is None else float(result.mean_accuracy),
        "mean_loss": float(result.loss.mean()),
        "target_accuracy": (
            None if target is None or target.accuracy is None else float(target.accuracy.mean())
        ),
        "seconds": float(result.seconds),
    }


class ResultStore:
    """One file per run in ``folder``.

    ``<key>.json`` when it finished, ``<key>.error.txt`` when it failed.
    """

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)

    def result_path(self, run: Run) -> Path:
        """The file of ``run``'s measures: ``<folder>/<key>.json``."""
        return self.folder / f"{run.key}.json"

    def error_path(self, run: Run) -> Path:
        """The file of ``run``'s failure: ``<folder>/<key>.error.txt``."""
        return self.folder / f"{run.key}.error.txt"

    def load(self, run: Run) -> dict[str, Any] | None:
        """The stored measures of ``run``, or None when there are none for its configuration.

        None for no file, an unreadable file, or a file recording another configuration.
        """
        try:
            record = json.loads(self.result_path(run).read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(record, dict) or record.get("config") != plain(run.config):
            return None
        measures = record.get("measures")
        return measures if isinstance(measures, dict) else None

    def save(self, run: Run, measures: Mapping[str, Any]) -> Path:
        """Record ``run``'s measures (and drop an error file of an earlier failure)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        record = {"key": run.key, "grid": run.grid, "config": run.config, "measures": measures}
        path = self.result_path(run)
        write_atomically(path, json.dumps(plain(record), indent=1) + "\n")
        self.error_path(run).unlink(missing_ok=True)
        return path

    def fail(self, run: Run, error: str, attempts: int) -> Path:
        """Record that ``run`` failed ``attempts`` times, with the last error's text."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.error_path(run)
        head = json.dumps(plain({"grid": run.grid, "config": run.config}), sort_keys=True)
        write_atomically(path, f"run {run.key} failed {attempts} time(s)\n{head}\n\n{error}\n")
        return path


#: an engine: (runs to do, device, data_dir, retries) -> outcomes as the runs finish
Runner = Callable[[Sequence[Run], str | None, str | None, int], Iterator[RunOutcome]]


def _error_text(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


def serial_runner(
    runs: Sequence[Run], device: str | None, data_dir: str | None, retries: int
) -> Iterator[RunOutcome]:
    """One run after another in this process, each tried up to ``retries + 1`` times."""
    for run in runs:
        for attempt in range(1, retries + 2):
            try:
                measures = run_point(run.fields, device, data_dir)
            except Exception as exc:  # a failed run is recorded; the sweep goes on
                error = _error_text(exc)
                continue
            yield RunOutcome(run, measures, attempts=attempt)
            break
        else:
            yield RunOutcome(run, None, error, retries + 1)


def _limit_threads(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)


def pool_runner(workers: int) -> Runner:
    """A pool of ``workers`` spawned processes, each limited to its share of the CPU threads.

    A run that raises is submitted again until it has been tried ``retries + 1`` times.
    """

    def runner(
        runs: Sequence[Run], device: str | None, data_dir: str | None, retries: int
    ) -> Iterator[RunOutcome]:
        threads = max(1, (os.cpu_count() or 1) // workers)
        with ProcessPoolExecutor(
            max_workers=workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_limit_threads,
            initargs=(threads,),
        ) as pool:
            pending: dict[Future[dict[str, Any]], tuple[Run, int]] = {
                pool.submit(run_point, run.fields, device, data_dir): (run, 1) for run in runs
            }
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    run, attempt = pending.pop(future)
                    exc = future.exception()
                    if exc is None:
                        yield RunOutcome(run, future.result(), attempts=attempt)
                        continue
                    if attempt <= retries:
                        try:
                            again = pool.submit(run_point, run.fields, device, data_dir)
                        except RuntimeError as broken:  # the pool lost a worker process
                            yield RunOutcome(run, None, _error_text(broken), attempt)
                        else:
                            pending[again] = (run, attempt + 1)
                        continue
                    yield RunOutcome(run, None, _error_text(exc), attempt)

    return runner


def runtime_env() -> dict[str, Any]:
    """The Ray ``runtime_env`` of a sweep.

    The packages ``econ``, ``games`` and ``learning`` of this checkout as ``py_modules``
    (without caches, data or outputs).
    """
    import econ
    import games
    import learning

    return {
        "py_modules": [str(Path(str(m.__file__)).parent) for m in (econ, games, learning)],
        "excludes": list(RUNTIME_EXCLUDES),
    }


def ray_runner(address: str | None, workers: int, gpus_per_run: float) -> Runner:
    """One Ray task per run, results taken as they finish (``ray.wait``).

    With ``address`` set, ``ray.init(address=address, runtime_env=...)`` joins the running
    cluster and uses its resources as they are; without it, a local Ray of ``workers`` CPUs.
    The workers' output stays in Ray's log files (``log_to_driver=False``).
    A Ray already initialised in this process is used as it is. Ray retries a task that
    raises (``max_retries=retries``, ``retry_exceptions=True``) or whose worker died.
    """
    if importlib.util.find_spec("ray") is None:
        raise ValueError(
            "--engine ray needs Ray, which is not installed: pip install 'collabecon[ray]'"
        )

    def runner(
        runs: Sequence[Run], device: str | None, data_dir: str | None, retries: int
    ) -> Iterator[RunOutcome]:
        import ray

        started = not ray.is_initialized()
        if started:
            # workers' output stays in Ray's logs: this process's stdout carries the result
            if address is None:
                ray.init(num_cpus=workers, runtime_env=runtime_env(), log_to_driver=False)
            else:
                ray.init(address=address, runtime_env=runtime_env(), log_to_driver=False)
        try:
            gpus = gpus_per_run if device is not None and device.startswith("cuda") else 0
            task = ray.remote(run_point).options(
                num_gpus=gpus, max_retries=retries, retry_exceptions=True
            )
            pending = {task.remote(run.fields, device, data_dir): run for run in runs}
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    run = pending.pop(ref)
                    try:
                        yield RunOutcome(run, ray.get(ref))
                    except Exception as exc:  # the task's error after its retries
                        text = _ANSI.sub("", str(exc)) or _error_text(exc)
                        yield RunOutcome(run, None, text, retries + 1)
        finally:
            if started:
                ray.shutdown()

    return runner


@dataclasses.dataclass(frozen=True)
class SweepResult:
    """A sweep's record: finished runs' measures, which were reused, and the failed runs.

    The measures of every finished run (grid order), which of them came from an earlier
    sweep over the same folder, and the failed runs.
    """

    runs: list[Run]
    measures: dict[str, dict[str, Any]]
    resumed: list[str]
    failed: list[RunOutcome]


def sweep(
    runs: Sequence[Run],
    store: ResultStore,
    runner: Runner,
    *,
    device: str | None = None,
    data_dir: str | None = None,
    retries: int = 1,
    on_outcome: Callable[[RunOutcome], None] | None = None,
) -> SweepResult:
    """Run every run ``store`` has no result for, saving each as it finishes.

    Parameters
    ----------
    runs : sequence of Run
        The sweep (:func:`plan`).
    store : ResultStore
        Where results are read from and written to.
    runner : Runner
        The engine (:func:`serial_runner`, :func:`pool_runner`, :func:`ray_runner`).
    device, data_dir : str or None
        Passed to :func:`learning.train.train`.
    retries : int
        Extra attempts of a run that raises (>= 0).
    on_outcome : callable, optional
        Called with every outcome after it is stored.
    """
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ValueError(f"retries must be an integer >= 0, got {retries!r}")
    measures: dict[str, dict[str, Any]] = {}
    resumed = []
    for run in runs:
        stored = store.load(run)
        if stored is not None:
            measures[run.key] = stored
            resumed.append(run.key)
    todo = [run for run in runs if run.key not in measures]
    failed = []
    if todo:
        for outcome in runner(todo, device, data_dir, retries):
            if outcome.measures is not None:
                store.save(outcome.run, outcome.measures)
                measures[outcome.run.key] = outcome.measures
            else:
                store.fail(outcome.run, outcome.error or "", outcome.attempts)
                failed.append(outcome)
            if on_outcome is not None:
                on_outcome(outcome)
    failed.sort(key=lambda o: o.run.index)
    return SweepResult(list(runs), measures, resumed, failed)

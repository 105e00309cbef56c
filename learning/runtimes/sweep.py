"""Grid sweeps of training runs: planning, a result store that resumes, and the engines.

A sweep is the cartesian product of a ``[grid]`` over fixed ``[train]`` fields of
:class:`learning.train.TrainConfig` (:func:`plan`). Each run is identified by its
*key*, the first 16 hex digits of the SHA-256 of its complete configuration
(``TrainConfig.to_dict()`` as canonical JSON, defaults included), so two runs with the same
configuration share a key and a changed field gives a new one. A grid of more than
:data:`MAX_RUNS` points is refused before it is expanded, and so is a grid that names a
configuration twice or sets a field that ``[train]`` sets too. :func:`check_runs` then takes
every run through what :func:`learning.train.train` does before its first round (data read,
clients dealt, model and algorithm built), so that a grid point that would fail is refused,
naming the point, before any run starts (:class:`GridPointError`).

:class:`ResultStore` keeps one JSON file per finished run, ``<key>.json``, written atomically
(a temporary file in the same folder, then :func:`os.replace`) the moment the run finishes,
and one ``<key>.error.txt`` per run that failed after its retries. A sweep started again over
the same folder skips every run whose result file exists and records the same configuration,
so a sweep that was interrupted resumes where it stopped; failed runs are run again.

Engines (:data:`ENGINES`) run the runs still to do and yield each outcome as it arrives:

``local``
    one run after another in this process (``workers == 1``), or a
    :class:`concurrent.futures.ProcessPoolExecutor` of ``workers`` spawned processes, which
    end with the process that started them, however it ends (SIGKILL included), and share
    this process's torch threads (each gets :func:`learning.threads.worker_share`).
``ray``
    one Ray task per run (:func:`ray_runner`): on a running cluster
    (``address="auto"`` or ``"host:port"``) with the cluster's own resources, or on a local
    Ray of ``workers`` CPUs. :func:`probe_ray` first checks that a cluster answers at the
    address (one line and a few seconds when none does, rather than Ray's retries). The
    packages ``econ``, ``games`` and ``learning`` travel to the workers in the job's
    ``runtime_env`` (``py_modules``). With ``device="cuda"`` every task
    asks Ray for ``gpus_per_run`` GPUs (a fraction shares one GPU between runs).

A run that raises is tried again up to ``retries`` times; one that still fails is recorded
in its error file and reported, and the other runs go on.
"""

from __future__ import annotations

import ctypes
import dataclasses
import hashlib
import importlib.util
import itertools
import json
import math
import multiprocessing
import os
import re
import signal
import socket
import sys
import threading
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any

from econ.outputs import plain, write_atomically
from learning.threads import start_worker, worker_share

#: the measures of one run, in the order of the CSV columns after the grid values
MEASURES = ("mean_accuracy", "mean_loss", "target_accuracy", "seconds")
ENGINES = ("local", "ray")
#: the most points a grid may have: its size is computed from the lengths of its lists, and a
#: larger grid is refused before it is expanded
MAX_RUNS = 10_000
#: the fields of ``TrainConfig`` that hold a mapping, the ones a dotted grid key may reach into
MAPPING_FIELDS = ("partition_params", "algorithm_params", "dataset_params")
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


class GridPointError(ValueError):
    """A point of a sweep's grid that its run would refuse.

    ``point`` names the point (its number and grid values, or ``[train]`` for a sweep with
    no grid) and ``reason`` is the refusal; the message is ``"<point>: <reason>"``.
    """

    def __init__(self, point: str, reason: str) -> None:
        super().__init__(f"{point}: {reason}")
        self.point = point
        self.reason = reason


def point_name(grid: Mapping[str, Any], index: int, total: int) -> str:
    """``grid point 3 of 8 (seed = 1, lr = 0.1)``; ``[train]`` for a sweep without a grid."""
    if not grid:
        return "[train]"
    values = ", ".join(f"{k} = {json.dumps(plain(v))}" for k, v in grid.items())
    return f"grid point {index + 1} of {total} ({values})"


def grid_size(grid: Mapping[str, Any]) -> int:
    """The number of points of ``grid``: the product of the lengths of its lists.

    Raises
    ------
    ValueError
        An entry that is not a non-empty list, or more than :data:`MAX_RUNS` points.
    """
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            raise ValueError(f"grid entry {key!r} must be a non-empty list, got {values!r}")
    size = math.prod(len(values) for values in grid.values())
    if size > MAX_RUNS:
        lengths = " x ".join(str(len(values)) for values in grid.values())
        raise ValueError(
            f"the grid has {lengths} = {size} points, more than the {MAX_RUNS} a sweep runs; "
            "split it into several sweeps"
        )
    return size


def _check_keys(train: Mapping[str, Any], grid: Mapping[str, Any]) -> None:
    """Refuse a grid key that ``[train]`` sets too, or a dotted key outside a mapping field."""
    for key in grid:
        head, dot, rest = key.partition(".")
        if dot and (head not in MAPPING_FIELDS or not rest):
            raise ValueError(
                f"grid key {key!r}: a dotted key sets one entry of "
                f"{', '.join(MAPPING_FIELDS)} (e.g. 'partition_params.alpha')"
            )
        inner = train.get(head)
        if (not dot and key in train) or (dot and isinstance(inner, Mapping) and rest in inner):
            raise ValueError(
                f"{key!r} is set in [train] and listed in [grid]; the [grid] values replace "
                "the [train] one: give it in one table"
            )


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
    The size is checked (:func:`grid_size`) before the points are made.
    """
    grid_size(grid)
    points = []
    for combo in itertools.product(*grid.values()):
        fields = {k: dict(v) if isinstance(v, Mapping) else v for k, v in train.items()}
        for key, value in zip(grid, combo, strict=True):
            _set(fields, key, value)
        points.append({"grid": dict(zip(grid, combo, strict=True)), "fields": fields})
    return points


def make_config(fields: Mapping[str, Any]) -> Any:
    """The ``TrainConfig`` of ``fields``; an unknown field name or a misplaced boolean is a ValueError.

    TOML's ``true`` is an ``int`` to Python: a boolean is refused for every field whose
    default is no boolean (``lr = true`` would train at learning rate 1).
    """
    from learning.train import TrainConfig

    defaults = {f.name: f.default for f in dataclasses.fields(TrainConfig)}
    for name, value in fields.items():
        if isinstance(value, bool) and name in defaults and not isinstance(defaults[name], bool):
            raise ValueError(f"{name!r} must be a {name} value, not the boolean {value!r}")
    try:
        return TrainConfig(**fields)
    except TypeError as exc:  # an unknown field name
        raise ValueError(f"[train]/[grid] name a field TrainConfig does not have: {exc}") from exc


def run_key(config: Mapping[str, Any]) -> str:
    """First 16 hex digits of the SHA-256 of ``config`` as canonical JSON (sorted keys)."""
    text = json.dumps(plain(dict(config)), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def plan(train: Mapping[str, Any], grid: Mapping[str, Any]) -> list[Run]:
    """The runs of a sweep in grid order, every configuration checked before any run.

    Raises
    ------
    ValueError
        A grid too large (:func:`grid_size`), a key in both tables, a dotted key outside a
        mapping field, or two points of one configuration.
    GridPointError
        A point whose configuration :class:`learning.train.TrainConfig` refuses.
    """
    _check_keys(train, grid)
    points = expand_grid(train, grid)
    runs: list[Run] = []
    seen: dict[str, Run] = {}
    for index, point in enumerate(points):
        name = point_name(point["grid"], index, len(points))
        try:
            config = make_config(point["fields"]).to_dict()
        except ValueError as exc:
            raise GridPointError(name, str(exc)) from None
        run = Run(index, point["grid"], point["fields"], config, run_key(config))
        if run.key in seen:
            raise GridPointError(
                name,
                f"the same configuration as point {seen[run.key].index + 1}: list each value once",
            )
        seen[run.key] = run
        runs.append(run)
    return runs


def check_runs(
    runs: Sequence[Run],
    total: int,
    data_dir: str | None,
    on_checked: Callable[[int], None] | None = None,
) -> int:
    """Take every run through what :func:`learning.train.train` does before its first round.

    Each run's data is read, dealt to its clients, and its model and algorithm are built
    (:func:`learning.train.prepare`, on the CPU: the device is checked once by the caller),
    so that a point that would fail is refused before any run starts.

    Parameters
    ----------
    runs : sequence of Run
        The runs to check (the runs a sweep has still to do).
    total : int
        The number of points of the grid, for the messages.
    data_dir : str or None
        Passed to :func:`learning.train.prepare`.
    on_checked : callable, optional
        Called with the number of runs checked so far.

    Returns
    -------
    int
        The bytes of the largest run's data (every client's examples and the target set).

    Raises
    ------
    GridPointError
        The first run that would fail, with the reason (a missing or unreadable data file,
        more clients than examples, a partition parameter the partition does not take ...).
    """
    from learning.train import prepare

    largest = 0
    for done, run in enumerate(runs, start=1):
        try:
            federation = prepare(
                make_config(run.fields), device="cpu", data_dir=data_dir
            ).built.federation
        except (ValueError, OSError) as exc:  # OSError: a data file that cannot be opened
            reason = str(exc) if str(exc) else type(exc).__name__
            raise GridPointError(point_name(run.grid, run.index, total), reason) from None
        arrays = [a for c in federation.clients for a in (c.x_train, c.y_train, c.x_test, c.y_test)]
        arrays += list(federation.target or ())
        largest = max(largest, sum(a.nbytes for a in arrays))
        if on_checked is not None:
            on_checked(done)
    return largest


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


def _valid_measures(measures: object) -> bool:
    """Whether ``measures`` are what :func:`run_point` returns: finite numbers in range."""
    if not isinstance(measures, dict) or set(measures) != set(MEASURES):
        return False
    for name, value in measures.items():
        if value is None and name in ("mean_accuracy", "target_accuracy"):
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if not math.isfinite(value) or value < 0:
            return False
        if name.endswith("accuracy") and value > 1:
            return False
    return True


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

        None for no file, an unreadable file, a file recording another configuration, or
        measures no run gives (a string, an accuracy outside [0, 1], a negative loss or time):
        such a run is trained again.
        """
        try:
            record = json.loads(self.result_path(run).read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(record, dict) or record.get("config") != plain(run.config):
            return None
        measures = record.get("measures")
        return measures if _valid_measures(measures) else None

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


#: prctl option: the signal a process receives when its parent dies (linux/prctl.h)
_PR_SET_PDEATHSIG = 1


def _watch_parent(parent: int) -> None:
    """End this process when its parent process ``parent`` is gone (checked every second)."""
    while os.getppid() == parent:
        threading.Event().wait(1.0)
    os._exit(1)


def _end_with_parent(parent: int) -> None:
    """Make this worker process end when the process ``parent`` that started it does.

    On Linux the kernel sends it SIGKILL when its parent dies (``prctl(PR_SET_PDEATHSIG)``);
    elsewhere a daemon thread watches the parent's process id. A parent that died before
    the signal was armed is caught by the check of ``os.getppid()`` that follows.
    """
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    else:
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    if os.getppid() != parent:
        os._exit(1)


def _start_worker(threads: int, parent: int) -> None:
    """Initialise a pool worker: end with the driver ``parent``, use ``threads`` CPU threads."""
    _end_with_parent(parent)
    start_worker(threads)


def pool_runner(workers: int) -> Runner:
    """A pool of ``workers`` spawned processes, each limited to its share of the CPU threads.

    The share is :func:`learning.threads.worker_share`: torch's thread count in this process
    (``--threads`` of ``collabecon sweep``) divided by the processes, at least 1.

    No more processes than runs are started. Each worker ends when this process does,
    however it ends (:func:`_end_with_parent`): a driver killed with SIGKILL leaves no
    worker training on. A run that raises is submitted again until it has been tried
    ``retries + 1`` times.
    """

    def runner(
        runs: Sequence[Run], device: str | None, data_dir: str | None, retries: int
    ) -> Iterator[RunOutcome]:
        processes = max(1, min(workers, len(runs)))
        threads = worker_share(processes)
        with ProcessPoolExecutor(
            max_workers=processes,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_worker,
            initargs=(threads, os.getpid()),
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


def _need_ray() -> None:
    if importlib.util.find_spec("ray") is None:
        raise ValueError(
            "--engine ray needs Ray, which is not installed: pip install 'collabecon[ray]'"
        )


def probe_ray(address: str, timeout: float) -> str:
    """The ``host:port`` of the Ray cluster at ``address``, once a connection to it succeeds.

    ``"auto"`` is resolved as ``ray.init`` resolves it (``RAY_ADDRESS``, else the cluster
    ``ray start`` left on this machine); then a TCP connection to the cluster's head is
    opened within ``timeout`` seconds. Without this probe ``ray.init`` retries an address
    where nothing listens for minutes, logging each attempt. A service other than Ray that
    answers at the address passes the probe; ``ray.init`` then fails on its own.

    Raises
    ------
    ValueError
        One line: Ray is not installed, ``"auto"`` finds no cluster, or nothing answers at
        the address within ``timeout`` seconds.
    """
    _need_ray()
    resolved: str | None = address
    if address == "auto":
        from ray._private.services import canonicalize_bootstrap_address

        try:
            resolved = canonicalize_bootstrap_address(address)
        except ConnectionError:
            raise ValueError(
                f"--address {address!r}: no running Ray cluster was found on this machine "
                "(start one with 'ray start --head', or give HOST:PORT)"
            ) from None
        if resolved is None:  # RAY_ADDRESS=local asks for a new local Ray: nothing to join
            raise ValueError(f"--address {address!r} names no cluster to join (RAY_ADDRESS)")
    host, _, port = str(resolved).rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except OSError as exc:
        why = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
        raise ValueError(
            f"--address {address!r}: no Ray cluster answers at {resolved} within {timeout:g} s "
            f"({why}); is its head running ('ray start --head')?"
        ) from None
    return str(resolved)


def ray_runner(address: str | None, workers: int, gpus_per_run: float) -> Runner:
    """One Ray task per run, results taken as they finish (``ray.wait``).

    With ``address`` set, ``ray.init(address=address, runtime_env=...)`` joins the running
    cluster and uses its resources as they are; without it, a local Ray of ``workers`` CPUs.
    The workers' output stays in Ray's log files (``log_to_driver=False``).
    A Ray already initialised in this process is used as it is. Ray retries a task that
    raises (``max_retries=retries``, ``retry_exceptions=True``) or whose worker died.
    """
    _need_ray()

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
                try:
                    ray.init(address=address, runtime_env=runtime_env(), log_to_driver=False)
                except ConnectionError as exc:  # no Ray answers there (gone, or another service)
                    why = _ANSI.sub("", str(exc)).strip().splitlines() or [type(exc).__name__]
                    raise ValueError(f"--address {address!r}: {why[0]}") from None
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

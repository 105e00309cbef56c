"""``collabecon sweep CONFIG.toml``: a grid of training runs over seeds and parameters.

The configuration has two tables::

    [train]                 # fixed fields of TrainConfig (the rest keep their defaults)
    algorithm = "fedavg"
    rounds = 3
    partition = "dirichlet"

    [grid]                  # lists; the runs are their cartesian product
    seed = [0, 1, 2]
    lr = [0.05, 0.1]
    "partition_params.alpha" = [0.1, 1.0]   # a dotted key sets one entry of a mapping field

Runs go to a local process pool (``--engine local``, the default; ``--workers 1`` runs them
one after another in this process) or to Ray (``--engine ray``, when ``collabecon[ray]`` is
installed): a local Ray of ``--workers`` CPUs, or a running cluster with ``--address auto``
or ``--address HOST:PORT`` (docs/sweeps.md).

Before the first run starts the whole grid is checked, and a bad point is one line naming
it and exit status 2: the flags and their combinations, the grid's size (at most
:data:`learning.runtimes.sweep.MAX_RUNS` points), every point's configuration, its data
(read from ``--data-dir``), its clients and its model and algorithm, exactly as
``collabecon train`` checks them (:func:`learning.runtimes.sweep.check_runs`), the memory the
data of the runs that train at once takes, and, with ``--address``, that a Ray cluster
answers there within ``--connect-timeout`` seconds.

Each run's result is written to ``OUT/CONFIG.runs/<key>.json`` as soon as it finishes (that
folder is locked for the run: a second sweep into it is refused); the same command started
again skips the runs already there (:mod:`learning.runtimes.sweep`). A run that
raises is tried ``--retries`` more times; one that still fails leaves ``<key>.error.txt``,
is listed in the summary, and makes the exit status 1, while the other runs go on. At the
end, one CSV row per finished run, in grid order: the grid values, then ``mean_accuracy``,
``mean_loss``, ``target_accuracy`` (mean over clients, when the runs carve a target set) and
``seconds``.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import importlib.util
import math
import re
import sys
from pathlib import Path
from typing import Any

from collabecon.cli._checks import THREADS_HELP, cpus, threads_argument
from collabecon.cli._lock import refuse_if_held
from collabecon.cli._output import table
from collabecon.cli._paths import directory
from econ._log import get_logger
from learning.runtimes.sweep import ENGINES, MEASURES

#: the most extra attempts of a failing run
MAX_RETRIES = 10
#: seconds ``--address`` may take to answer, unless ``--connect-timeout`` says otherwise
CONNECT_TIMEOUT_S = 5.0

_log = get_logger(__name__)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = (
        None if importlib.util.find_spec("tomli") is None else importlib.import_module("tomli")
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments of ``collabecon sweep``.

    The positional ``config`` (the TOML file), ``--engine`` (local or Ray), ``--workers``,
    ``--address`` (a running Ray cluster), ``--connect-timeout``, ``--gpus-per-run``,
    ``--retries``, ``--device``, ``--data-dir``, ``--threads`` (torch's CPU threads, shared
    by a local pool's workers) and ``--out``.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The subcommand's parser (``--json`` is declared on it already).
    """
    parser.add_argument("config", help="TOML file with [train] and [grid] tables")
    parser.add_argument("--engine", choices=ENGINES, default="local", help="local pool or Ray")
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="parallel runs, at most the CPUs of this machine: local processes, or the CPUs "
        "of a local Ray (default 1)",
    )
    parser.add_argument(
        "--address",
        default=None,
        metavar="auto|HOST:PORT",
        help="join this running Ray cluster (--engine ray) and use its resources",
    )
    parser.add_argument(
        "--connect-timeout",
        type=float,
        default=None,
        metavar="S",
        help=f"seconds the cluster at --address has to answer (default {CONNECT_TIMEOUT_S:g})",
    )
    parser.add_argument(
        "--gpus-per-run",
        type=float,
        default=None,
        help="GPUs Ray reserves for each run with --engine ray --device cuda; a fraction "
        "shares one (default 1)",
    )
    parser.add_argument(
        "--retries",
        type=int,
        default=1,
        help=f"extra attempts of a run that raises before it counts as failed (default 1, "
        f"at most {MAX_RETRIES})",
    )
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda if available)")
    parser.add_argument("--data-dir", default=None, help="directory of file-based datasets")
    threads_argument(
        parser,
        THREADS_HELP + "; with --workers above 1 shared by the pool: each worker gets "
        "N // workers, at least 1 (--engine local only: Ray gives each run one thread per CPU)",
    )
    parser.add_argument(
        "--out",
        default=None,
        type=directory,
        metavar="DIR",
        help="where to write CONFIG.csv and the per-run results CONFIG.runs/ (default: cwd)",
    )


def outputs(args: argparse.Namespace) -> list[tuple[str, object]]:
    """The directory the sweep writes its runs into, locked for the run by the command line.

    ``OUT/CONFIG.runs`` (``OUT`` the working directory without ``--out``): a second sweep of
    the same configuration into the same place is refused while this one runs, and sweeps of
    other configurations may share ``--out``; an ``OUT`` whose own lock a live run holds is
    refused.
    """
    out_dir = Path.cwd() if args.out is None else Path(args.out)
    refuse_if_held("--out", out_dir)  # a run writing into OUT itself
    return [("--out", out_dir / f"{Path(args.config).stem}.runs")]


def _read(path: Path) -> dict[str, Any]:
    if tomllib is None:  # pragma: no cover - Python 3.10 without tomli
        raise ValueError("reading TOML on Python 3.10 needs the 'tomli' package: pip install tomli")
    if not path.is_file():
        raise ValueError(f"config file {str(path)!r} does not exist")
    try:
        with path.open("rb") as fh:
            loaded: dict[str, Any] = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"config file {str(path)!r} is not valid TOML: {exc}") from exc
    unknown = sorted(set(loaded) - {"train", "grid"})
    if unknown:
        raise ValueError(f"config tables must be [train] and [grid]; got unknown {unknown}")
    for name, value in loaded.items():
        if not isinstance(value, dict):
            raise ValueError(
                f"config file {str(path)!r}: {name} must be a table [{name}], "
                f"got {type(value).__name__} {value!r}"
            )
    return loaded


def _check_flags(args: argparse.Namespace) -> None:
    """Ranges of the flags, and the flags that have no effect under the others."""
    ray = args.engine == "ray"
    if args.address is not None:
        if not ray:
            raise ValueError(f"--address {args.address!r} needs --engine ray")
        host, _, port = args.address.rpartition(":")
        if args.address != "auto" and (not host or not port.isdigit() or not 0 < int(port) < 65536):
            raise ValueError(
                f"--address must be 'auto' or HOST:PORT (PORT in 1..65535), got {args.address!r}"
            )
        if args.workers is not None:
            raise ValueError(
                f"--workers {args.workers} with --address {args.address!r}: the cluster runs "
                "the sweep on its own CPUs; --workers sizes a local pool or a local Ray"
            )
    if args.workers is not None:
        if args.workers < 1:
            raise ValueError(f"--workers must be an integer >= 1, got {args.workers}")
        if args.workers > cpus():
            raise ValueError(
                f"--workers {args.workers} is more than the {cpus()} CPUs of this machine "
                "(each run needs one)"
            )
    if args.connect_timeout is not None:
        if args.address is None:
            raise ValueError(
                f"--connect-timeout {args.connect_timeout:g} needs --address (a cluster to "
                "connect to)"
            )
        if not (0 < args.connect_timeout <= 600):
            raise ValueError(
                f"--connect-timeout must be a number of seconds in (0, 600], got "
                f"{args.connect_timeout:g}"
            )
    if args.gpus_per_run is not None:
        if not (0 < args.gpus_per_run < math.inf) or (
            args.gpus_per_run > 1 and not args.gpus_per_run.is_integer()
        ):
            raise ValueError(
                "--gpus-per-run must be a fraction in (0, 1] or a whole number of GPUs, "
                f"got {args.gpus_per_run:g}"
            )
        if not ray or args.device is None or not args.device.startswith("cuda"):
            raise ValueError(
                f"--gpus-per-run {args.gpus_per_run:g} needs --engine ray and --device cuda "
                "(the GPUs Ray reserves for each run)"
            )
    if ray and args.threads is not None:
        raise ValueError(
            f"--threads {args.threads} has no effect with --engine ray: Ray sets each "
            "run's threads itself (OMP_NUM_THREADS, from the CPUs it reserves for the run)"
        )
    if not (0 <= args.retries <= MAX_RETRIES):
        raise ValueError(f"--retries must be an integer in [0, {MAX_RETRIES}], got {args.retries}")


def _check_device(args: argparse.Namespace) -> None:
    """``--device`` here, or only its name when the runs go to the machines of a cluster."""
    from collabecon.cli._checks import device_flag

    if args.address is None:
        device_flag("--device", args.device)
    elif args.device is not None and not re.fullmatch(r"cpu|cuda(:\d+)?", args.device):
        raise ValueError(f"--device must be 'cpu' or 'cuda[:N]', got {args.device!r}")


#: configuration fields that share their name with a flag of ``sweep``
_SHARED_NAMES = ("engine",)


def _reason(exc: Any) -> str:
    """A grid point's refusal, with a field named like a flag of ``sweep`` quoted.

    The command line names the flag where a message names its keyword; the configuration's
    ``engine`` (batched or loop) is not the flag ``--engine`` (local or Ray).
    """
    reason = str(exc.reason)
    for name in _SHARED_NAMES:
        reason = re.sub(rf"^{name}\b", f"'{name}'", reason)
    return f"{exc.point}: {reason}"


def _runner(args: argparse.Namespace, workers: int) -> Any:
    from learning.runtimes import sweep

    if args.engine == "ray":
        gpus = 1.0 if args.gpus_per_run is None else args.gpus_per_run
        return sweep.ray_runner(args.address, workers, gpus)
    return sweep.serial_runner if workers == 1 else sweep.pool_runner(workers)


def _reporter(progress: Any) -> Any:
    """What each outcome reports.

    A progress line (finished, or failed after its retries), and the error of a failed run
    as a warning in the log, shown whatever the progress (it makes the exit status 1).
    """

    def report(outcome: Any) -> None:
        run = outcome.run
        grid = ", ".join(f"{k}={v}" for k, v in run.grid.items()) or run.key
        if outcome.measures is None:
            last = (outcome.error or "").strip().splitlines() or ["(no message)"]
            progress(f"{grid}: failed")
            _log.warning("run %s (%s) failed: %s", run.key, grid, last[-1])
        else:
            m = outcome.measures
            acc = m.get("mean_accuracy")
            score = f"mean loss {m['mean_loss']:.4f}" if acc is None else f"accuracy {acc:.4f}"
            progress(f"{grid}: {score} ({m['seconds']:.1f} s)")

    return report


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the grid of ``config`` and write ``OUT/CONFIG.csv`` and ``OUT/CONFIG.runs/``.

    The whole grid is checked first (:func:`learning.runtimes.sweep.plan`, then
    :func:`learning.runtimes.sweep.check_runs` for the runs still to do); runs already
    stored are skipped; each outcome is a line on stderr (a failed run's error always,
    progress not with ``--json``), and Ray's notices go to stderr too.

    Parameters
    ----------
    args : argparse.Namespace
        The flags of :func:`add_arguments`.

    Returns
    -------
    dict
        ``runs`` (in the grid), ``finished``, ``resumed`` (from earlier results), ``failed``
        (each ``{grid, key, attempts, error, error_file}``, ``error`` the last line of the
        last error), ``engine``, ``address``, ``workers``, ``csv`` and ``results`` (the
        paths written), and ``rows``: per finished run, in grid order, its grid values and
        measures (``mean_accuracy``, ``mean_loss``, ``target_accuracy``, ``seconds``).
        :func:`exit_status` gives the command's exit code.

    Raises
    ------
    ValueError
        Before any run starts: an unwritable ``--out``, a flag out of range or without
        effect under the others, a missing or invalid config file, a grid of more than
        :data:`learning.runtimes.sweep.MAX_RUNS` points, a bad device or ``--data-dir``, a
        grid point ``collabecon train`` would refuse (its configuration, data, clients,
        model or algorithm; the message names the point), data of the runs at once larger
        than the memory, or no Ray cluster at ``--address``; the command exits with code 2.
    """
    from collabecon.cli._checks import existing_dir, fits_in_memory
    from collabecon.cli._paths import writable_dir
    from collabecon.cli._progress import Progress
    from learning.runtimes.sweep import (
        GridPointError,
        ResultStore,
        check_runs,
        plan,
        probe_ray,
        sweep,
    )

    writable_dir("--out", Path.cwd() if args.out is None else args.out)
    _check_flags(args)
    path = Path(args.config)
    loaded = _read(path)
    if not loaded.get("train") and not loaded.get("grid"):
        raise ValueError(f"config {str(path)!r} has neither a [train] nor a [grid] table")
    if args.address is not None:  # first: the rest imports torch, seconds on a busy machine
        timeout = CONNECT_TIMEOUT_S if args.connect_timeout is None else args.connect_timeout
        probe_ray(args.address, timeout)
    _check_device(args)
    existing_dir("--data-dir", args.data_dir)
    try:
        runs = plan(loaded.get("train", {}), loaded.get("grid", {}))  # every config checked
    except GridPointError as exc:
        raise ValueError(_reason(exc)) from None
    workers = 1 if args.workers is None else args.workers
    runner = _runner(args, workers)
    out_dir = Path.cwd() if args.out is None else Path(args.out)
    store = ResultStore(out_dir / f"{path.stem}.runs")
    todo = [run for run in runs if store.load(run) is None]
    progress = Progress.of(args, "sweep", len(todo))
    with progress.counting(
        len(todo), unit="run", desc="collabecon sweep: checking", delay=2
    ) as move:
        try:
            data_bytes = check_runs(todo, len(runs), args.data_dir, move)
        except GridPointError as exc:
            raise ValueError(_reason(exc)) from None
    if args.address is None:  # a local pool or Ray: the runs at once share this machine
        at_once = min(workers, len(todo))
        fits_in_memory(
            f"--workers {workers} ({at_once} at once, each run holding its data)",
            at_once * data_bytes,
        )
    progress.note(
        f"{len(runs)} runs, {len(runs) - len(todo)} from earlier results, {len(todo)} to run "
        f"({args.engine}, {workers} worker{'s' if workers > 1 else ''})"
    )
    with contextlib.redirect_stdout(sys.stderr):  # Ray's notices; stdout carries the result
        result = sweep(
            runs,
            store,
            runner,
            device=args.device,
            data_dir=args.data_dir,
            retries=args.retries,
            on_outcome=_reporter(progress),
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = [{**run.grid, **result.measures[run.key]} for run in runs if run.key in result.measures]
    csv_path = out_dir / f"{path.stem}.csv"
    header = [*loaded.get("grid", {}), *MEASURES]
    with csv_path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=header)
        writer.writeheader()
        writer.writerows(rows)
    return {
        "runs": len(runs),
        "finished": len(rows),
        "resumed": len(result.resumed),
        "failed": [
            {
                "grid": o.run.grid,
                "key": o.run.key,
                "attempts": o.attempts,
                "error": ((o.error or "").strip().splitlines() or [""])[-1],
                "error_file": str(store.error_path(o.run)),
            }
            for o in result.failed
        ],
        "engine": args.engine,
        "address": args.address,
        "workers": workers,
        "csv": str(csv_path),
        "results": str(store.folder),
        "rows": rows,
    }


def exit_status(result: dict[str, Any]) -> int:
    """1 when a run failed after its retries (its error file names why), else 0."""
    return 1 if result["failed"] else 0


def render(result: dict[str, Any]) -> str:
    """The human summary of :func:`run`'s result.

    A row per finished run (grid values and measures), a line with the counts of runs,
    finished, resumed and failed and the paths written, and a line per failed run.
    """
    rows = result["rows"]
    header = list(rows[0]) if rows else []
    where = result["engine"] if result["address"] is None else f"ray at {result['address']}"
    lines = [
        table([list(r.values()) for r in rows], header),
        "",
        f"{result['runs']} runs ({where}, {result['workers']} workers): "
        f"{result['finished']} finished ({result['resumed']} from earlier results), "
        f"{len(result['failed'])} failed -> {result['csv']}; per run: {result['results']}",
    ]
    for failure in result["failed"]:
        grid = ", ".join(f"{k}={v}" for k, v in failure["grid"].items())
        lines.append(
            f"failed after {failure['attempts']} attempt(s): {grid}: {failure['error']} "
            f"({failure['error_file']})"
        )
    return "\n".join(lines)

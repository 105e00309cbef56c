"""``collabecon sweep CONFIG.toml``: a grid of training runs over seeds and parameters.

The configuration has two tables::

    [train]                 # fixed fields of TrainConfig (the rest keep their defaults)
    algorithm = "fedavg"
    rounds = 3
    partition_params = { alpha = 0.5 }

    [grid]                  # lists; the runs are their cartesian product
    seed = [0, 1, 2]
    lr = [0.05, 0.1]
    "partition_params.alpha" = [0.1, 1.0]   # a dotted key sets one entry of a mapping field

Runs go to a local process pool (``--engine local``, the default; ``--workers 1`` runs them
one after another in this process) or to Ray (``--engine ray``, when ``collabecon[ray]`` is
installed): a local Ray of ``--workers`` CPUs, or a running cluster with ``--address auto``
or ``--address HOST:PORT`` (docs/sweeps.md). Every configuration is checked before the first
run starts.

Each run's result is written to ``OUT/CONFIG.runs/<key>.json`` as soon as it finishes; the
same command started again skips the runs already there (:mod:`learning.runtimes.sweep`). A run that
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
import sys
from pathlib import Path
from typing import Any

from collabecon.cli._output import table
from learning.runtimes.sweep import ENGINES, MEASURES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = (
        None if importlib.util.find_spec("tomli") is None else importlib.import_module("tomli")
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments of ``collabecon sweep``.

    The positional ``config`` (the TOML file), ``--engine`` (local or Ray), ``--workers``,
    ``--address`` (a running Ray cluster), ``--gpus-per-run``, ``--retries``, ``--device``,
    ``--data-dir`` and ``--out``.

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
        default=1,
        help="parallel runs: local processes, or the CPUs of a local Ray (default 1)",
    )
    parser.add_argument(
        "--address",
        default=None,
        metavar="auto|HOST:PORT",
        help="join this running Ray cluster (--engine ray) and use its resources",
    )
    parser.add_argument(
        "--gpus-per-run",
        type=float,
        default=1.0,
        help="GPUs Ray reserves for each run with --device cuda; a fraction shares one (default 1)",
    )
    parser.add_argument(
        "--retries",
        type=int,
        default=1,
        help="extra attempts of a run that raises before it counts as failed (default 1)",
    )
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda if available)")
    parser.add_argument("--data-dir", default=None, help="directory of file-based datasets")
    parser.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help="where to write CONFIG.csv and the per-run results CONFIG.runs/ (default: cwd)",
    )


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
    return loaded


def _check_flags(args: argparse.Namespace) -> None:
    if args.workers < 1:
        raise ValueError(f"--workers must be an integer >= 1, got {args.workers}")
    if args.retries < 0:
        raise ValueError(f"--retries must be an integer >= 0, got {args.retries}")
    if not (0 < args.gpus_per_run < math.inf):
        raise ValueError(f"--gpus-per-run must be a finite number > 0, got {args.gpus_per_run}")
    if args.address is not None:
        if args.engine != "ray":
            raise ValueError(f"--address {args.address!r} needs --engine ray")
        if args.address != "auto" and (
            ":" not in args.address or not args.address.rpartition(":")[2].isdigit()
        ):
            raise ValueError(f"--address must be 'auto' or HOST:PORT, got {args.address!r}")


def _runner(args: argparse.Namespace) -> Any:
    from learning.runtimes import sweep

    if args.engine == "ray":
        return sweep.ray_runner(args.address, args.workers, args.gpus_per_run)
    return sweep.serial_runner if args.workers == 1 else sweep.pool_runner(args.workers)


def _reporter(progress: Any) -> Any:
    """What each outcome prints on stderr.

    A progress line (finished, or failed after its retries), and the error of a failed run
    whatever the progress (it makes the exit status 1).
    """

    def report(outcome: Any) -> None:
        run = outcome.run
        grid = ", ".join(f"{k}={v}" for k, v in run.grid.items()) or run.key
        if outcome.measures is None:
            last = (outcome.error or "").strip().splitlines() or ["(no message)"]
            progress(f"{grid}: failed")
            print(f"run {run.key} ({grid}) failed: {last[-1]}", file=sys.stderr, flush=True)
        else:
            m = outcome.measures
            acc = m.get("mean_accuracy")
            score = f"mean loss {m['mean_loss']:.4f}" if acc is None else f"accuracy {acc:.4f}"
            progress(f"{grid}: {score} ({m['seconds']:.1f} s)")

    return report


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the grid of ``config`` and write ``OUT/CONFIG.csv`` and ``OUT/CONFIG.runs/``.

    Every configuration is checked first (:func:`learning.runtimes.sweep.plan`); runs already
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
        An unwritable ``--out``, a flag out of range, ``--address`` without ``--engine ray``,
        a missing or invalid config file, a bad device or ``--data-dir``, or a configuration
        :class:`learning.train.TrainConfig` refuses; the command exits with code 2.
    """
    from collabecon.cli._checks import device_flag, existing_dir
    from collabecon.cli._paths import writable_dir
    from learning.runtimes.sweep import ResultStore, plan, sweep

    writable_dir("--out", Path.cwd() if args.out is None else args.out)
    _check_flags(args)
    path = Path(args.config)
    loaded = _read(path)
    if not loaded.get("train") and not loaded.get("grid"):
        raise ValueError(f"config {str(path)!r} has neither a [train] nor a [grid] table")
    device_flag("--device", args.device)
    existing_dir("--data-dir", args.data_dir)
    runs = plan(loaded.get("train", {}), loaded.get("grid", {}))  # every config checked
    runner = _runner(args)
    out_dir = Path.cwd() if args.out is None else Path(args.out)
    store = ResultStore(out_dir / f"{path.stem}.runs")
    from collabecon.cli._progress import Progress

    pending = sum(store.load(run) is None for run in runs)
    progress = Progress.of(args, "sweep", pending)
    progress.note(
        f"{len(runs)} runs, {len(runs) - pending} from earlier results, {pending} to run "
        f"({args.engine}, {args.workers} worker{'s' if args.workers > 1 else ''})"
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
        "workers": args.workers,
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

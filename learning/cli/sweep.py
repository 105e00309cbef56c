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

Runs go to a local process pool (``concurrent.futures``, the default; ``--workers 1`` runs
them one after another in this process) or to Ray (``--engine ray``, when
``collabecon[ray]`` is installed). Every configuration is checked
before the first run starts. One CSV row per run, in grid order: the grid values, then
``mean_accuracy``, ``mean_loss``, ``target_accuracy`` (mean over clients, when the runs carve
a target set) and ``seconds``.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import itertools
import multiprocessing
import os
import sys
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from learning.cli._output import table

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = (
        None if importlib.util.find_spec("tomli") is None else importlib.import_module("tomli")
    )

ENGINES = ("local", "ray")
_MEASURES = ("mean_accuracy", "mean_loss", "target_accuracy", "seconds")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", help="TOML file with [train] and [grid] tables")
    parser.add_argument("--engine", choices=ENGINES, default="local", help="local pool or Ray")
    parser.add_argument("--workers", type=int, default=1, help="parallel runs (default 1)")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda if available)")
    parser.add_argument("--data-dir", default=None, help="directory of file-based datasets")
    parser.add_argument(
        "--out", default=None, metavar="DIR", help="where to write CONFIG.csv (default: cwd)"
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


def _set(fields: dict[str, Any], key: str, value: Any) -> None:
    head, _, rest = key.partition(".")
    if rest:
        inner = dict(fields.get(head) or {})
        inner[rest] = value
        fields[head] = inner
    else:
        fields[head] = value


def expand_grid(train: Mapping[str, Any], grid: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every point of the grid: ``train`` updated with one value of each ``grid`` list."""
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


def _config(fields: Mapping[str, Any]) -> Any:
    from learning.experiment import TrainConfig

    try:
        return TrainConfig(**fields)
    except TypeError as exc:  # an unknown field name
        raise ValueError(f"[train]/[grid] name a field TrainConfig does not have: {exc}") from exc


def run_point(point: dict[str, Any], device: str | None, data_dir: str | None) -> dict[str, Any]:
    """Train one grid point and return its CSV row (runs in a worker)."""
    from learning.experiment import train

    result = train(_config(point["fields"]), device=device, data_dir=data_dir)
    target = result.target
    return {
        **point["grid"],
        "mean_accuracy": result.mean_accuracy,
        "mean_loss": float(result.loss.mean()),
        "target_accuracy": (
            None if target is None or target.accuracy is None else float(target.accuracy.mean())
        ),
        "seconds": result.seconds,
    }


def _limit_threads(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)


def _run_local(points: list[dict[str, Any]], workers: int, args: argparse.Namespace) -> list:
    if workers == 1:  # no pool: one run after another in this process
        return [run_point(p, args.device, args.data_dir) for p in points]
    threads = max(1, (os.cpu_count() or 1) // workers)
    with ProcessPoolExecutor(
        max_workers=workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_limit_threads,
        initargs=(threads,),
    ) as pool:
        n = len(points)
        return list(pool.map(run_point, points, [args.device] * n, [args.data_dir] * n))


def _run_ray(points: list[dict[str, Any]], workers: int, args: argparse.Namespace) -> list:
    if importlib.util.find_spec("ray") is None:
        raise ValueError(
            "--engine ray needs Ray, which is not installed: pip install 'collabecon[ray]'"
        )
    import ray

    if not ray.is_initialized():
        ray.init(num_cpus=workers)
    remote = ray.remote(run_point)
    return list(ray.get([remote.remote(p, args.device, args.data_dir) for p in points]))


_RUNNERS = {"local": _run_local, "ray": _run_ray}


def run(args: argparse.Namespace) -> dict[str, Any]:
    from learning.cli._paths import writable_dir

    writable_dir("--out", Path.cwd() if args.out is None else args.out)
    if args.workers < 1:
        raise ValueError(f"--workers must be an integer >= 1, got {args.workers}")
    path = Path(args.config)
    loaded = _read(path)
    if not loaded.get("train") and not loaded.get("grid"):
        raise ValueError(f"config {str(path)!r} has neither a [train] nor a [grid] table")
    from learning.cli._checks import device_flag, existing_dir

    device_flag("--device", args.device)
    existing_dir("--data-dir", args.data_dir)
    points = expand_grid(loaded.get("train", {}), loaded.get("grid", {}))
    for point in points:
        _config(point["fields"])  # every configuration is checked before any run
    rows = _RUNNERS[args.engine](points, args.workers, args)
    out_dir = Path.cwd() if args.out is None else Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path = out_dir / f"{path.stem}.csv"
    header = [*loaded.get("grid", {}), *_MEASURES]
    with csv_path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=header)
        writer.writeheader()
        writer.writerows(rows)
    return {
        "runs": len(rows),
        "engine": args.engine,
        "workers": args.workers,
        "csv": str(csv_path),
        "rows": rows,
    }


def render(result: dict[str, Any]) -> str:
    rows = result["rows"]
    header = list(rows[0]) if rows else []
    return (
        table([list(r.values()) for r in rows], header)
        + f"\n\n{result['runs']} runs ({result['engine']}, {result['workers']} workers)"
        + f" -> {result['csv']}"
    )

"""``collabecon privacy curve``: the measured (ε, accuracy) curve of DP-SGD training.

Local-only and federated DP-SGD at each ``--noise`` multiplier and seed
(:mod:`learning.drivers.privacy_curve`), written as ``curve.json`` and ``curve.png`` under
``--out``; ``collabecon privacy exists`` and ``optimal`` answer for the measured clients
with ``--curve FILE`` (:class:`econ.privacy.empirical.Empirical`).

References
----------
Tsoy et al. (AISTATS 2024), "Provable Mutual Benefits from Federated Learning in
Privacy-Sensitive Domains", §5 (DP-SGD) and §6.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from collabecon.cli._checks import threads_argument
from collabecon.cli._lists import float_list
from collabecon.cli._output import fmt, table
from collabecon.cli._paths import directory

__all__ = ["add_curve_arguments", "out_folder", "render_curve", "run_curve"]


def add_curve_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the flags of ``collabecon privacy curve`` on its sub-parser ``parser``."""
    from learning.drivers.privacy_curve import DEFAULTS

    float_list(
        parser,
        "--noise",
        default=[0.5, 1.0, 2.0, 4.0],
        help="noise multipliers z > 0 (words or comma-separated; default 0.5,1,2,4)",
    )
    parser.add_argument("--seeds", type=int, default=3, help="number of seeds 0..S-1 (default 3)")
    parser.add_argument(
        "--out", type=directory, required=True, help="folder for curve.json and curve.png"
    )
    for flag, kind, help_ in (
        ("dataset", str, "dataset"),
        ("model", str, "network"),
        ("partition", str, "how the data is split between the clients"),
        ("clients", int, "number of clients"),
        ("rounds", int, "communication rounds"),
        ("local-steps", int, "local steps per round"),
        ("batch-size", int, "examples per step (fixed size, without replacement)"),
        ("lr", float, "learning rate"),
        ("momentum", float, "SGD momentum"),
        ("clip", float, "per-example clipping norm of DP-SGD"),
        ("delta", float, "target delta of every client's epsilon"),
    ):
        key = {"clip": "max_grad_norm"}.get(flag, flag.replace("-", "_"))
        parser.add_argument(
            f"--{flag}", type=kind, default=DEFAULTS[key], help=f"{help_} (default {DEFAULTS[key]})"
        )
    parser.add_argument("--device", default=None, help="torch device (default: best available)")
    threads_argument(parser)
    parser.add_argument("--data-dir", default=None, help="where the datasets are cached")


def out_folder(path: Path, *, create: bool = True) -> Path:
    """A folder that can be written, created if missing; checked before any training."""
    if path.exists() and not path.is_dir():
        raise ValueError(f"--out {path} is a file, not a folder")
    parent = next((p for p in (path, *path.parents) if p.exists()), Path("."))
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"--out {path} cannot be written ({parent} is not a writable folder)")
    if create:
        path.mkdir(parents=True, exist_ok=True)
    return path


def run_curve(args: argparse.Namespace) -> dict[str, Any]:
    """Measure the (ε, accuracy) curve the flags describe and write ``curve.json`` and ``curve.png``.

    Returns ``json``, ``png``, ``seconds``, ``settings``, ``accounting`` (the accountant,
    sampling and adjacency of every ε) and ``summary`` (one row per training and noise
    level; with one seed ``ci_low`` and ``ci_high`` are ``None`` beside ``ci_why``);
    a count below 1, a number out of range, an unwritable ``--out``, a ``--data-dir`` that is
    no directory or given with a dataset that reads no files, more clients than
    examples, a batch larger than the smallest client can hold, a run of more than
    :data:`learning.drivers.privacy_curve.MAX_STEPS` SGD steps or arrays beyond memory raise
    ``ValueError`` before any training.
    """
    from collabecon.cli._progress import Progress
    from learning.drivers.privacy_curve import measure, plot

    if args.seeds < 1:
        raise ValueError(f"--seeds must be an integer >= 1, got {args.seeds}")
    if any(not z > 0 for z in args.noise):
        raise ValueError(f"--noise must list noise multipliers > 0, got {args.noise}")
    if not 0 < args.delta < 1:
        raise ValueError(f"--delta must lie in (0, 1), got {args.delta}")
    if not 0 < args.clip < float("inf"):
        raise ValueError(f"--clip must be a finite number > 0, got {args.clip}")
    if not 0 < args.lr < float("inf"):
        raise ValueError(f"--lr must be a finite number > 0, got {args.lr}")
    if not 0 <= args.momentum < 1:
        raise ValueError(f"--momentum must lie in [0, 1), got {args.momentum}")
    for flag in ("clients", "rounds", "local_steps", "batch_size"):
        if getattr(args, flag) < 1:
            name = "--" + flag.replace("_", "-")
            raise ValueError(f"{name} must be an integer >= 1, got {getattr(args, flag)}")
    from collabecon.cli._checks import data_dir_for, device_flag, existing_dir

    device_flag("--device", args.device)
    existing_dir("--data-dir", args.data_dir)
    data_dir_for(args.dataset, args.data_dir)
    out_folder(args.out, create=False)
    settings = {
        "dataset": args.dataset,
        "model": args.model,
        "partition": args.partition,
        "clients": args.clients,
        "rounds": args.rounds,
        "local_steps": args.local_steps,
        "batch_size": args.batch_size,
        "lr": args.lr,
        "momentum": args.momentum,
        "max_grad_norm": args.clip,
        "delta": args.delta,
    }
    curve = measure(
        args.noise,
        args.seeds,
        device=args.device,
        data_dir=args.data_dir,
        progress=Progress.of(args, "privacy curve"),
        **settings,
    )
    out = out_folder(args.out)
    json_path = curve.save(out / "curve.json")
    png_path = plot(curve, out / "curve.png")
    return {
        "json": str(json_path),
        "png": str(png_path),
        "seconds": curve.seconds,
        "settings": curve.settings,
        "accounting": curve.accounting,
        "summary": curve.summary(),
    }


def render_curve(result: dict[str, Any]) -> str:
    """A row per training and noise level, the accounting of ε, and the files written."""
    from econ.privacy.accountants import accounting_text

    head = ("training", "noise", "epsilon", "eps_min", "eps_max", "accuracy", "ci_low", "ci_high")
    rows = [
        (
            r["training"],
            r["noise"] if r["noise"] else "no DP",
            r["epsilon"],
            r["epsilon_min"],
            r["epsilon_max"],
            r["accuracy"],
            "-" if r["ci_low"] is None else r["ci_low"],
            "-" if r["ci_high"] is None else r["ci_high"],
        )
        for r in result["summary"]
    ]
    why = next((r["ci_why"] for r in result["summary"] if "ci_why" in r), None)
    intervals = (
        f"no intervals: {why}"
        if why is not None
        else "95% t-intervals over seeds of the federation's mean accuracy"
    )
    return (
        table(rows, head) + f"\n\nepsilon: {accounting_text(result['accounting'])}\n"
        f"{intervals}; {fmt(result['seconds'], 3)} s\n"
        f"wrote {result['json']} and {result['png']}"
    )

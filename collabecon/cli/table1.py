"""``collabecon table1``: Table 1 of the clustering paper, MNIST rotation and private labels.

The MNIST rotation and private-label tasks of Werner et al. 2023, Table 1 (Werner 2024,
Table 2.1).

The experiment is :mod:`collabecon.reproductions.clustered_mnist` (the methods, their common budget, the
learning rate each chooses on validation data, the claims); this command parses the flags and
prints its report: every method's accuracy (mean ± std over seeds) next to the paper's, the
learning rates chosen, and every claim of the paper with ``holds``.
"""

from __future__ import annotations

import argparse
from typing import Any

from collabecon.cli._checks import threads_argument
from collabecon.cli._output import table

#: The most seeds a run may ask for (the paper reports 3).
MAX_SEEDS = 100


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the flags of ``collabecon table1``.

    ``--scale`` (a size of :data:`collabecon.reproductions.clustered_mnist.SCALES`),
    ``--data-dir`` (the MNIST files), ``--seed`` and ``--seeds`` (first seed and how many),
    ``--out`` (where ``table1.json`` and ``table1.md`` go), ``--threads`` (torch's CPU
    threads).

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The subcommand's parser (``--json`` is declared on it already).
    """
    from collabecon.reproductions.clustered_mnist import SCALES

    parser.add_argument("--scale", choices=tuple(SCALES), default="small", help="run size")
    parser.add_argument("--data-dir", default=None, help="directory of the MNIST files")
    parser.add_argument("--seed", type=int, default=0, help="first seed (integer >= 0)")
    parser.add_argument(
        "--seeds", type=int, default=None, help="number of seeds (default: 3 at every scale)"
    )
    parser.add_argument("--out", default=None, help="directory for table1.json and table1.md")
    threads_argument(parser)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Reproduce Table 1 with the flags' scale and seeds.

    Every method trains on both tasks for every seed (one progress line on stderr per method,
    task and seed, none with ``--json``); :func:`collabecon.reproductions.clustered_mnist.reproduce`
    does the work and writes into ``--out`` when given.

    Parameters
    ----------
    args : argparse.Namespace
        The flags of :func:`add_arguments`.

    Returns
    -------
    dict
        The :class:`econ.claims.Reproduction` as JSON: ``name``, ``title``, ``claims`` (each
        ``{paper, id, statement, published, measured, holds, note}``), ``figures`` and
        ``data``: ``{scale, tasks: {task: {method: {paper, test, mean, std, lr, validation,
        note}}}, seeds, grid, tune, steps, sizes, wall_s, paper}``. The command exits with 0,
        whether the claims hold or not.

    Raises
    ------
    ValueError
        A missing ``--data-dir``, an unwritable ``--out``, a negative ``--seed``, ``--seeds``
        below 1 or above :data:`MAX_SEEDS`, ``--scale paper`` without ``--data-dir``, or
        ``--data-dir`` with a scale whose data ship with the toolkit; the command exits with
        code 2.

    References
    ----------
    Werner et al. 2023, Table 1 and §4.2; Werner (2024), Table 2.1.
    """
    from collabecon.cli._checks import existing_dir
    from collabecon.cli._paths import writable_dir
    from collabecon.reproductions import clustered_mnist

    existing_dir("--data-dir", args.data_dir)
    out = writable_dir("--out", args.out)
    if args.seed < 0:
        raise ValueError(f"--seed must be an integer >= 0, got {args.seed}")
    if args.seeds is not None and args.seeds < 1:
        raise ValueError(f"--seeds must be an integer >= 1, got {args.seeds}")
    if args.seeds is not None and args.seeds > MAX_SEEDS:
        raise ValueError(
            f"--seeds {args.seeds} is more than the {MAX_SEEDS} seeds a run may have: every "
            f"seed trains {len(clustered_mnist.METHODS)} methods on "
            f"{len(clustered_mnist.TASKS)} tasks"
        )
    if args.scale == "paper" and args.data_dir is None:
        raise ValueError("--scale paper needs the full MNIST: pass --data-dir")
    if args.data_dir is not None and args.scale != "paper":
        dataset = clustered_mnist.SCALES[args.scale].dataset
        raise ValueError(
            f"--data-dir has no effect with --scale {args.scale}: its {dataset} ships with the "
            "toolkit (--scale paper reads the full MNIST from --data-dir)"
        )
    from collabecon.cli._progress import Progress

    seeds = clustered_mnist.SCALES[args.scale].seeds if args.seeds is None else args.seeds
    runs = len(clustered_mnist.TASKS) * seeds * len(clustered_mnist.METHODS)
    rep = clustered_mnist.reproduce(
        args.scale,
        out,
        args.seeds,
        first_seed=args.seed,
        data_dir=args.data_dir,
        progress=Progress.of(args, "table1", runs),
    )
    return rep.to_dict()


def render(result: dict[str, Any]) -> str:
    """The human report of :func:`run`'s result.

    One row per method with, per task, its mean accuracy, the spread over seeds, the paper's
    accuracy and the learning rates chosen; then the run's scale, seeds, budget, grid and wall
    time, the methods near chance, and the claims table.
    """
    from collabecon.reproductions.clustered_mnist import METHODS, NAMES, TASK_NAMES
    from econ.claims import Claim, claims_text

    data = result["data"]
    tasks = list(data["tasks"])
    header = ["method"]
    for task in tasks:
        header += [f"{TASK_NAMES[task]} %", "± std", "paper", "lr"]
    rows = []
    for method in METHODS:
        row: list[Any] = [NAMES[method]]
        for task in tasks:
            m = data["tasks"][task][method]
            std = "-" if m["std"] is None else f"{m['std']:.1f}"
            row += [f"{m['mean']:.1f}", std, m["paper"], ", ".join(f"{v:g}" for v in m["lr"])]
        rows.append(row)
    tune = "each seed" if data["tune"] == "each" else "the first seed, reused on the others"
    notes = [
        f"  {NAMES[m]}, {TASK_NAMES[t]}: {row['note']}"
        for t, rs in data["tasks"].items()
        for m, row in rs.items()
        if row["note"]
    ]
    claims = [Claim(**c) for c in result["claims"]]
    lines = [
        table(rows, header),
        "",
        f"scale: {data['scale']}; seeds {data['seeds']}; every method {data['steps']} "
        f"minibatch steps; lr from {data['grid']} chosen on validation data on {tune}; "
        f"wall time {data['wall_s']:.0f} s",
    ]
    if notes:
        lines += ["near chance:", *notes]
    lines += ["claims of the paper's Table 1:", claims_text(claims)]
    return "\n".join(lines)

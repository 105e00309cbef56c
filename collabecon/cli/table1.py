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

from collabecon.cli._output import table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from collabecon.reproductions.clustered_mnist import SCALES

    parser.add_argument("--scale", choices=tuple(SCALES), default="small", help="run size")
    parser.add_argument("--data-dir", default=None, help="directory of the MNIST files")
    parser.add_argument("--seed", type=int, default=0, help="first seed (integer >= 0)")
    parser.add_argument(
        "--seeds", type=int, default=None, help="number of seeds (default: 3 at every scale)"
    )
    parser.add_argument("--out", default=None, help="directory for table1.json and table1.md")


def run(args: argparse.Namespace) -> dict[str, Any]:
    from collabecon.cli._checks import existing_dir
    from collabecon.cli._paths import writable_dir
    from collabecon.reproductions import clustered_mnist

    existing_dir("--data-dir", args.data_dir)
    out = writable_dir("--out", args.out)
    if args.seed < 0:
        raise ValueError(f"--seed must be an integer >= 0, got {args.seed}")
    if args.seeds is not None and args.seeds < 1:
        raise ValueError(f"--seeds must be an integer >= 1, got {args.seeds}")
    if args.scale == "paper" and args.data_dir is None:
        raise ValueError("--scale paper needs the full MNIST: pass --data-dir")
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

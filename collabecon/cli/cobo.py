"""``collabecon cobo``: CoBo's collaboration weights against the baselines.

Every claim of the paper (Hashemi, He and Jaggi 2024, Sections 4.1-4.2, Table 2) is
reported, held or not.

The experiment, its settings and its claims are :mod:`collabecon.reproductions.cobo`; this module
parses the flags and prints the result: the mean test accuracy of every method over
``--seeds`` seeds (with the standard deviation) next to the paper's Table 2, each method's
learning rate chosen from ``--lr-grid`` on held-out validation data (``--lr paper``: the
paper's rates), CoBo's weight recovery, and the claims table. With ``--out DIR`` the weight
matrices of the first seed over time are written as a heatmap PNG and a CSV. Each training
run (a method at one learning rate and seed; with ``--workers``, each finished method) is a
line on stderr with the time left, none with ``--json``. A training run whose loss diverges
(:func:`learning.loop.divergence_limit`) ends the command: the result is marked failed with
the reason, and the command exits with 1.
"""

from __future__ import annotations

import argparse
from typing import Any

from collabecon.cli._checks import THREADS_HELP, threads_argument, workers_flag
from collabecon.cli._lists import float_list, str_list
from collabecon.cli._output import fmt
from collabecon.cli._paths import directory
from collabecon.reproductions.cobo import (
    LR_GRID,
    METHODS,
    MOMENTUM_MODES,
    SETTINGS,
    check_methods,
    run_setting,
    tables_markdown,
)
from collabecon.reproductions.cobo_methods import BATCH, CODE_PARAMETERS
from econ.claims import Claim, claims_text
from learning.algorithms.cobo_steps import SCHEDULES

__all__ = ["add_arguments", "exit_status", "render", "run"]

KEYWORDS = {"learning_rates": "--lr", "lr_grid": "--lr-grid"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the flags of ``collabecon cobo``.

    ``--setting`` (cross-silo or cross-device), ``--rounds``, ``--methods`` (a subset of
    :data:`collabecon.reproductions.cobo.METHODS`), CoBo's ``--schedule``, ``--momentum``,
    ``--seed`` and ``--seeds``, ``--lr`` (tuned on ``--lr-grid``, or the paper's),
    ``--device``, ``--workers`` (methods trained at once), ``--threads`` (torch's CPU
    threads, shared by the workers) and ``--out`` (the heatmaps).

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The subcommand's parser (``--json`` is declared on it already).
    """
    parser.add_argument("--setting", choices=tuple(SETTINGS), default="cross-silo")
    parser.add_argument("--rounds", type=int, default=300, help="training rounds (default 300)")
    str_list(
        parser,
        "--methods",
        distinct=True,
        default=None,
        help=f"a subset of {', '.join(METHODS)} (default all; all but fc "
        "for cross-device, as in the paper)",
    )
    parser.add_argument(
        "--schedule",
        choices=SCHEDULES,
        default="mixed",
        help="CoBo's pair sampling (default mixed: 2/n for 2%% of the rounds, then 1/sqrt(t))",
    )
    parser.add_argument(
        "--momentum",
        choices=MOMENTUM_MODES,
        default="none",
        help="none: plain SGD for every method (default); code: the official code's EMA "
        "momentum (0.9, dampening 0.1) kept across rounds, and its Ditto variant",
    )
    parser.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    parser.add_argument(
        "--seeds", type=int, default=3, help="seeds --seed, --seed + 1, ... (default 3)"
    )
    parser.add_argument(
        "--lr",
        choices=("tuned", "paper"),
        default="tuned",
        help="tuned: each method's best of --lr-grid on validation data, chosen on the first "
        "seed (default); paper: the paper's rates (Ditto 0.1, FC 0.05, others 0.01)",
    )
    float_list(
        parser,
        "--lr-grid",
        default=None,
        help="with --lr tuned, the learning rates tried (default "
        f"{', '.join(f'{lr:g}' for lr in LR_GRID)})",
    )
    parser.add_argument("--device", default="cpu", help="cpu (default), cuda or cuda:N")
    parser.add_argument(
        "--workers", type=int, default=1, help="methods trained at once, one process each"
    )
    threads_argument(
        parser,
        THREADS_HELP + ", shared by the --workers processes: each gets N // workers, at least 1",
    )
    parser.add_argument(
        "--out", type=directory, default=None, help="write heatmaps (PNG, CSV) here"
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Train every method of the setting over the seeds and judge the paper's claims.

    :func:`collabecon.reproductions.cobo.run_setting` does the work; each training run (or,
    with ``--workers`` above 1, each finished method) is a progress line on stderr, none with
    ``--json``.

    Parameters
    ----------
    args : argparse.Namespace
        The flags of :func:`add_arguments`.

    Returns
    -------
    dict
        :func:`collabecon.reproductions.cobo_results.summarise`'s result: ``setting``,
        ``clients``, ``rounds``, ``budget``, ``seeds``, ``schedule``, ``momentum``,
        ``learning_rates``, ``tuning``, ``accuracy``, ``accuracy_std`` and
        ``accuracy_per_seed`` by method, ``improved_over_local``, ``chance``,
        ``near_chance``, the paper's ``paper`` and ``paper_std``, ``curves``,
        ``ifca_models_used``, CoBo's ``weights_match_oracle``, ``weights_match_round``,
        ``weight_error`` and ``final_weights``, ``files``, ``claims`` (each ``{paper, id,
        statement, published, measured, holds, note}``); and ``device``, ``workers``,
        ``wall_s``. The command exits with 0, whether the claims hold or not. A training
        run that diverged ends the command with ``{status: "failed", failed, diverged}``
        (:meth:`learning.loop.DivergedError.record`) and exit code 1.

    Raises
    ------
    ValueError
        An unwritable ``--out``, ``--rounds`` or ``--seeds`` below 1, an unknown method, a
        bad learning rate or device, flags that have no effect under the others given
        (``--lr-grid`` with ``--lr paper``, ``--schedule`` without CoBo, ``--momentum``
        without a method it applies to, ``--workers`` with one method), or more training
        than :func:`learning.loop.check_run_length` admits; the command exits with code 2.

    References
    ----------
    Hashemi, He and Jaggi 2024, "CoBo: Collaborative Learning via Bilevel Optimization",
    Sections 4.1-4.2, Table 2.
    """
    from collabecon.cli._paths import writable_dir
    from learning.device import resolve_device

    writable_dir("--out", args.out)
    if args.rounds < 1:
        raise ValueError(f"--rounds must be a positive integer, got {args.rounds}")
    if args.seeds < 1:
        raise ValueError(f"--seeds must be a positive integer, got {args.seeds}")
    methods = None if args.methods is None else check_methods(args.methods)
    keys = list(SETTINGS[args.setting].methods) if methods is None else methods
    _contradictions(args, keys)
    grid = list(LR_GRID) if args.lr_grid is None else args.lr_grid
    runs = len(keys) * ((1 if args.lr == "paper" else len(grid)) + args.seeds - 1)
    _check_length(args, runs)
    from collabecon.cli._progress import Progress
    from learning.loop import DivergedError

    if args.workers > 1 and len(keys) > 1:
        total = len(keys)  # a line as each method finishes
    else:  # a line per training run: the learning rates tried, then the other seeds
        total = runs
    try:
        return run_setting(
            args.setting,
            methods,
            rounds=args.rounds,
            seed=args.seed,
            seeds=args.seeds,
            schedule=args.schedule,
            momentum=args.momentum,
            learning_rates=args.lr,
            grid=grid,
            out=args.out,
            progress=Progress.of(args, "cobo", total, eta=True),
            device=resolve_device(args.device),
            workers=args.workers,
        )
    except DivergedError as exc:
        return exc.record(flag="--lr-grid" if args.lr == "tuned" else "--lr paper")


def _contradictions(args: argparse.Namespace, keys: list[str]) -> None:
    """Refuse flags that have no effect under the others given (one line naming both)."""
    if args.lr == "paper" and args.lr_grid is not None:
        raise ValueError(
            "--lr-grid has no effect with --lr paper (the paper's rates): give one of them"
        )
    if args.schedule != "mixed" and "cobo" not in keys:
        raise ValueError(
            f"--schedule {args.schedule} has no effect with --methods {','.join(keys)}: it is "
            "CoBo's pair sampling"
        )
    if args.momentum != "none" and not set(keys) & set(CODE_PARAMETERS):
        raise ValueError(
            f"--momentum {args.momentum} has no effect with --methods {','.join(keys)}: it "
            f"applies to {', '.join(CODE_PARAMETERS)}"
        )
    workers_flag(args.workers)
    if args.workers > 1 and len(keys) == 1:
        raise ValueError(
            f"--workers {args.workers} has no effect with one method (--methods {keys[0]}): "
            "the methods are what is trained at once"
        )


def _check_length(args: argparse.Namespace, runs: int) -> None:
    """Refuse a command whose training cannot finish (:func:`learning.loop.check_run_length`).

    Each of the ``runs`` training runs takes at least ``--rounds`` rounds of one step of
    every client of the setting on a minibatch of :data:`BATCH` examples.
    """
    from learning.loop import check_run_length

    clients = SETTINGS[args.setting].clients
    check_run_length(
        {"--rounds": args.rounds, "clients": clients, "steps": 1, "batch size": BATCH}, runs
    )


def exit_status(result: dict[str, Any]) -> int:
    """1 when training diverged (``status`` is ``"failed"``), else 0."""
    return 1 if result.get("status") == "failed" else 0


def render(result: dict[str, Any]) -> str:
    """The human report of :func:`run`'s result.

    A heading with the setting, clients, rounds, seeds and wall time; the accuracies next to
    Table 2 with the learning-rate grid and notes
    (:func:`collabecon.reproductions.cobo.tables_markdown`); whether CoBo's weights match the
    oracle; the claims table; the files written.
    """
    if result.get("status") == "failed":
        return f"FAILED: {result['failed']}"
    lines = [
        f"CoBo, {result['setting']} ({result['clients']} clients, {result['rounds']} rounds, "
        f"{len(result['seeds'])} seeds, {result.get('wall_s', '-')} s)",
        tables_markdown(result),
    ]
    if result["weights_match_oracle"] is not None:
        lines.append(
            f"CoBo weights match the oracle (per seed): {fmt(result['weights_match_oracle'])} "
            f"(from rounds {result['weights_match_round']}); final mean off-diagonal "
            f"|W - W*| = {fmt([round(e, 3) for e in result['weight_error']])}"
        )
    lines += ["claims of the paper:", claims_text(Claim(**c) for c in result["claims"])]
    if result.get("files"):
        lines.append("wrote " + ", ".join(result["files"]))
    return "\n".join(lines)

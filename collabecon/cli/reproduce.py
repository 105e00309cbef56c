"""``collabecon reproduce``: every reproduction at one scale, in one report.

Runs each reproduction of :data:`collabecon.reproductions.REPRODUCTIONS` (or those of ``--only``)
at ``--scale`` into ``--out/NAME`` and writes ``--out/report.md`` (a summary table of claims
held per reproduction, then each reproduction's settings, claims measured next to published,
and figures) and ``--out/report.json`` (``status``, then ``claims: [{paper, id, statement,
published, measured, holds, note, reproduction}]``). ``--data-dir`` names the directory of the
data sets read from files (the full MNIST, CIFAR); a reproduction that needs it is reported as
not run without it. Exit status 0 when no reproduction raised (a claim that does not hold is a
finding, a reproduction not run for want of data is reported), 1 when one raised.
``--experiments`` prints every table and figure of the papers, reproduced or not
(:mod:`collabecon.reproductions.inventory`), and runs nothing.

A run cut short (Ctrl-C, a kill) leaves a report whose first line says ``INCOMPLETE`` and
names the reproductions missing; each one that finished is kept in ``--out/results/NAME.json``
with its settings. The same command with the same ``--out`` runs only the missing ones (and
those kept under other settings: scale, seeds, data directory, version, module source), says
which it reuses, and writes the complete report (:mod:`collabecon.reproductions.report`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from collabecon.cli._checks import THREADS_HELP, threads_argument
from collabecon.cli._lists import str_list
from collabecon.cli._output import table

#: the most seeds per reproduction: a guard against a mistyped count, far above any the
#: papers use (three to five)
MAX_SEEDS = 1000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the flags of ``collabecon reproduce``.

    ``--scale`` (``small`` or ``paper``), ``--out`` (the report directory, required unless
    ``--experiments``), ``--only`` (a subset of :data:`collabecon.reproductions.REPRODUCTIONS`),
    ``--seeds`` (per reproduction), ``--workers`` (reproductions run at once), ``--threads``
    (torch's CPU threads, shared by the workers), ``--data-dir``
    (the directory of the data sets read from files) and ``--experiments`` (list every table
    and figure of the papers, reproduced or not, and run nothing).

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The subcommand's parser (``--json`` is declared on it already).
    """
    from collabecon.reproductions import REPRODUCTIONS, SCALES

    parser.add_argument(
        "--scale",
        choices=SCALES,
        default=None,
        help="small: CPU minutes; paper: the papers' sizes (default small)",
    )
    parser.add_argument(
        "--out",
        default=None,
        help="report directory (needed unless --experiments); run again into the same "
        "directory, only the reproductions missing there are run",
    )
    parser.add_argument(
        "--experiments",
        action="store_true",
        help="list every table and figure of the papers, reproduced or not; run nothing",
    )
    str_list(
        parser,
        "--only",
        distinct=True,
        default=None,
        help=f"run only these reproductions ({', '.join(REPRODUCTIONS)})",
    )
    parser.add_argument(
        "--seeds",
        type=int,
        default=None,
        help=f"seeds per reproduction, at most {MAX_SEEDS} (each one's default)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="reproductions run at once, one process each (default 1)",
    )
    threads_argument(
        parser,
        THREADS_HELP + ", shared by the --workers processes: each gets N // workers, at least 1",
    )
    parser.add_argument(
        "--data-dir",
        default=None,
        help="directory of the data sets read from files (full MNIST, CIFAR python batches); "
        "the reproductions that need one are not run without it",
    )


def outputs(args: argparse.Namespace) -> list[tuple[str, object]]:
    """``--out``, locked for the run; nothing with ``--experiments``, which writes nothing."""
    return [] if args.experiments else [("--out", args.out)]


def _check(args: argparse.Namespace) -> list[str]:
    """Refuse contradictory or out-of-range flags before any work; the chosen names."""
    from collabecon.cli._checks import existing_dir, workers_flag
    from collabecon.reproductions import REPRODUCTIONS
    from collabecon.reproductions.report import select, takes_data_dir

    given = {
        "--out": args.out,
        "--only": args.only,
        "--seeds": args.seeds,
        "--workers": args.workers,
        "--data-dir": args.data_dir,
        "--scale": args.scale,
    }
    if args.experiments:
        for flag, value in given.items():
            if value is not None:
                raise ValueError(
                    f"--experiments lists the papers' experiments and runs nothing: "
                    f"{flag} has no effect with it"
                )
        return []
    if args.out is None:
        raise ValueError("--out is required (the report directory) unless --experiments")
    if args.seeds is not None and not 1 <= args.seeds <= MAX_SEEDS:
        raise ValueError(f"--seeds must be an integer in [1, {MAX_SEEDS}], got {args.seeds}")
    workers_flag(args.workers)
    try:
        names = select(args.only)
    except ValueError as exc:
        raise ValueError(str(exc).replace("only:", "--only:", 1)) from None
    if args.workers is not None and args.workers > 1 and len(names) == 1:
        raise ValueError(
            f"--workers {args.workers} has no effect with --only {names[0]}: one reproduction "
            "runs in this process"
        )
    if args.data_dir is not None:
        existing_dir("--data-dir", args.data_dir)
        readers = [n for n in REPRODUCTIONS if takes_data_dir(REPRODUCTIONS[n])]
        if not any(n in readers for n in names):
            raise ValueError(
                f"--data-dir has no effect with --only {','.join(names)}: none of these reads a "
                f"data directory (those that do: {', '.join(readers) or 'none'})"
            )
    return names


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the chosen reproductions and write the report into ``--out``.

    :func:`collabecon.reproductions.report.run_report` does the work; each reproduction is a
    progress line on stderr (as it starts, or with ``--workers`` above 1 as it finishes), and
    each result reused from an earlier run into ``--out`` (or run again, and why) a line
    before them; none with ``--json``.

    Parameters
    ----------
    args : argparse.Namespace
        The flags of :func:`add_arguments`.

    Returns
    -------
    dict
        ``{status, status_why, missing, scale, out, report, json, held, total, failed,
        reused, claims, reproductions, experiments}``: ``"complete"`` (the report of an
        interrupted run on disk says ``"incomplete"``), the paths of ``report.md`` and
        ``report.json``, the claims held of all, the names of the reproductions that raised
        and of those reused from an earlier run, every claim ``{paper, id, statement,
        published, measured, holds, note, reproduction}``, and per reproduction ``{held,
        total, seconds}`` with its :class:`econ.claims.Reproduction` fields, its ``error``,
        or why it was not run (``not_run``). With ``--experiments``, ``{experiments}`` alone.

    Raises
    ------
    ValueError
        ``--seeds`` outside [1, :data:`MAX_SEEDS`], ``--workers`` below 1, an unknown name in
        ``--only``, an unwritable ``--out``, a ``--data-dir`` that is no directory or that
        none of the chosen reproductions reads, ``--workers`` above 1 for one reproduction,
        or a flag given with ``--experiments``; the command exits with code 2.
    """
    from collabecon.cli._paths import writable_dir
    from collabecon.cli._progress import Progress
    from collabecon.reproductions.inventory import EXPERIMENTS
    from collabecon.reproductions.report import resume_plan, run_report

    names = _check(args)
    if args.experiments:
        return {"experiments": [e.to_dict() for e in EXPERIMENTS]}
    writable_dir("--out", args.out)
    scale = args.scale or "small"
    workers = args.workers or 1
    plan = resume_plan(scale, Path(args.out), names, args.seeds, args.data_dir)
    lines = Progress.of(args, "reproduce", len(plan.to_run))
    for name in plan.reused:
        lines.note(f"reusing {name}: finished earlier in {args.out} with the same settings")
    for name, why in plan.why.items():
        lines.note(f"running {name} again: {why}")
    pooled = workers > 1 and len(plan.to_run) > 1  # a single one runs in this process
    verb = "finished" if pooled else "running"

    def progress(name: str) -> None:
        lines(f"{verb} {name}")

    result = run_report(
        scale,
        Path(args.out),
        only=args.only,
        seeds=args.seeds,
        workers=workers,
        data_dir=args.data_dir,
        progress=progress,
        plan=plan,
    )
    return result.to_dict()


def render(result: dict[str, Any]) -> str:
    """The human summary of :func:`run`'s result.

    The inventory of the papers' experiments with ``--experiments``; otherwise one row per
    reproduction (claims held of its total, ``error`` or ``not run``, and its seconds), each
    error's text and each reason a reproduction did not run, the claims held overall, and the
    two files written.
    """
    if "reproductions" not in result:
        return _experiments_text(result["experiments"])

    def cell(r: dict[str, Any]) -> str:
        if "error" in r:
            return "error"
        return "not run" if "not_run" in r else f"{r['held']} / {r['total']}"

    rows = [(name, cell(r), f"{r['seconds']:.1f}") for name, r in result["reproductions"].items()]
    lines = [table(rows, ("reproduction", "claims held / total", "seconds"))]
    for name, r in result["reproductions"].items():
        if "error" in r:
            lines.append(f"{name}: error: {r['error']}")
        elif "not_run" in r:
            lines.append(f"{name}: not run: {r['not_run']}")
    if result["reused"]:
        lines.append(
            f"reused from an earlier run with the same settings: {', '.join(result['reused'])}"
        )
    lines.append(f"{result['held']} of {result['total']} claims hold")
    lines.append(f"wrote {result['report']} and {result['json']}")
    return "\n".join(lines)


def _experiments_text(experiments: list[dict[str, Any]]) -> str:
    from collabecon.reproductions.inventory import PAPERS

    short = {p.citation: p.short for p in PAPERS}
    rows = [
        (short[e["paper"]], e["label"], e["reproduction"] or "-", e["explanation"])
        for e in experiments
    ]
    done = sum(e["reproduction"] is not None for e in experiments)
    lines = [table(rows, ("paper", "label", "reproduced by", "what is compared / why not"))]
    lines.append(f"{done} of {len(experiments)} tables and figures reproduced")
    return "\n".join(lines)


def exit_status(result: dict[str, Any]) -> int:
    """1 when a reproduction raised or the report is incomplete; 0 otherwise.

    A claim that does not hold is a finding, not a failure.
    """
    return 1 if result.get("failed") or result.get("status") == "incomplete" else 0

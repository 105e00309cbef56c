"""``collabecon demo``: the toolkit end to end, in about 35 s of CPU time on two cores.

Two competing firms train LeNet-5 on the embedded ``mnist5k`` digits (500 label-skewed
examples each, 80/20 and 20/80, the high firm pre-trained alone), then collaborate for 15
rounds under the four schemes of Werner (2024), ch. 3: complete collaboration, the two
one-sided schemes, and defection-free collaborative learning (Algorithm 5, reconciled). A
model's quality is its accuracy on a balanced held-out target set of 30 examples per class
(``--size``, ``--rounds`` and ``--target-per-class`` change these; ``collabecon
defection-free`` runs the thesis's 1000 examples per firm). The qualities of every round go
into the market (equilibrium prices, revenues, consumer surplus); every claim the chapter
makes about these experiments (:mod:`collabecon.reproductions.defection_free`) is reported, held
or not, and the defection-free propositions are checked; a Markdown report with Figures
3.1-3.8 and a table of final revenues, consumer surplus, welfare and Nash gaps is written to
``--out``, which is created at once; a line per phase on stderr tells how far the demo
has come.

Every number of the table is the market's
(:data:`games.defection_free.REVENUE_CONVENTION`): the better model sells as the high firm
of Lemma 22, so no revenue is negative and welfare is consumer surplus plus both revenues in
every row. The Nash gap counts a final Nash product as progress only inside the individually
rational set (neither firm below its starting revenue).
"""

from __future__ import annotations

import argparse
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any

from collabecon.cli._checks import threads_argument
from collabecon.cli._output import dump_json, fmt, table
from econ.claims import Claim, claims_markdown, claims_text

#: The propositions the demo re-checks (registered in games.defection_free.propositions).
DEMO_PROPOSITIONS = (
    "thesis.ch3.prop3.gd",
    "thesis.ch3.prop4.gd",
    "thesis.ch3.prop5.gd",
    "thesis.ch3.alg5.while",
    "thesis.ch3.alg5.while.corrected",
)
_HEADER = (
    "scheme",
    "q_l",
    "q_h",
    "U_l",
    "U_h",
    "consumer surplus",
    "welfare",
    "Nash gap",
    "individually rational",
)
#: The claim whose failure is an exit status of 1: no revenue fell (Proposition 3).
GUARANTEE = "fig3.3.no_revenue_decrease"
#: Decimals of the money columns of report.md (revenues, consumer surplus, welfare).
_DECIMALS = 6


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the flags of ``collabecon demo``.

    ``--out`` (the report directory), ``--rounds``, ``--seed``, ``--size`` (examples per
    firm), ``--target-per-class`` (the held-out target set), ``--device`` and
    ``--threads`` (default 1: LeNet-5 on minibatches of 32 and 64 spends about four times
    the CPU per step on two threads, :func:`collabecon.reproductions.defection_free.run`).

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The subcommand's parser (``--json`` is declared on it already).
    """
    parser.add_argument(
        "--out", default="collabecon-demo", help="report directory (collabecon-demo)"
    )
    parser.add_argument("--rounds", type=int, default=15, help="collaboration rounds (15)")
    parser.add_argument("--seed", type=int, default=0, help="seed of data split, init, batches (0)")
    parser.add_argument("--size", type=int, default=500, help="examples per firm (500)")
    parser.add_argument(
        "--target-per-class",
        type=int,
        default=30,
        help="held-out target examples per class, on which qualities are measured (30)",
    )
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda if present)")
    threads_argument(
        parser,
        "torch's CPU threads, an integer from 1 to the CPUs this process may use (default 1: "
        "the demo's small models spend about four times the CPU per step on two threads)",
        default=1,
    )


def _market_rows(runs: dict[str, Any]) -> list[list[Any]]:
    """The final round of each scheme: qualities, the market's revenues, surplus, welfare."""
    from games.defection_free import MARKET_COLUMNS

    rows = []
    for name, r in runs.items():
        last = r.report.rows[-1]
        rows.append(
            [
                name,
                *(last[key] for key in MARKET_COLUMNS),
                r.report.final_nash_gap,
                last["individually_rational"],
            ]
        )
    return rows


def _money(row: list[Any]) -> list[str]:
    """Revenues, surplus and welfare at :data:`_DECIMALS` decimals.

    The welfare is the sum of the three printed parts (within ``1.5 * 10**-_DECIMALS`` of
    the exact welfare).
    """
    step = Decimal(1).scaleb(-_DECIMALS)
    parts = [Decimal(repr(float(v))).quantize(step, ROUND_HALF_EVEN) for v in row[3:6]]
    return [str(p) for p in parts] + [str(sum(parts, Decimal(0)))]


def _display_rows(result: dict[str, Any]) -> list[list[str]]:
    """The table as printed, in report.md and on the terminal."""
    return [
        [
            fmt(row[0]),
            fmt(row[1], 4),
            fmt(row[2], 4),
            *_money(row),
            fmt(row[7], 4),
            "yes" if row[8] else "no",
        ]
        for row in result["table"]
    ]


def _markdown(result: dict[str, Any], figures: list[str]) -> str:
    lines = [
        "# collabecon demo: competing firms that collaborate",
        "",
        f"Two firms, LeNet-5 on `mnist5k` ({result['setup']['size']} label-skewed examples "
        f"each), {result['rounds']} rounds per scheme, seed {result['seed']}. Quality = "
        f"accuracy on a balanced held-out target set. Start: q_l = {result['start'][0]:.3f},"
        f" q_h = {result['start'][1]:.3f}; Q estimated from complete collaboration = "
        f"{result['q_max']:.3f}; rho* = {result['rho_star']:.3f}.",
        "",
        "## Final round",
        "",
        "Revenues are the market's: the better model sells as the high firm of Lemma 22",
        "(Werner 2024, eq. 3.4), whichever firm owns it; U_l is the revenue of the firm that",
        "started low, U_h of the firm that started high. Welfare = consumer surplus + U_l +",
        f"U_h in every row (money columns at {_DECIMALS} decimals, welfare the sum of the",
        "printed parts). The Nash gap counts the final Nash product as progress only where",
        "neither firm ends below its starting revenue (individually rational).",
        "",
        "| " + " | ".join(_HEADER) + " |",
        "|" + "---|" * len(_HEADER),
    ]
    lines += ["| " + " | ".join(cells) + " |" for cells in _display_rows(result)]
    lines += ["", "## The chapter's claims on these runs", ""]
    lines += [claims_markdown(Claim(**c) for c in result["claims"])]
    lines += ["", "## Propositions (convex toy, gradient-descent inner loops)", ""]
    lines += [
        f"- `{p['id']}`: {p['status']} (expected: {p['expected']}; agrees: {p['agrees']})"
        for p in result["propositions"]
    ]
    lines += ["", "## Figures", ""]
    lines += [f"![{Path(f).stem}]({Path(f).name})" for f in figures if f.endswith(".png")]
    return "\n".join(lines) + "\n"


#: The demo's phases, as its progress counts them: preparing the firms, the four schemes,
#: the figures, the propositions, the report.
PHASES = 8
#: The schemes the demo plays.
SCHEMES = 4
#: The flags (or fixed settings) of the demo's duopoly, named in messages.
_FLAGS = {
    "size": "--size",
    "rounds": "--rounds",
    "batch_size": "the minibatch size",
    "init_epochs": "the high firm's pre-training epochs",
}


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the demo: the four schemes, the market, the claims, the propositions, the report.

    :func:`collabecon.reproductions.defection_free.run` trains the firms and plays the
    schemes (writing Figures 3.1-3.8 into ``--out``); the registered propositions of
    :data:`DEMO_PROPOSITIONS` are checked; ``report.md`` and ``summary.json`` are written into
    ``--out``. Each of the :data:`PHASES` phases is a line on stderr, none with ``--json``.

    Parameters
    ----------
    args : argparse.Namespace
        The flags of :func:`add_arguments`.

    Returns
    -------
    dict
        ``out``, ``seed``, ``rounds``, ``setup`` (``size``, ``target_per_class``, ``lr``,
        ``batch_size``), ``start`` (the starting ``[q_l, q_h]``), ``q_max``, ``rho_star``,
        ``revenue_convention``, ``table`` (per scheme its final qualities, revenues, consumer
        surplus, welfare, Nash gap and individual rationality), ``claims`` (each ``{paper,
        id, statement, published, measured, holds, note}``), ``propositions`` (each check's
        record with ``id``, ``status``, ``expected``, ``agrees``), ``schemes`` (each scheme's
        :meth:`games.defection_free.PlayReport.to_dict`) and ``report`` (the path of
        ``report.md``). A firm's training that diverged ends the demo with ``out``,
        ``status`` ``"failed"``, ``failed`` (the reason) and ``diverged``
        (:meth:`learning.loop.DivergedError.record`). :func:`exit_status` gives the
        command's exit code.

    Raises
    ------
    ValueError
        A count below 1, a negative ``--seed``, a bad device or ``--out``, ``--size`` below
        the minibatch of 32 examples, or training longer than
        :func:`collabecon.cli.defection_free.check_duopoly_length` admits; the command exits
        with code 2.

    References
    ----------
    Werner (2024), ch. 3, §3.3-3.5, Algorithm 5, Propositions 3-5, Figures 3.1-3.8.
    """
    from collabecon.cli._checks import counts_at_least, device_flag
    from collabecon.cli._paths import writable_dir
    from collabecon.cli._progress import Progress

    counts_at_least(args, ("rounds", "size", "target_per_class"))
    counts_at_least(args, ("seed",), low=0)
    device_flag("--device", args.device)
    writable_dir("--out", args.out)
    from collabecon.cli.defection_free import check_duopoly_length
    from learning.drivers.defection_free import DuopolySetup, check_split

    setup = DuopolySetup(
        size=args.size, target_per_class=args.target_per_class, lr=0.05, batch_size=32
    )
    check_duopoly_length(setup, args.rounds, SCHEMES, flags=_FLAGS)
    check_split(setup, seed=args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    progress = Progress.of(args, "demo", PHASES)
    progress.note(f"writing to {out}/")
    import games.defection_free.propositions  # noqa: F401  (registers the propositions)
    from collabecon.reproductions.defection_free import claims
    from collabecon.reproductions.defection_free import run as run_experiment
    from econ.propositions import registered
    from econ.propositions import run as check
    from games.defection_free import REVENUE_CONVENTION
    from learning.loop import DivergedError

    try:
        runs, figures = run_experiment(
            out,
            size=args.size,
            target_per_class=args.target_per_class,
            rounds=args.rounds,
            seed=args.seed,
            device=args.device,
            progress=progress,
            threads=None,  # the count of --threads, set before the run
        )
    except DivergedError as exc:
        return {"out": str(out), **exc.record()}
    reports = {n: r.report for n, r in runs.items()}
    progress("checking the propositions")
    props = [check(p).to_dict() for p in registered("thesis.ch3") if p.id in DEMO_PROPOSITIONS]
    df = reports["defection-free"]
    result = {
        "out": str(out),
        "seed": args.seed,
        "rounds": args.rounds,
        "setup": {
            "size": setup.size,
            "target_per_class": setup.target_per_class,
            "lr": setup.lr,
            "batch_size": setup.batch_size,
        },
        "start": [df.rows[0]["q_l"], df.rows[0]["q_h"]],
        "q_max": df.q_max,
        "rho_star": df.rho_star,
        "revenue_convention": REVENUE_CONVENTION,
        "table": _market_rows(runs),
        "claims": [c.to_dict() for c in claims(reports)],
        "propositions": props,
        "schemes": {n: r.to_dict() for n, r in runs.items()},
    }
    progress("writing report.md and summary.json")
    (out / "report.md").write_text(_markdown(result, figures))
    (out / "summary.json").write_text(dump_json(result))
    result["report"] = str(out / "report.md")
    return result


def render(result: dict[str, Any]) -> str:
    """The human report of :func:`run`'s result.

    The final-round table of the four schemes (money columns at :data:`_DECIMALS` decimals),
    the claims table, each proposition's verdict, and the path of ``report.md``.
    """
    if result.get("status") == "failed":
        return f"FAILED: {result['failed']}"
    claims = claims_text(Claim(**c) for c in result["claims"])
    props = "\n".join(f"  {p['id']}: {p['status']}" for p in result["propositions"])
    return (
        table(_display_rows(result), _HEADER)
        + "\n\nclaims:\n"
        + claims
        + "\n\npropositions:\n"
        + props
        + f"\n\nreport: {result['report']}"
    )


def exit_status(result: dict[str, Any]) -> int:
    """1 when training diverged, the guarantee (Proposition 3) failed or a proposition disagrees."""
    if result.get("status") == "failed":
        return 1
    guarantee = all(c["holds"] for c in result["claims"] if c["id"] == GUARANTEE)
    return 0 if guarantee and all(p["agrees"] for p in result["propositions"]) else 1

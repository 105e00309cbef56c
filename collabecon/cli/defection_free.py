"""``collabecon defection-free``: collaboration between two competing firms on real models.

One scheme (``--scheme``) prints per-round qualities, revenues, consumer surplus, welfare,
ratio and Nash product (with whether the round is individually rational), whether a revenue
ever fell, rho*, N(q_l*, q_h*), the Nash maximum at the best quality reached and the final
gap, and every claim of the thesis about that scheme's experiment, held or not (``claims``,
:mod:`collabecon.reproductions.defection_free`). ``--out`` also writes each scheme's history
(the same rows plus the market's prices and shares) as CSV and JSON; ``--figures`` runs all four schemes and writes Figures 3.1-3.8
(Werner 2024, ch. 3) to ``--out``.

Revenues, surplus and welfare follow one convention everywhere
(:data:`games.defection_free.REVENUE_CONVENTION`): the better model sells as the high firm
of Lemma 22, so no revenue is negative and welfare = consumer surplus + U_l + U_h in every
row. The thesis's fixed-label numbers appear only in the run figures' CSVs, named
``*_as_plotted_in_the_thesis``.

``--confidence C`` plays the rule on measured accuracies instead
(:mod:`games.defection_free.noisy`): every change must clear zero by the accuracies'
Clopper-Pearson bounds, so that with probability at least ``C`` no true revenue falls; of the
examples neither firm nor the target holds, a class-balanced held-out set is kept (drawn like
the target), and the JSON reports the
revenue audit under the target-set accuracies and under the held-out ones (``audit``) with
the stated probability (``noisy``).

``--firms N`` (N >= 2) plays n firms with Dirichlet label-skewed shares instead
(:mod:`collabecon.cli._defection_free_n`, :mod:`learning.drivers.defection_free_n`): the
schemes ``defection-free`` (the n-firm rule of :mod:`games.defection_free.n_firms` on the
measured qualities), ``complete`` and the one-sided schemes (data shared down or up the
quality ladder of the start, :func:`learning.drivers.defection_free_n.sharing`); the two-firm flags are refused with it, and its own
flags (``--alpha``, ``--model``, ``--init-epochs``, ``--pace``) without it.

A firm's training whose minibatch loss diverges (:func:`learning.loop.divergence_limit`)
ends the command: the result is marked failed with the reason, and the command exits with 1.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path
from typing import Any

from collabecon.cli._checks import threads_argument
from collabecon.cli._defection_free_n import (
    add_n_firm_arguments,
    n_firm_contradictions,
    render_n_firms,
    run_n_firm_command,
)
from collabecon.cli._output import dump_json, table

_SCHEMES = ("defection-free", "complete", "one-sided-low", "one-sided-high")
#: The defaults of the defection-free rule's flags, which no other scheme reads.
_RULE_DEFAULTS = {"inner": "gd", "cap_mode": "recommended", "gating": "none", "schedule": "const"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the flags of ``collabecon defection-free``.

    The scheme and run (``--scheme``, ``--rounds``, ``--seed``, ``--figures``, ``--out``),
    the firms' data and training (``--dataset``, ``--data-dir``, ``--device``, ``--threads``, ``--split``,
    ``--size``, ``--target-per-class``, ``--lr``, ``--batch-size``, ``--init-epochs-high``,
    ``--train-alone``), and the defection-free rule (``--quality``, ``--q-max``,
    ``--inner``, ``--cap-mode``, ``--gating``, ``--schedule``, ``--tolerance``; on measured
    accuracies ``--confidence`` and ``--bound``).

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The subcommand's parser (``--json`` is declared on it already).
    """
    parser.add_argument(
        "--scheme",
        choices=_SCHEMES,
        default="defection-free",
        help="one-sided-low: only the high firm shares (the low firm benefits); "
        "one-sided-high: only the low firm shares (default: defection-free)",
    )
    parser.add_argument("--rounds", type=int, default=30, help="collaboration rounds (30)")
    parser.add_argument("--seed", type=int, default=0, help="seed of data split, init, batches")
    parser.add_argument("--dataset", default="mnist5k", help="mnist5k (embedded) or mnist")
    parser.add_argument("--data-dir", default=None, help="directory of file-based datasets")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda if present)")
    threads_argument(parser)
    parser.add_argument("--out", default=None, help="write history CSV/JSON (and figures) here")
    parser.add_argument(
        "--figures", action="store_true", help="run all schemes and write Figures 3.1-3.8"
    )
    parser.add_argument("--split", choices=("paper", "code"), default="paper")
    parser.add_argument("--size", type=int, default=1000, help="examples per firm (1000)")
    parser.add_argument("--target-per-class", type=int, default=200)
    parser.add_argument("--lr", type=float, default=0.05, help="SGD learning rate (0.05)")
    parser.add_argument("--batch-size", type=int, default=32, help="per firm and step (32)")
    parser.add_argument("--init-epochs-high", type=int, default=10)
    parser.add_argument("--quality", choices=("accuracy", "1-loss"), default="accuracy")
    parser.add_argument(
        "--q-max", type=float, default=None, help="Q = max quality; estimated when omitted"
    )
    parser.add_argument(
        "--inner", choices=("gd", "oracle", "while"), default=_RULE_DEFAULTS["inner"]
    )
    parser.add_argument(
        "--cap-mode", choices=("recommended", "literal"), default=_RULE_DEFAULTS["cap_mode"]
    )
    parser.add_argument(
        "--gating", choices=("none", "line7", "text", "code"), default=_RULE_DEFAULTS["gating"]
    )
    parser.add_argument(
        "--schedule", choices=("paced", "const"), default=_RULE_DEFAULTS["schedule"]
    )
    parser.add_argument(
        "--train-alone",
        action="store_true",
        help="one-sided schemes: the firm that receives nothing trains on its own data "
        "(the authors' code) instead of staying put (the thesis's assumption, §3.4)",
    )
    parser.add_argument(
        "--tolerance", type=float, default=0.0, help="measurement tolerance of a quality"
    )
    parser.add_argument(
        "--confidence",
        type=float,
        default=None,
        help="play the rule on measured accuracies: no true revenue falls with this "
        "probability (e.g. 0.95); audits on a held-out set as well",
    )
    parser.add_argument(
        "--bound",
        choices=("clopper-pearson", "point"),
        default="clopper-pearson",
        help="with --confidence: how an accuracy is bounded (point: the estimate, no guarantee)",
    )
    add_n_firm_arguments(parser)


def _write_history(directory: Path, name: str, run: Any) -> None:
    from econ.market import market_history

    market = market_history(run.round_qualities)
    extra = ("price_", "share_")  # revenues, surplus and welfare are in the report's rows
    rows = [
        {**r, **{k: v for k, v in m.items() if k.startswith(extra)}}
        for r, m in zip(run.report.rows, market.rows(), strict=True)
    ]
    with (directory / f"{name}.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    payload = {**run.to_dict(), "history": rows, "q_max": run.report.q_max}
    (directory / f"{name}.json").write_text(dump_json(payload))


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Play the chosen scheme (or, with ``--figures``, all four) between two trained firms.

    The firms are prepared (:meth:`learning.drivers.defection_free.TorchFirms.prepare`), then
    :func:`learning.drivers.defection_free_schemes.run_schemes` plays each scheme, with
    complete collaboration as well when ``Q`` is estimated; each step is a progress line on
    stderr, none with ``--json``. ``--out`` receives each scheme's history as CSV and JSON,
    and with ``--figures`` Figures 3.1-3.8.

    Parameters
    ----------
    args : argparse.Namespace
        The flags of :func:`add_arguments`.

    Returns
    -------
    dict
        One scheme: :meth:`games.defection_free.PlayReport.to_dict` (``scheme``,
        ``revenue_convention``, ``rounds`` with one row per round, ``revenue_never_decreased``,
        ``min_revenue_change``, ``rho_star``, ``nash_star``, ``nash_max``,
        ``final_individually_rational``, ``final_nash_gap``) and ``claims``, the thesis's
        claims about it (each ``{paper, id, statement, published, measured, holds, note}``).
        With ``--figures``: ``{figures, schemes, claims}``, the files written, that record per
        scheme, and the claims. With ``--confidence``: the report of the rule on measured accuracies
        with ``noisy`` (``bound``, ``alpha``, ``confidence``, ``per_model_miss``, ``n_eval``,
        ``n_heldout``, ``stated_probability_no_revenue_falls``), ``audit`` (the revenue audit on
        the target and on the held-out set, ``falls_measured``, ``falls_reference``,
        ``falls_unseen``) and ``heldout_qualities``, no claims. The command exits with 0, whether the claims hold or not.
        A firm's training that diverged ends the command with ``{status: "failed", failed,
        diverged}`` (:meth:`learning.loop.DivergedError.record`) and exit code 1; so does a
        pre-training that leaves the high firm no better than the low one (``{status:
        "failed", failed, start}``: the game needs :math:`q_l^0 < q_h^0`).
        With ``--firms``: :meth:`learning.drivers.defection_free_n.NFirmRun.to_dict` (``scheme``,
        ``firms``, ``rounds`` with every firm's quality and revenue, ``audit`` with the drops
        and refusals per firm, ``bargain`` with the distance to the n-firm Nash bargain and
        its tolerance), and ``written`` with ``--out``.

    Raises
    ------
    ValueError
        A count, learning rate, tolerance or ``--q-max`` out of range (or ``--q-max`` below
        the high firm's starting quality), a bad device, dataset or ``--out``,
        ``--figures`` without ``--out``, flags that have no effect under the others given
        (``--scheme`` with ``--figures``, ``--train-alone`` without a one-sided scheme, the
        defection-free rule's options without it, ``--data-dir`` with an embedded dataset),
        ``--batch-size`` above ``--size``, or training longer than
        :func:`check_duopoly_length` admits; with ``--firms``: fewer than two firms, a
        two-firm flag or a scheme other than ``defection-free`` and ``complete``, ``--alpha``
        not positive, ``--init-epochs`` below 0, ``--pace`` not above 1, ``--q-max`` below the
        best starting quality, or a split the data cannot give; its own flags without
        ``--firms``. The command exits with code 2.

    References
    ----------
    Werner (2024), ch. 3, §3.3-3.5, Algorithm 5, Figures 3.1-3.3.
    """
    from collabecon.cli._checks import counts_at_least
    from collabecon.cli._paths import writable_dir

    counts_at_least(args, ("rounds", "size", "target_per_class", "batch_size"))
    counts_at_least(args, ("init_epochs_high", "seed"), low=0)
    if not 0 < args.lr < float("inf"):
        raise ValueError(f"--lr must be a finite number > 0, got {args.lr}")
    if not 0 <= args.tolerance < float("inf"):
        raise ValueError(f"--tolerance must be a finite number >= 0, got {args.tolerance}")
    if args.q_max is not None and not 0 < args.q_max <= 1:
        raise ValueError(f"--q-max must lie in (0, 1], got {args.q_max}")
    if args.confidence is not None and not 0 < args.confidence < 1:
        raise ValueError(f"--confidence must lie in (0, 1), got {args.confidence}")
    from collabecon.cli._checks import data_dir_for, device_flag

    device_flag("--device", args.device)
    writable_dir("--out", args.out)
    if args.figures and not args.out:
        raise ValueError("--figures needs --out DIR")
    n_firm_contradictions(args)
    if args.firms is None:
        _contradictions(args)
    from econ.validation import choice
    from learning.data import DATASETS

    choice("dataset", args.dataset, tuple(DATASETS))  # before the progress starts
    data_dir_for(args.dataset, args.data_dir)
    from collabecon.cli._progress import Progress
    from learning.loop import DivergedError

    if args.firms is not None:
        steps = 3 if args.scheme == "defection-free" or args.q_max is None else 2
        try:
            return run_n_firm_command(args, Progress.of(args, "defection-free", steps))
        except DivergedError as exc:
            return exc.record()
    from games.defection_free import DefectionFreeConfig
    from learning.drivers.defection_free import DuopolySetup, TorchFirms, check_split
    from learning.drivers.defection_free_schemes import run_schemes

    setup = DuopolySetup(
        dataset=args.dataset,
        data_dir=args.data_dir,
        split=args.split,
        size=args.size,
        target_per_class=args.target_per_class,
        lr=args.lr,
        batch_size=args.batch_size,
        init_epochs=(0, args.init_epochs_high),
        metric=args.quality,
        heldout=args.confidence is not None,
    )
    config = DefectionFreeConfig(
        cap_mode=args.cap_mode,
        gating=args.gating,
        schedule=args.schedule,
        tolerance=args.tolerance,
    )
    schemes = _SCHEMES if args.figures else (args.scheme,)
    plays = set(schemes) | (set() if args.q_max is not None else {"complete"})
    check_duopoly_length(setup, args.rounds, len(plays), flags=_FLAGS)
    check_split(setup, seed=args.seed)
    progress = Progress.of(args, "defection-free", 1 + len(plays) + args.figures)
    epochs = args.init_epochs_high
    training = f", the high firm trains alone for {epochs} epochs" if epochs else ""
    progress(f"preparing the firms: {args.size} examples of {args.dataset} each{training}")
    try:
        firms = TorchFirms.prepare(setup, seed=args.seed, device=args.device)
        start = firms.measure()
        q_l0, q_h0 = float(start["low"]), float(start["high"])
        if not q_l0 < q_h0:  # the game of §3.3 has a high and a low firm
            return {
                "status": "failed",
                "failed": (
                    f"after pre-training the high firm's {args.quality} {q_h0:.6g} is not above "
                    f"the low firm's {q_l0:.6g}: the defection-free game needs q_l0 < q_h0 "
                    f"(--init-epochs-high {args.init_epochs_high} at --lr {args.lr:g} did not "
                    "lift the high firm)"
                ),
                "start": {"low": q_l0, "high": q_h0},
            }
        if args.q_max is not None:
            if args.q_max < q_h0:
                raise ValueError(
                    f"--q-max {args.q_max} lies below the high firm's starting quality "
                    f"{q_h0:.6g}: Q bounds every reachable quality"
                )
        if args.confidence is not None:
            from learning.drivers.defection_free_schemes import run_noisy

            noisy = run_noisy(
                firms,
                args.rounds,
                alpha=1.0 - args.confidence,
                bound=args.bound,
                q_max=args.q_max,
                inner=args.inner,
                seed=args.seed,
                progress=progress,
            )
            if args.out:
                directory = Path(args.out)
                directory.mkdir(parents=True, exist_ok=True)
                (directory / "defection-free-noisy.json").write_text(dump_json(noisy.to_dict()))
            return noisy.to_dict()
        runs = run_schemes(
            firms,
            args.rounds,
            schemes=schemes,
            q_max=args.q_max,
            config=config,
            inner=args.inner,
            train_alone=args.train_alone,
            seed=args.seed,
            progress=progress,
        )
    except DivergedError as exc:
        return exc.record()
    if args.out:
        directory = Path(args.out)
        directory.mkdir(parents=True, exist_ok=True)
        for name, r in runs.items():
            _write_history(directory, name, r)
    from collabecon.reproductions.defection_free import claims

    found = [c.to_dict() for c in claims({n: r.report for n, r in runs.items()})]
    if args.figures:
        from games.defection_free.figures import write_figures

        progress("writing Figures 3.1-3.8")
        written = write_figures({n: r.report for n, r in runs.items()}, args.out)
        return {
            "figures": written,
            "schemes": {n: r.to_dict() for n, r in runs.items()},
            "claims": found,
        }
    return {**runs[args.scheme].to_dict(), "claims": found}


#: The flags of :class:`learning.drivers.defection_free.DuopolySetup`'s fields, for messages.
_FLAGS = {
    "size": "--size",
    "batch_size": "--batch-size",
    "init_epochs": "--init-epochs-high",
    "rounds": "--rounds",
}


def _contradictions(args: argparse.Namespace) -> None:
    """Refuse flags that have no effect under the others given (one line naming both)."""
    if args.figures and args.scheme != "defection-free":
        raise ValueError(
            f"--scheme {args.scheme} has no effect with --figures, which runs all four schemes"
        )
    schemes = _SCHEMES if args.figures else (args.scheme,)
    if args.train_alone and not any(s.startswith("one-sided") for s in schemes):
        raise ValueError(
            f"--train-alone has no effect with --scheme {args.scheme}: it applies to the "
            "one-sided schemes"
        )
    if args.confidence is None and args.bound != "clopper-pearson":
        raise ValueError(f"--bound {args.bound} has no effect without --confidence")
    if args.confidence is not None:
        given = [
            f"--scheme {args.scheme}" if args.scheme != "defection-free" else "",
            "--figures" if args.figures else "",
            f"--quality {args.quality}" if args.quality != "accuracy" else "",
            f"--inner {args.inner}" if args.inner == "oracle" else "",
            *(
                f"--{n.replace('_', '-')} {getattr(args, n)}"
                for n in ("cap_mode", "gating", "schedule")
                if getattr(args, n) != _RULE_DEFAULTS[n]
            ),
            f"--tolerance {args.tolerance}" if args.tolerance else "",
        ]
        clash = next((g for g in given if g), None)
        if clash:
            raise ValueError(
                f"{clash} has no effect with --confidence, which plays the defection-free "
                "rule on measured accuracies (gd or while inner steps)"
            )
    if "defection-free" not in schemes:
        for name, default in _RULE_DEFAULTS.items():
            if getattr(args, name) != default:
                flag = "--" + name.replace("_", "-")
                raise ValueError(
                    f"{flag} {getattr(args, name)} has no effect with --scheme {args.scheme}: "
                    "it is an option of the defection-free rule"
                )


def check_duopoly_length(
    setup: Any, rounds: int, plays: int, *, flags: dict[str, str] | None = None
) -> None:
    r"""Refuse a duopoly whose minibatch exceeds a firm's data or whose training cannot finish.

    A firm's epoch is :math:`\lceil n / B \rceil` steps, so a minibatch :math:`B` above the
    :math:`n` examples of a firm repeats examples within one step. A round of a scheme trains
    each firm at most one epoch on the joint data (:math:`2n` examples each) and the low
    firm's capped raise at most ``max_inner`` joint steps (:math:`2B` examples each); the
    high firm's pre-training is ``init_epochs[1]`` epochs of its own data
    (:func:`learning.loop.check_run_length`).

    Parameters
    ----------
    setup : learning.drivers.defection_free.DuopolySetup
        The firms' data and training.
    rounds, plays : int
        Rounds of every scheme, and the schemes played.
    flags : dict, optional
        The flags of the setup's fields (``size`` -> ``--size``), named in the messages.

    Raises
    ------
    ValueError
        The minibatch exceeds a firm's examples, or the training exceeds
        :data:`learning.loop.MAX_EXAMPLE_GRADIENTS`.
    """
    from learning.loop import check_run_length

    named = {k: k for k in ("size", "batch_size", "init_epochs", "rounds")} | (flags or {})
    if setup.batch_size > setup.size:
        raise ValueError(
            f"{named['batch_size']} {setup.batch_size} exceeds {named['size']} {setup.size}, "
            "the examples of each firm: a minibatch would repeat examples"
        )
    per_round = 4 * setup.size + 2 * setup.max_inner * setup.batch_size
    check_run_length({named["rounds"]: rounds, "schemes": plays, "examples a round": per_round})
    check_run_length({named["init_epochs"]: setup.init_epochs[1], named["size"]: setup.size})


def exit_status(result: dict[str, Any]) -> int:
    """1 when a firm's training diverged or left no high firm (``status`` is ``"failed"``)."""
    return 1 if result.get("status") == "failed" else 0


def _summary_rows(result: dict[str, Any]) -> list[list[Any]]:
    from games.defection_free import MARKET_COLUMNS

    last = result["rounds"][-1]
    return [
        [
            result["scheme"],
            *(last[key] for key in MARKET_COLUMNS),
            last["rho"],
            result["rho_star"],
            result["revenue_never_decreased"],
            result["final_nash_gap"],
            last["individually_rational"],
        ]
    ]


def _claims(result: dict[str, Any]) -> str:
    from econ.claims import Claim, claims_text

    if not result.get("claims"):
        return ""
    return "\n\nclaims of the thesis (ch. 3):\n" + claims_text(Claim(**c) for c in result["claims"])


def render(result: dict[str, Any]) -> str:
    """The human report of :func:`run`'s result.

    One row per scheme with its last round (qualities, revenues, surplus, welfare, ratio),
    ``rho*``, whether no revenue fell, the final Nash gap and individual rationality;
    with ``--figures`` the number of files written and where; then the claims table.
    """
    header = (
        "scheme",
        "q_l",
        "q_h",
        "U_l",
        "U_h",
        "CS",
        "welfare",
        "rho",
        "rho*",
        "no fall",
        "Nash gap",
        "IR",
    )
    if result.get("status") == "failed":
        return f"FAILED: {result['failed']}"
    if "bargain" in result:
        return render_n_firms(result)
    if "audit" in result:
        audit, noisy = result["audit"], result["noisy"]
        stated = noisy["stated_probability_no_revenue_falls"]
        said = f"P(no true revenue falls) >= {stated:g}" if stated is not None else "no bound"
        lines = (
            f"\nmeasured accuracies on {noisy['n_eval']} target examples ({noisy['bound']}: "
            f"{said}); rounds with a revenue fall: {audit['falls_measured']} of "
            f"{audit['rounds']} on the target, {audit['falls_reference']} on "
            f"{noisy['n_heldout']} held-out examples"
        )
        return table(_summary_rows(result), header) + lines
    if "figures" in result:
        rows = [r for res in result["schemes"].values() for r in _summary_rows(res)]
        where = str(Path(result["figures"][0]).parent) if result["figures"] else "--out"
        written = f"\n{len(result['figures'])} figure files written to {where}"
        return table(rows, header) + written + _claims(result)
    return table(_summary_rows(result), header) + _claims(result)

"""``collabecon defection-free --firms N``: the n-firm rule on real models.

:func:`learning.drivers.defection_free_n.run_n_firms` plays complete collaboration (always,
for :math:`Q` when ``--q-max`` is not given) and the chosen scheme between ``N`` firms with
Dirichlet label-skewed shares of the data set. The result reports every firm's quality and
revenue each round, welfare, an audit (rounds in which each firm's revenue fell, rounds in
which it kept its previous model) and the final qualities against the n-firm Nash bargain
(:func:`econ.quality_bargaining.quality_bargaining`) with the stated tolerance
:data:`learning.drivers.defection_free_n.BARGAIN_TOLERANCE`. ``--out DIR`` writes the
result as JSON and a figure of every firm's revenue over the rounds.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from collabecon.cli._output import dump_json, table

#: Flags declared for ``--firms`` only, with the values used when they are not given.
N_DEFAULTS: dict[str, Any] = {"alpha": 0.5, "model": "lenet5", "init_epochs": 1, "pace": 2.0}
#: The two-firm flags' defaults; any other value has no effect with ``--firms``.
_TWO_FIRM_ONLY = {
    "figures": False,
    "split": "paper",
    "init_epochs_high": 10,
    "inner": "gd",
    "cap_mode": "recommended",
    "gating": "none",
    "schedule": "const",
    "train_alone": False,
    "tolerance": 0.0,
    "confidence": None,
    "bound": "clopper-pearson",
}


def add_n_firm_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``--firms`` and the flags that only it reads."""
    parser.add_argument(
        "--firms",
        type=int,
        default=None,
        help="play N firms (2 to 12) with Dirichlet label-skewed shares (every --scheme: the "
        "one-sided schemes share down or up the quality ladder); absent: the two-firm "
        "experiment of §3.5",
    )
    parser.add_argument(
        "--alpha", type=float, default=None, help="with --firms: Dirichlet label skew (0.5)"
    )
    parser.add_argument(
        "--model", choices=("lenet5", "mlp"), default=None, help="with --firms (lenet5)"
    )
    parser.add_argument(
        "--init-epochs",
        type=int,
        default=None,
        help="with --firms: epochs every firm trains alone first (1)",
    )
    parser.add_argument(
        "--pace",
        type=float,
        default=None,
        help="with --firms: the top firm's largest growth factor per round (2)",
    )


def _values(args: argparse.Namespace) -> dict[str, Any]:
    """The ``--firms`` flags' values, their defaults where not given."""
    return {n: N_DEFAULTS[n] if getattr(args, n) is None else getattr(args, n) for n in N_DEFAULTS}


def n_firm_contradictions(args: argparse.Namespace) -> None:
    """Refuse the ``--firms`` flags without it, and the two-firm flags with it."""
    if args.firms is None:
        given = next((n for n in N_DEFAULTS if getattr(args, n) is not None), None)
        if given:
            flag = "--" + given.replace("_", "-")
            raise ValueError(f"{flag} has no effect without --firms N")
        return
    if not 2 <= args.firms <= 12:
        raise ValueError(
            f"--firms must be 2 to 12, got {args.firms} (the n-firm bargain the rule steers"
            " to, econ.quality_bargaining, solves up to 12 firms)"
        )
    for name, default in _TWO_FIRM_ONLY.items():
        if getattr(args, name) != default:
            flag = "--" + name.replace("_", "-")
            raise ValueError(f"{flag} has no effect with --firms, which plays n firms")
    values = _values(args)
    if not 0 < values["alpha"] < float("inf"):
        raise ValueError(f"--alpha must be a finite number > 0, got {values['alpha']}")
    if values["init_epochs"] < 0:
        raise ValueError(f"--init-epochs must be >= 0, got {values['init_epochs']}")
    if not 1 < values["pace"] < float("inf"):
        raise ValueError(f"--pace must be a finite number > 1, got {values['pace']}")


def n_firm_setup(args: argparse.Namespace) -> Any:
    """The :class:`learning.drivers.defection_free_n.NFirmSetup` of the flags."""
    from learning.drivers.defection_free_n import NFirmSetup

    return NFirmSetup(
        firms=args.firms,
        dataset=args.dataset,
        data_dir=args.data_dir,
        size=args.size,
        target_per_class=args.target_per_class,
        lr=args.lr,
        batch_size=args.batch_size,
        metric=args.quality,
        **_values(args),
    )


def check_n_firm_run(args: argparse.Namespace) -> Any:
    """Refuse runs too long for this machine and data sets the split cannot use; the setup.

    Raises
    ------
    ValueError
        What :func:`learning.loop.check_run_length` and
        :func:`learning.drivers.defection_free_n.load_and_split` refuse.
    """
    from learning.drivers.defection_free_n import load_and_split
    from learning.loop import check_run_length

    setup = n_firm_setup(args)
    # a round steps every model on the joint minibatches of all firms, about n * size examples
    plays = 2 if args.scheme == "defection-free" or args.q_max is None else 1
    check_run_length(
        {"--rounds": args.rounds, "--firms squared": args.firms**2, "--size": args.size}, plays
    )
    check_run_length(
        {"--init-epochs": setup.init_epochs, "--firms": args.firms, "--size": args.size}
    )
    load_and_split(setup, args.seed)
    return setup


def run_n_firm_command(args: argparse.Namespace, progress: Any) -> dict[str, Any]:
    """Prepare the firms, play the scheme, write ``--out``; the scheme's JSON-ready record.

    Returns
    -------
    dict
        :meth:`learning.drivers.defection_free_n.NFirmRun.to_dict` (``scheme``, ``firms``,
        ``rounds``, ``audit``, ``bargain``); with ``--out`` also ``written``.
    """
    from learning.drivers.defection_free_n import TorchNFirms, run_n_firms

    setup = check_n_firm_run(args)
    progress(f"preparing {args.firms} firms: at most {args.size} examples of {args.dataset} each")
    firms = TorchNFirms.prepare(setup, seed=args.seed, device=args.device)
    runs = run_n_firms(
        firms,
        args.rounds,
        schemes=(args.scheme,),
        q_max=args.q_max,
        seed=args.seed,
        progress=progress,
    )
    result = runs[args.scheme].to_dict()
    if args.out:
        directory = Path(args.out)
        directory.mkdir(parents=True, exist_ok=True)
        json_path = directory / f"{args.scheme}-{args.firms}-firms.json"
        json_path.write_text(dump_json(result))
        result["written"] = [str(json_path), write_revenue_figure(result, directory)]
    return result


def write_revenue_figure(result: dict[str, Any], directory: Path) -> str:
    """Every firm's revenue over the rounds, as a PNG in ``directory``; its path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    rows = result["rounds"]
    fig, ax = plt.subplots(figsize=(6, 4))
    deal = result["bargain"]
    for i in range(result["firms"]):
        (line,) = ax.plot(
            [r["round"] for r in rows], [r["revenues"][i] for r in rows], label=f"firm {i}"
        )
        ax.axhline(deal["target_revenues"][i], color=line.get_color(), linestyle=":", lw=1)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("round")
    ax.set_ylabel("revenue")
    ax.set_title(
        f"{result['scheme']}, {result['firms']} firms (dotted: at the bargain)", fontsize=10
    )
    ax.legend()
    path = directory / f"{result['scheme']}-{result['firms']}-firms-revenue.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)


def render_n_firms(result: dict[str, Any]) -> str:
    """One row per firm: start and final quality, final revenue, target, drops, refusals."""
    first, last = result["rounds"][0], result["rounds"][-1]
    audit, deal = result["audit"], result["bargain"]
    rows = [
        [
            i,
            first["qualities"][i],
            last["qualities"][i],
            last["revenues"][i],
            deal["target"][i],
            audit["drops"][i],
            audit["refusals"][i],
        ]
        for i in range(result["firms"])
    ]
    header = ("firm", "q start", "q final", "revenue", "q* (bargain)", "drops", "refusals")
    near = "within" if deal["within_tolerance"] else "outside"
    return (
        table(rows, header)
        + f"\n{result['scheme']}: welfare {last['welfare']:.6g} (at the bargain "
        f"{deal['target_welfare']:.6g}); distance to the bargain "
        f"{deal['distance']:.4g} ({near} the tolerance {deal['tolerance']:g}), Q {deal['q_max']:.4g}"
    )

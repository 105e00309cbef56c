"""``collabecon pricing``: the price-discrimination game of Werner (2024), Chapter 4.

Three actions:

``equilibrium``
    the one-shot equilibrium for one awareness level ``--alpha``; ``--convention thesis``
    prints the profile Theorem 6 states instead, which for ``alpha > alpha*`` in regime B is not
    an equilibrium (docs/errata.md, ``thesis.ch4.thm6``) and is labelled so;
``repeated``
    repeated play of a learning seller against CBER buyers (Algorithm 6), many runs at once;
``figures``
    Figures 4.1-4.5 as PNG + CSV in ``--out``, and every claim the thesis makes about them,
    held or not (``claims``, :mod:`collabecon.reproductions.price_discrimination`).

Utilities are per buyer.
"""

from __future__ import annotations

import argparse
import json
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from collabecon.cli._checks import exact_number, finite_float
from collabecon.cli._lists import float_list
from collabecon.cli._output import fmt, table
from collabecon.cli._paths import directory

ACTIONS = ("equilibrium", "repeated", "figures")
#: The most rounds x seeds a run of ``repeated`` or ``figures`` may ask for: 5,000 times the
#: thesis's experiments (20,000 rounds x 10 runs, section 4.4).
MAX_PLAYS = 10**9
#: The most buyers per round of ``repeated``: 100 times the thesis's n = 10.
MAX_BUYERS = 1000


def _game_arguments(parser: argparse.ArgumentParser) -> None:
    number = exact_number  # exact: 1/3 stays 1/3, and the game's formulas stay exact
    parser.add_argument("--mu", type=number, default=Fraction(1, 2), help="P(high type) (0.5)")
    parser.add_argument("--theta-low", type=number, default=Fraction(5), help="low value (5)")
    parser.add_argument("--theta-high", type=number, default=Fraction(15), help="high value (15)")
    parser.add_argument("--cb", type=number, default=Fraction(5), help="buyer's evasion cost (5)")
    parser.add_argument("--cs", type=number, default=Fraction(5), help="seller's evasion cost (5)")
    parser.add_argument("--buyers", type=int, default=10, help="buyers per round n (10)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the actions of ``collabecon pricing`` and the flags of each.

    ``equilibrium`` takes the game's flags (``--mu``, ``--theta-low``, ``--theta-high``,
    ``--cb``, ``--cs``, ``--buyers``), ``--alpha`` and ``--convention``; ``repeated`` the
    game's flags, the seller (``--seller``, ``--alpha``, ``--eta``, ``--gamma``), the play
    (``--rounds``, ``--seeds``, ``--seed``, ``--bias``, ``--alpha-hat-init``,
    ``--policy-regret``) and ``--out``; ``figures`` ``--out``, ``--rounds``, ``--seeds`` and
    ``--seed``. Each action accepts ``--json`` after its name too.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The subcommand's parser (``--json`` is declared on it already).
    """
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    json_flag: dict[str, Any] = {
        "action": "store_true",
        "default": argparse.SUPPRESS,
        "help": "print one JSON object on stdout",
    }

    eq = actions.add_parser("equilibrium", help="one-shot equilibrium (Theorem 6)")
    eq.add_argument("--json", **json_flag)
    _game_arguments(eq)
    eq.add_argument("--alpha", type=exact_number, required=True, help="P(seller is signal aware)")
    eq.add_argument(
        "--convention",
        choices=("strict", "thesis"),
        default="strict",
        help="strict: the equilibrium (default); thesis: the profile Theorem 6 states",
    )

    rep = actions.add_parser("repeated", help="repeated play against CBER buyers (Algorithm 6)")
    rep.add_argument("--json", **json_flag)
    _game_arguments(rep)
    from games.price_discrimination.sellers import SELLERS

    rep.add_argument("--seller", choices=tuple(SELLERS), default="cexp3", help="(cexp3)")
    rep.add_argument("--rounds", type=int, default=20_000, help="rounds T (20000)")
    rep.add_argument("--seeds", type=int, default=10, help="independent runs (10)")
    rep.add_argument("--seed", type=int, default=0, help="random seed (0)")
    float_list(
        rep,
        "--bias",
        count=2,
        default=None,
        help="LO HI: add U[LO, HI] to the buyers' belief each round (Figure 4.5); "
        "a negative LO with commas as --bias=LO,HI",
    )
    rep.add_argument(
        "--alpha", type=finite_float, default=None, help="alpha-pd commitment (alpha* - 0.01)"
    )
    rep.add_argument("--eta", type=finite_float, default=None, help="Exp3 learning rate (preset)")
    rep.add_argument(
        "--gamma", type=finite_float, default=None, help="Exp3-IX implicit exploration"
    )
    rep.add_argument("--alpha-hat-init", type=finite_float, default=0.0, help="round-1 belief (0)")
    rep.add_argument(
        "--policy-regret", action="store_true", help="also re-run fixed mixed strategies"
    )
    rep.add_argument("--out", type=directory, default=None, help="write per-round means (CSV) here")

    fig = actions.add_parser("figures", help="Figures 4.1-4.5 (PNG + CSV)")
    fig.add_argument("--json", **json_flag)
    fig.add_argument("--out", type=directory, required=True, help="output directory")
    fig.add_argument("--rounds", type=int, default=20_000, help="rounds T (20000, the thesis)")
    fig.add_argument("--seeds", type=int, default=1, help="runs per seller (1, the thesis)")
    fig.add_argument("--seed", type=int, default=1, help="random seed (1)")


def _game(args: argparse.Namespace) -> Any:
    from games.price_discrimination.game import PDGame

    return PDGame(args.mu, args.theta_low, args.theta_high, args.cb, args.cs, n=args.buyers)


def _progress(args: argparse.Namespace, total: int) -> Any:
    """A bar over ``total`` rounds on stderr (none with ``--json``).

    It is drawn after half a second and gone when done.
    """
    from collabecon.cli._progress import Progress

    progress = Progress.of(args, f"pricing {args.action}")
    return progress.bar(total, unit="round", leave=False, mininterval=0.5, delay=0.5)


def _equilibrium(args: argparse.Namespace) -> dict[str, Any]:
    from games.price_discrimination.certificate import certify
    from games.price_discrimination.equilibrium import equilibrium, profiles_differ

    game = _game(args)
    eq = equilibrium(game, args.alpha, args.convention)
    # every player's best response checked, not assumed (Werner 2024, §4.2, solution concept)
    certificate = certify(game, args.alpha, eq.profile)
    profile = eq.profile
    gains = ", ".join(
        f"the {s.player.replace('_', ' ')} gains {float(s.gain):.6g} by deviating"
        for s in certificate.violations
    )
    label = "thesis profile" if args.convention == "thesis" else "equilibrium"
    if not certificate.is_equilibrium:
        described = f"{label}; not an equilibrium: {gains}"
    elif args.convention == "thesis":
        described = f"{label}; an equilibrium at this alpha"
    else:
        described = label
    out: dict[str, Any] = {
        "convention": args.convention,
        "is_equilibrium": certificate.is_equilibrium,
        "profile": described,
        "regime": game.regime,
        "alpha_star": float(game.alpha_star),
        "evasion_rate": float(profile.q_high),
    }
    if profile.q_high > 0:
        out["q_star"] = float(game.q_star)
    if profiles_differ(game, args.alpha):
        out["aware_prob_theta_low_after_s_low"] = float(1 - profile.aware_b)
    out.update(
        {
            "seller": float(eq.seller),
            "seller_total": float(eq.seller_total),
            "high_buyer": float(eq.high_buyer),
            "low_buyer": float(eq.low_buyer),
            "buyer_avg": float(eq.buyer_avg),
            "U1_star": float(game.U1_star),
            "deviation_gains": {s.player: float(s.gain) for s in certificate.sets},
        }
    )
    if args.convention == "strict" and not certificate.is_equilibrium:
        out["failed"] = f"the equilibrium fails its best-response check: {gains}"
    if eq.seller < 0:
        out["seller_note"] = (
            "the seller loses: evasion costs c_S fall at the signalling stage, before it "
            "prices, and no price recovers them, not selling included; the game gives the "
            "seller no option to stay out"
        )
    return out


def _seller(args: argparse.Namespace) -> Any:
    import dataclasses

    from games.price_discrimination.sellers import SELLERS

    seller: Any = SELLERS[args.seller]()
    # a flag may set what the named seller leaves open (None): Exp3's eta/gamma, alpha-pd's
    # alpha; a seller that is no dataclass (a plugin's) leaves nothing open
    fields = dataclasses.fields(seller) if dataclasses.is_dataclass(seller) else ()
    open_fields = {f.name for f in fields if getattr(seller, f.name) is None}
    given = {k: getattr(args, k) for k in ("eta", "gamma", "alpha") if getattr(args, k) is not None}
    unused = sorted(set(given) - open_fields)
    if unused:
        raise ValueError(f"--{unused[0]} does not apply to seller {args.seller!r}")
    return dataclasses.replace(seller, **given) if given else seller


def _sizes(args: argparse.Namespace, batch: int) -> None:
    """Counts, ceilings and memory of ``repeated`` and ``figures``, before the bar starts.

    ``batch`` is how many runs per seed the action holds at once.
    """
    from collabecon.cli._checks import fits_in_memory
    from games.price_discrimination.repeated import ROUND_RUN_BYTES

    for flag in ("rounds", "seeds"):
        if getattr(args, flag) < 1:
            raise ValueError(f"--{flag} must be an integer >= 1, got {getattr(args, flag)}")
    if args.seed < 0:
        raise ValueError(f"--seed must be an integer >= 0, got {args.seed}")
    sizes = f"--rounds {args.rounds} --seeds {args.seeds}"
    if args.rounds * args.seeds > MAX_PLAYS:
        raise ValueError(
            f"{sizes} asks for {args.rounds * args.seeds} rounds of play, more than the "
            f"{MAX_PLAYS} a run may have (5,000 times the thesis's 20,000 rounds x 10 runs)"
        )
    fits_in_memory(sizes, ROUND_RUN_BYTES * args.rounds * args.seeds * batch)


def _repeated(args: argparse.Namespace) -> dict[str, Any]:
    from games.price_discrimination.repeated import default_comparators, policy_regret, simulate

    if args.buyers < 2:
        raise ValueError(
            f"--buyers must be an integer >= 2 in repeated play, got {args.buyers}: the buyers' "
            "belief learns only from rounds in which both signals are sent (eq. (4.7))"
        )
    if args.buyers > MAX_BUYERS:
        raise ValueError(
            f"--buyers {args.buyers} is more than the {MAX_BUYERS} buyers a round of repeated "
            "play may have: a round's buyers are tabulated as (n+1)(n+2)/2 pairs of high types "
            "and evaders, and every round's time grows with them"
        )
    game = _game(args)
    seller = _seller(args)
    # the run, and with --policy-regret a batch of one run per comparator beside it
    _sizes(args, 1 + (len(default_comparators(game)) if args.policy_regret else 0))
    start = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    bias = tuple(args.bias) if args.bias is not None else None
    with _progress(args, args.rounds) as bar:
        run = simulate(
            game,
            seller,
            args.rounds,
            args.seeds,
            rng,
            bias=bias,
            alpha_hat_init=args.alpha_hat_init,
            progress=bar.update,
        )
    summary = run.summary()
    policy = None
    if args.policy_regret:
        policy = policy_regret(game, run, seed=rng, alpha_hat_init=args.alpha_hat_init)
    result = {
        "seller_utility_mean": summary["seller_utility_mean"],
        "seller_utility_se": summary["seller_utility_se"],
        **{k: v for k, v in summary.items() if k == "seller_utility_se_why"},
        "buyer_utility_mean": summary["buyer_utility_mean"],
        "alpha_hat_final": summary["alpha_hat_final"],
        "alpha_bar_final": summary["alpha_bar_final"],
        "action_freq": summary["action_freq"],
        "regret": {
            "pure_price_rules": float(run.regret().mean()),
            "blind_prices": float(run.regret(("high", "low")).mean()),
            "realised": float(run.realised_regret().mean()),
            "policy_fixed_mixed": None if policy is None else policy["policy_regret"],
            **(
                {"policy_fixed_mixed_why": "measured with --policy-regret only"}
                if policy is None
                else {}
            ),
        },
        "seconds": time.perf_counter() - start,
    }
    if args.out is not None:
        _write_repeated(args.out, run, result, policy)
    return result


def _write_repeated(out: Path, run: Any, result: dict[str, Any], policy: Any) -> None:
    out.mkdir(parents=True, exist_ok=True)
    columns = run.round_means()
    np.savetxt(
        out / "repeated.csv",
        np.column_stack(list(columns.values())),
        delimiter=",",
        header=",".join(columns),
        comments="",
        fmt="%.10g",
    )
    (out / "summary.json").write_text(json.dumps({**result, "policy_regret": policy}, indent=2))


def _figures(args: argparse.Namespace) -> dict[str, Any]:
    from collabecon.reproductions.price_discrimination import figures
    from games.price_discrimination.figures import BIAS_LEVELS, FIGURE_SELLERS

    # the sellers' runs of Figures 4.2-4.4, and one batch over the bias levels of Figure 4.5
    _sizes(args, len(FIGURE_SELLERS) + len(BIAS_LEVELS))
    start = time.perf_counter()
    # Figures 4.2-4.4 run the three sellers once, Figure 4.5 once more over the bias levels.
    with _progress(args, 2 * len(FIGURE_SELLERS) * args.rounds) as bar:
        reproduction = figures(args.out, args.rounds, args.seeds, args.seed, progress=bar.update)
    return {
        "files": reproduction.data["files"],
        "rounds": args.rounds,
        "seeds": args.seeds,
        "seconds": time.perf_counter() - start,
        "claims": [c.to_dict() for c in reproduction.claims],
    }


_RUNNERS = {"equilibrium": _equilibrium, "repeated": _repeated, "figures": _figures}


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the chosen action; ``repeated`` and ``figures`` draw a bar of rounds on stderr.

    Parameters
    ----------
    args : argparse.Namespace
        The flags of :func:`add_arguments`.

    Returns
    -------
    dict
        ``equilibrium``: ``convention``, ``is_equilibrium`` (computed by
        :func:`games.price_discrimination.certificate.certify`: no player gains by a pure
        deviation at any information set), ``profile`` (what the profile is, and who gains
        by deviating where it is no equilibrium), ``regime``, ``alpha_star``,
        ``evasion_rate``, ``q_star`` (when the high type evades),
        ``aware_prob_theta_low_after_s_low`` (when the profiles differ), the per-buyer
        utilities ``seller``, ``high_buyer``, ``low_buyer``, ``buyer_avg``, ``U1_star``, the
        seller's utility over the ``--buyers`` buyers ``seller_total`` (eq. (4.2)),
        ``deviation_gains`` (each information set's best pure deviation gain), and
        ``seller_note`` where the seller's utility is negative (evasion costs are sunk when
        it prices; the game has no option to stay out). A strict profile that fails the
        check carries ``failed`` and the command exits with 1.
        ``repeated``: ``seller_utility_mean``, ``seller_utility_se`` (``None`` for one seed,
        with ``seller_utility_se_why``), ``buyer_utility_mean``,
        ``alpha_hat_final``, ``alpha_bar_final``, ``action_freq``, ``regret``
        (``pure_price_rules``, ``blind_prices``, ``realised``, ``policy_fixed_mixed``) and
        ``seconds``; ``--out`` receives ``repeated.csv`` and ``summary.json``. ``figures``:
        ``files``, ``rounds``, ``seeds``, ``seconds`` and ``claims`` (each ``{paper, id,
        statement, published, measured, holds, note}``). The command exits with 0 (1 as
        above).

    Raises
    ------
    ValueError
        An unwritable ``--out``, a parameter outside the game's hypotheses, a count below 1,
        a negative ``--seed``, a seller flag the seller does not take, more than
        :data:`MAX_BUYERS` buyers in repeated play, more than :data:`MAX_PLAYS` rounds x
        seeds, or a run that would not fit in memory; the command exits with code 2 (as it
        does, from argparse, for a number flag that is no finite number: ``1/0``, ``nan``,
        ``1e400``; :func:`collabecon.cli._checks.exact_number`).

    References
    ----------
    Werner (2024), ch. 4, Theorem 6 and Corollary 2 (the one-shot game), Algorithm 6 (the
    repeated play), §4.4 and Figures 4.1-4.5.
    """
    from collabecon.cli._paths import writable_dir

    writable_dir("--out", getattr(args, "out", None))  # repeated and figures write
    return _RUNNERS[args.action](args)


def exit_status(result: dict[str, Any]) -> int:
    """1 when the ``equilibrium`` action's strict profile fails its best-response check."""
    return 1 if "failed" in result else 0


def render(result: dict[str, Any]) -> str:
    """The human table of :func:`run`'s result.

    Every quantity in one table (a dict's entries as ``key.entry``, a list's items as rows of
    their own), then the claims table of ``figures``.
    """
    rows: list[tuple[str, Any]] = []
    for key, value in result.items():
        if key == "claims":
            continue
        if isinstance(value, dict):
            rows += [(f"{key}.{k}", v) for k, v in value.items()]
        elif isinstance(value, list):
            rows += [(key, v) for v in value]
        else:
            rows.append((key, value))
    text = table([(k, fmt(v)) for k, v in rows], ("quantity", "value"))
    if "claims" in result:
        from econ.claims import Claim, claims_text

        claims = claims_text(Claim(**c) for c in result["claims"])
        text += f"\n\nclaims of the thesis (section 4.4):\n{claims}"
    return text

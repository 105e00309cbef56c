"""``collabecon privacy``: privacy-accuracy utilities of Tsoy et al. (2024).

Sub-commands:

``exists``   existence of a mutually beneficial protocol (Theorems 4.2, 4.5, 4.9) ->
             ``{"exists", "statistic", "threshold"}``;
``optimal``  the optimal protocol for ``--objective welfare`` (sum of utilities) or
             ``accuracy`` (Γ), every client gaining -> per-client ``alpha``, ``beta``,
             ``epsilon``, ``utility``, ``utility_alone`` and the total ``gamma``;
``figure1``  Figure 1 (both panels) with the exact optimum, as PNG and CSV under ``--out``, and
             the paper's claims about it, held or not (``claims``,
             :mod:`collabecon.reproductions.privacy`);
``curve``    the measured (ε, accuracy) curve of local-only and federated DP-SGD training
             (:mod:`learning.drivers.privacy_curve`) -> ``curve.json`` and ``curve.png`` under ``--out``;
             ``exists`` and ``optimal`` answer for the measured clients with ``--curve FILE``
             instead of ``--model`` (:class:`econ.privacy.empirical.Empirical`);
``account``  ε of DP-SGD-style training (``--steps`` Gaussian releases with noise multiplier
             ``--noise``, each on a subsample at ``--sampling-rate``) at ``--delta``, or with
             ``--epsilon`` instead of ``--noise`` the noise multiplier that reaches it
             (:mod:`econ.privacy.accountants`, through dp-accounting).

Model constants not given on the command line take the model's defaults: the paper's section 6
setting for ``dp-mean`` and ``bayes`` (n = 100, σ = 10, B = 20, τ = 1) and, for ``dp-sgd``, for
which the paper prints no numbers, an illustrative setting of collabecon (n = 10⁴, σ = 1, B = 2, L =
1, μ = 0.5, d = 10, D = 1).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from collabecon.cli._lists import float_list
from collabecon.cli._output import fmt, table
from collabecon.cli._paths import directory
from collabecon.cli.privacy_curve import add_curve_arguments, render_curve, run_curve

_MODEL_FLAGS = {
    # flag: (model keyword, help)
    "n": ("n", "samples per client (one, or one per client)"),
    "sigma": ("sigma", "per-sample standard deviation (scalar or one per client)"),
    "bound": ("bound", "support width B (sensitivity B/n)"),
    "tau": ("tau", "prior precision (bayes)"),
    "L": ("L", "smoothness constant (dp-sgd)"),
    "mu": ("mu", "strong-convexity constant (dp-sgd)"),
    "dim": ("dim", "parameter dimension d (dp-sgd)"),
    "diam": ("diam", "diameter D of the parameter set (dp-sgd)"),
}
_LISTS = {"n", "sigma"}


def _model_arguments(parser: argparse.ArgumentParser) -> None:
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--model", choices=("dp-mean", "dp-sgd", "bayes"))
    which.add_argument(
        "--curve",
        type=Path,
        help="a measured curve (curve.json of `privacy curve`): the clients of that training",
    )
    float_list(parser, "--lam", required=True, help="accuracy weights lambda_i, one per client")
    for flag, (_, help_) in _MODEL_FLAGS.items():
        if flag in _LISTS:
            float_list(parser, f"--{flag}", default=None, help=help_)
        else:
            parser.add_argument(
                f"--{flag}", type=int if flag == "dim" else float, default=None, help=help_
            )
    parser.add_argument(
        "--integer-rounds",
        action="store_true",
        help="dp-sgd: integer T (Algorithm 1) instead of the paper's continuous T",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the actions of ``collabecon privacy`` and the flags of each.

    ``exists`` and ``optimal`` take the clients (``--model`` with its constants, or
    ``--curve``) and ``--lam``; ``optimal`` also ``--objective``, ``--nu`` and ``--method``.
    ``figure1`` takes ``--out``, ``--repetitions`` and ``--seed``; ``account`` ``--noise`` or
    ``--epsilon``, ``--steps``, ``--sampling-rate``, ``--delta``, ``--accountant``,
    ``--sampling`` and ``--dataset-size``; ``curve`` the noise levels, seeds, ``--out`` and
    the training's settings. Each action accepts ``--json`` after its name too.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The subcommand's parser (``--json`` is declared on it already).
    """
    sub = parser.add_subparsers(dest="action", required=True)
    exists = sub.add_parser("exists", help="does a mutually beneficial protocol exist?")
    _model_arguments(exists)
    optimal = sub.add_parser("optimal", help="the optimal mutually beneficial protocol")
    _model_arguments(optimal)
    optimal.add_argument("--objective", choices=("welfare", "accuracy"), default="welfare")
    float_list(optimal, "--nu", default=None, help="server weights nu_i of the welfare objective")
    optimal.add_argument("--method", choices=("auto", "cvxpy"), default="auto")
    fig = sub.add_parser("figure1", help="reproduce Figure 1 with the exact optimum")
    fig.add_argument(
        "--out",
        required=True,
        type=directory,
        help="output directory for figure1.png and figure1.csv",
    )
    fig.add_argument(
        "--repetitions",
        type=int,
        default=1000,
        help="draws per grid point (paper 1000, notebook 300)",
    )
    fig.add_argument(
        "--seed", type=int, default=179, help="random seed (the authors' notebook uses 179)"
    )
    account = sub.add_parser("account", help="epsilon of subsampled Gaussian steps (or the noise)")
    target = account.add_mutually_exclusive_group(required=True)
    target.add_argument(
        "--noise", type=float, help="noise multiplier z (noise std / clipping norm)"
    )
    target.add_argument(
        "--epsilon", type=float, help="target epsilon: print the noise that reaches it"
    )
    account.add_argument("--steps", type=int, required=True, help="number of noisy steps")
    account.add_argument(
        "--sampling-rate",
        type=float,
        default=1.0,
        help="probability an example joins a step (default 1)",
    )
    account.add_argument("--delta", type=float, required=True, help="target delta")
    account.add_argument("--accountant", choices=("pld", "rdp"), default="pld")
    account.add_argument(
        "--sampling",
        choices=("poisson", "fixed"),
        default="poisson",
        help="Poisson sampling, or fixed-size batches without replacement (needs --dataset-size, rdp)",
    )
    account.add_argument(
        "--dataset-size", type=int, default=None, help="examples sampled from (fixed)"
    )
    curve = sub.add_parser(
        "curve", help="measure the (epsilon, accuracy) curve of local and federated DP-SGD"
    )
    add_curve_arguments(curve)
    for p in (
        exists,
        optimal,
        fig,
        account,
        curve,
    ):  # also accepted after the action; SUPPRESS keeps an earlier --json
        p.add_argument(
            "--json",
            action="store_true",
            default=argparse.SUPPRESS,
            help="print one JSON object on stdout",
        )


def _model(args: argparse.Namespace) -> Any:
    from econ.privacy.models import MODELS

    if args.curve is not None:
        from econ.privacy.empirical import Empirical

        given = [f"--{flag}" for flag in _MODEL_FLAGS if getattr(args, flag) is not None]
        if given or args.integer_rounds:
            given += ["--integer-rounds"] if args.integer_rounds else []
            raise ValueError(f"{', '.join(given)} do(es) not apply to --curve (measured clients)")
        return Empirical.from_curve(args.curve)
    kwargs: dict[str, Any] = {}
    for flag, (keyword, _) in _MODEL_FLAGS.items():
        value = getattr(args, flag)
        if value is not None:
            kwargs[keyword] = value[0] if isinstance(value, list) and len(value) == 1 else value
    for count in args.n or []:
        if not (count >= 1 and float(count).is_integer()):
            raise ValueError(f"--n lists sample counts: integers >= 1, got {count}")
    if args.n is not None and len(args.n) not in (1, len(args.lam)):
        raise ValueError(
            f"--n takes one sample count or one per client ({len(args.lam)} in --lam), "
            f"got {len(args.n)}"
        )
    if args.model == "dp-sgd":
        kwargs["n_clients"] = len(args.lam)
        kwargs["integer_rounds"] = args.integer_rounds
    elif args.integer_rounds:
        raise ValueError(
            f"--integer-rounds has no effect with --model {args.model} (it rounds the number "
            "of rounds T of dp-sgd)"
        )
    allowed = {
        "dp-mean": {"n", "sigma", "bound"},
        "bayes": {"n", "sigma", "tau"},
        "dp-sgd": {"n", "sigma", "bound", "L", "mu", "dim", "diam", "n_clients", "integer_rounds"},
    }[args.model]
    unused = sorted(set(kwargs) - allowed)
    if unused:
        raise ValueError(f"--{', --'.join(unused)} do(es) not apply to --model {args.model}")
    return MODELS[args.model](**kwargs)


def _account(args: argparse.Namespace) -> dict[str, Any]:
    from econ.privacy.accountants import (
        PLD_INTERVAL_MAX,
        PLD_POINTS,
        GridTooLarge,
        accountant_epsilon,
        accountant_sigma,
        accounting,
        pld_grid,
    )

    for flag, value in (("--noise", args.noise), ("--epsilon", args.epsilon)):
        if value is not None and not 0 < value < float("inf"):
            raise ValueError(f"{flag} must be a finite number > 0, got {value}")
    if args.steps < 1:
        raise ValueError(f"--steps must be an integer >= 1, got {args.steps}")
    if not 0 < args.sampling_rate <= 1:
        raise ValueError(f"--sampling-rate must lie in (0, 1], got {args.sampling_rate}")
    if not 0 < args.delta < 1:
        raise ValueError(f"--delta must lie in (0, 1), got {args.delta}")
    if args.dataset_size is not None and args.sampling != "fixed":
        raise ValueError(
            f"--dataset-size {args.dataset_size} has no effect with --sampling {args.sampling} "
            "(only fixed-size batches are drawn from a data set of known size)"
        )
    if args.sampling == "fixed" and args.sampling_rate == 1:
        raise ValueError(
            "--sampling fixed has no effect at --sampling-rate 1 (every step sees all the data)"
        )
    if args.dataset_size is not None and args.dataset_size < 1:
        raise ValueError(f"--dataset-size must be an integer >= 1, got {args.dataset_size}")
    options = dict(
        compositions=args.steps,
        accountant=args.accountant,
        sampling_rate=args.sampling_rate,
        sampling=args.sampling,
        dataset_size=args.dataset_size,
    )
    steps = f"over --steps {args.steps} at --sampling-rate {args.sampling_rate:g}"
    widest = f"more than {PLD_POINTS} even at its widest interval {PLD_INTERVAL_MAX:g}"
    try:
        if args.noise is not None:
            noise = args.noise
            epsilon = accountant_epsilon(noise, args.delta, 1.0, **options)
        else:
            epsilon = args.epsilon
            noise = accountant_sigma(epsilon, args.delta, 1.0, **options)
    except GridTooLarge as exc:
        if args.noise is not None:
            raise ValueError(
                f"--noise {args.noise:g} {steps}: the PLD accountant needs {exc.points:.3g} "
                f"grid points, {widest}; use --accountant rdp"
            ) from None
        raise ValueError(
            f"--epsilon {args.epsilon:g} {steps} needs a noise multiplier below "
            f"{exc.noise_floor:.3g}, where the PLD accountant needs {exc.points:.3g} grid "
            f"points, {widest}; use --accountant rdp"
        ) from None
    result = {
        "noise_multiplier": noise,
        "epsilon": epsilon,
        "delta": args.delta,
        "steps": args.steps,
        "sampling_rate": args.sampling_rate,
        "sampling": args.sampling,
        "accountant": args.accountant,
        "accounting": accounting(args.accountant, args.sampling, args.sampling_rate),
        "solved_for": "epsilon" if args.noise is not None else "noise_multiplier",
    }
    if args.accountant == "pld":
        interval = pld_grid(noise, args.steps, args.sampling_rate).interval
        bound = accountant_epsilon(noise, args.delta, 1.0, **{**options, "accountant": "rdp"})
        result["pld_interval"] = interval
        result["epsilon_rdp"] = bound
        if epsilon > bound:
            result["epsilon_note"] = (
                f"PLD's epsilon is above RDP's upper bound {bound:.6g}: its grid interval "
                f"{interval:g} is coarse against one step's privacy loss at --sampling-rate "
                f"{args.sampling_rate:g}, and its pessimistic rounding adds up over --steps "
                f"{args.steps}; RDP's figure is the tighter bound here"
            )
    return result


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the chosen action (module docstring).

    ``figure1`` draws a bar over the figure's grid points on stderr and ``curve`` a line per
    training run, none with ``--json``.

    Parameters
    ----------
    args : argparse.Namespace
        The flags of :func:`add_arguments`.

    Returns
    -------
    dict
        ``exists``: ``{exists, statistic, threshold}``. ``optimal``: ``model``,
        ``objective``, ``method``, ``exists``, per client ``alpha``, ``beta``, ``epsilon``,
        ``leak``, ``utility``, ``utility_alone``, ``gain``, and ``gamma``, ``multipliers``
        (with ``--curve`` also ``noise``, ``accuracy`` and ``server_accuracy``).
        ``figure1``: ``png``, ``csv``, ``repetitions``, ``seed``, ``rows`` (one per panel
        and m), ``claims`` (each ``{paper, id, statement, published, measured, holds,
        note}``) and ``markdown``. ``account``: ``noise_multiplier``, ``epsilon``,
        ``delta``, ``steps``, ``sampling_rate``, ``sampling``, ``accountant``,
        ``accounting`` (accountant, sampling and adjacency:
        :func:`econ.privacy.accountants.accounting`) and ``solved_for``, with the PLD
        accountant also ``pld_interval``, ``epsilon_rdp`` (RDP's upper bound, a
        cross-check) and, where PLD's figure lies above it, ``epsilon_note`` (why: a grid
        coarse against one step's loss). ``curve``: ``json``, ``png``, ``seconds``,
        ``settings``, ``accounting`` and ``summary`` (one row per training and noise
        level). The command exits with 0.

    Raises
    ------
    ValueError
        A model constant that does not apply, a number out of range, a count below 1 or an
        unwritable ``--out``; the command exits with code 2.

    References
    ----------
    Tsoy et al. (AISTATS 2024), "Provable Mutual Benefits from Federated Learning in
    Privacy-Sensitive Domains", §4 (Theorems 4.2, 4.5, 4.9), §5 and §6, Figure 1.
    """
    if args.action == "figure1":
        return _figure1(args)
    if args.action == "account":
        return _account(args)
    if args.action == "curve":
        return run_curve(args)
    model = _model(args)
    if args.action == "exists":
        from econ.privacy.existence import exists

        return exists(model, args.lam).to_dict()
    from econ.privacy.optimal import optimal_protocol

    if args.nu is not None and args.objective != "welfare":
        raise ValueError(
            f"--nu has no effect with --objective {args.objective} (it weighs the clients' "
            "utilities in the welfare objective)"
        )
    return optimal_protocol(model, args.lam, args.objective, args.nu, args.method).to_dict()


def _figure1(args: argparse.Namespace) -> dict[str, Any]:
    from collabecon.cli._paths import writable_dir

    writable_dir("--out", args.out)
    from collabecon.cli._progress import Progress
    from collabecon.reproductions.privacy import run_figure1
    from econ.privacy.effectiveness import BAYES_GRID, DP_GRID

    if args.repetitions < 2:
        raise ValueError(f"--repetitions must be >= 2 (standard errors), got {args.repetitions}")
    if args.seed < 0:
        raise ValueError(f"--seed must be an integer >= 0, got {args.seed}")
    from collabecon.cli._checks import fits_in_memory

    # every draw of a grid point is kept (a row of five numbers, about 400 bytes measured)
    fits_in_memory(f"--repetitions {args.repetitions}", 512.0 * args.repetitions)
    progress = Progress.of(args, "privacy figure1")
    with progress.bar(DP_GRID.size + BAYES_GRID.size, unit="m") as bar:
        reproduction = run_figure1(
            args.out, args.repetitions, (args.seed,), progress=lambda: bar.update(1)
        )
    data = reproduction.data
    return {
        "png": data["png"],
        "csv": data["csv"],
        "repetitions": args.repetitions,
        "seed": args.seed,
        "rows": data["rows"],
        "claims": [c.to_dict() for c in reproduction.claims],
        "markdown": reproduction.markdown(),
    }


def render(result: dict[str, Any]) -> str:
    """The human table of :func:`run`'s result.

    ``curve``: a row per training and noise level with the files written; ``figure1``: its
    rows, the claims table and the files; ``optimal``: a row per client with the server's
    accuracy, whether a protocol exists, the objective and the method; any other action: a
    table of its quantities (``account``'s accounting in words).
    """
    if "summary" in result:
        return render_curve(result)
    if "rows" in result:
        from econ.claims import Claim, claims_text

        cols = [k for k in result["rows"][0] if not k.endswith("_se")]
        body = table([[r.get(c, "") for c in cols] for r in result["rows"]], cols)
        claims = claims_text(Claim(**c) for c in result["claims"])
        return (
            f"{body}\n\nclaims of the paper:\n{claims}\n\nwrote {result['png']} and {result['csv']}"
        )
    if "beta" not in result:
        from econ.privacy.accountants import accounting_text

        quantities = [
            (k, accounting_text(v) if k == "accounting" else v) for k, v in result.items()
        ]
        return table(quantities, ("quantity", "value"))
    eps = result["epsilon"] if result["epsilon"] is not None else [None] * len(result["beta"])
    rows: list[tuple[Any, ...]] = [
        (i, a, b, e, leak, u, u0)
        for i, (a, b, e, leak, u, u0) in enumerate(
            zip(
                result["alpha"],
                result["beta"],
                eps,
                result["leak"],
                result["utility"],
                result["utility_alone"],
                strict=True,
            )
        )
    ]
    head: tuple[str, ...] = (
        "client",
        "alpha",
        "beta",
        "epsilon",
        "leak",
        "utility",
        "utility_alone",
    )
    if result.get("noise") is not None:
        head = ("client", "noise", "epsilon", "accuracy", "utility", "utility_alone")
        rows = [
            (i, z, e, a, u, u0)
            for i, (z, e, a, u, u0) in enumerate(
                zip(
                    result["noise"],
                    result["epsilon"],
                    result["accuracy"],
                    result["utility"],
                    result["utility_alone"],
                    strict=True,
                )
            )
        ]
        server = f"server accuracy: {fmt(result['server_accuracy'])}"
    else:
        server = f"gamma (server accuracy): {fmt(result['gamma'])}"
    foot = (
        f"\nexists: {result['exists']}   {server}"
        f"   objective: {result['objective']}\nmethod: {result['method']}"
    )
    return table(rows, head) + foot

"""``collabecon bargain``: the Nash bargaining solution of the duopoly (thesis section 3.4).

``--ql0``/``--qh0`` bargain two firms in closed form (:func:`econ.bargaining.duopoly_nash_solution`);
``--firms`` bargains any number of firms in the n-firm market
(:func:`econ.quality_bargaining.quality_bargaining`), of consumer types uniform on [0, 1] or
drawn from ``--population`` (:func:`econ.population_market.population_revenues`), and ``--path``
adds where the n-firm defection-free rule (:mod:`games.defection_free.n_firms`) comes to rest
from that start in the same market.
"""

from __future__ import annotations

import argparse
import functools
from typing import Any

from collabecon.cli._checks import finite_float
from collabecon.cli._lists import float_list
from econ import bargaining


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the flags of ``collabecon bargain``.

    ``--ql0`` and ``--qh0`` are the disagreement point of two firms, or ``--firms`` that of
    any number; ``--qmax`` is :math:`Q`; ``--allow-lower`` / ``--no-allow-lower`` picks the
    two firms' feasible set; ``--path`` (with ``--firms``) runs the n-firm defection-free
    rule.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The subcommand's parser (``--json`` is declared on it already).
    """
    parser.add_argument(
        "--ql0",
        type=finite_float,
        default=None,
        help="low firm's quality at the disagreement point (with --qh0)",
    )
    parser.add_argument(
        "--qh0",
        type=finite_float,
        default=None,
        help="high firm's quality at the disagreement point (with --ql0)",
    )
    float_list(
        parser,
        "--firms",
        default=None,
        help="instead of --ql0/--qh0: every firm's quality at the disagreement point (1 to 12"
        " firms, words or commas), bargained over [q_i0, Q] in the uniform n-firm market",
    )
    parser.add_argument(
        "--path",
        action="store_true",
        help="with --firms: also run the n-firm defection-free rule from the start (pace b~)"
        " and report where it comes to rest",
    )
    parser.add_argument(
        "--population",
        default=None,
        help="with --firms: consumer types of the market, uniform (default), beta:a,b, "
        "lognorm:s[,scale] or truncnorm:mu,sigma[,high]",
    )
    parser.add_argument(
        "--qmax", type=finite_float, default=1.0, help="Q, the best reachable quality (default 1)"
    )
    parser.add_argument(
        "--allow-lower",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="the feasible set: by default (--no-allow-lower) no firm ends below its "
        "disagreement quality (q_l >= q_l0, q_h >= q_h0: models never degrade); --allow-lower "
        "solves the thesis's program, whose q_l* may lie below q_l0 (Proposition 4)",
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The Nash bargaining solution of the duopoly from the flags' disagreement point.

    Parameters
    ----------
    args : argparse.Namespace
        The flags of :func:`add_arguments`.

    Returns
    -------
    dict
        The inputs ``q_l0``, ``q_h0``, ``q_max``, ``allow_lower`` and the fields of
        :class:`econ.bargaining.DuopolyNashSolution` as floats: ``rho_star``, ``q_l_star``,
        ``q_h_star``, ``nash_product``, ``U_l_star``, ``U_h_star``, ``rho_low``,
        ``rho_high``. The command prints them as a key/value table and exits with 0.

    With ``--firms``: the inputs ``firms``, ``q_max``, ``population`` and the fields of
    :meth:`econ.quality_bargaining.QualityBargain.to_dict` (``quality``, ``revenue``,
    ``disagreement``, ``gains``, ``nash_product``, ``low``, ``high``, ``at_low``,
    ``at_high``, ``interior``), and with ``--path`` the rest point of the n-firm rule as
    ``path_``-prefixed fields of :meth:`games.defection_free.n_firms.NFirmPath.to_dict`.

    Raises
    ------
    ValueError
        Qualities outside ``0 <= q_l0 <= q_h0 <= Q <= 1`` (or, with ``--firms``, outside
        ``[0, Q]``), both or neither of ``--firms`` and ``--ql0``/``--qh0``, ``--path`` or
        ``--population`` without ``--firms``, a population spec
        :func:`econ.population.parse_population` refuses, or a population whose market at
        the disagreement point has no certified equilibrium
        (:func:`econ.population_market.population_equilibrium`); the command exits with code 2.

    References
    ----------
    Werner (2024), ch. 3, §3.4, the Nash bargaining program and Proposition 2; Algorithm 5
    (p. 64) for ``--path``.
    """
    duopoly = args.ql0 is not None or args.qh0 is not None
    if args.firms is not None:
        if duopoly or args.allow_lower:
            raise ValueError("--firms takes no --ql0, --qh0 or --allow-lower")
        return _firms(args)
    if args.ql0 is None or args.qh0 is None:
        raise ValueError("pass --ql0 and --qh0 (two firms) or --firms (any number)")
    if args.path:
        raise ValueError("--path needs --firms")
    if args.population is not None:
        raise ValueError(
            "--population needs --firms (the duopoly's closed form is for uniform types)"
        )
    solution = bargaining.duopoly_nash_solution(
        args.ql0, args.qh0, args.qmax, allow_lower=args.allow_lower
    ).to_dict()
    return {
        "q_l0": args.ql0,
        "q_h0": args.qh0,
        "q_max": args.qmax,
        "allow_lower": args.allow_lower,
        **solution,
    }


def _firms(args: argparse.Namespace) -> dict[str, Any]:
    """The n-firm bargain of ``--firms`` (and the defection-free rule's rest with ``--path``)."""
    from econ.population import parse_population
    from econ.population_market import population_equilibrium, population_revenues
    from econ.quality_bargaining import quality_bargaining

    population = parse_population("uniform" if args.population is None else args.population)
    if not population.closed_form:
        # the bargain prices this market at many qualities; where its prices fail their
        # certificate at the start, every evaluation iterates best responses to no end
        start = population_equilibrium(args.firms, population).certificate
        if not start.holds:
            raise ValueError(
                f"--population {population.label}: the market of the disagreement point has "
                f"no certified equilibrium (largest relative gain {max(start.relative_gain):.3g}"
                f" > {start.tolerance:g}), so no revenue to bargain over"
            )
    market = functools.partial(population_revenues, population=population)
    result = {
        "firms": args.firms,
        "q_max": args.qmax,
        "population": population.label,
        **quality_bargaining(args.firms, q_max=args.qmax, revenues=market).to_dict(),
    }
    if args.path:
        from games.defection_free.n_firms import n_firm_path

        path = n_firm_path(args.firms, q_max=args.qmax, revenues=market, target=result["quality"])
        result.update({f"path_{k}": v for k, v in path.to_dict().items()})
    return result


#: library keywords of the bargaining solution and the flags that set them
KEYWORDS = {"q_l0": "--ql0", "q_h0": "--qh0", "q_max": "--qmax", "start": "--firms"}

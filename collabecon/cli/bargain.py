"""``collabecon bargain``: the Nash bargaining solution of the duopoly (thesis section 3.4)."""

from __future__ import annotations

import argparse
from typing import Any

from collabecon.cli._checks import finite_float
from econ import bargaining


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the flags of ``collabecon bargain``.

    ``--ql0`` and ``--qh0`` (required) are the disagreement point, ``--qmax`` is :math:`Q`,
    and ``--allow-lower`` / ``--no-allow-lower`` picks the feasible set.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The subcommand's parser (``--json`` is declared on it already).
    """
    parser.add_argument(
        "--ql0",
        type=finite_float,
        required=True,
        help="low firm's quality at the disagreement point",
    )
    parser.add_argument(
        "--qh0",
        type=finite_float,
        required=True,
        help="high firm's quality at the disagreement point",
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

    Raises
    ------
    ValueError
        Qualities outside ``0 <= q_l0 <= q_h0 <= Q <= 1``; the command exits with code 2.

    References
    ----------
    Werner (2024), ch. 3, §3.4, the Nash bargaining program and Proposition 2.
    """
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


#: library keywords of the bargaining solution and the flags that set them
KEYWORDS = {"q_l0": "--ql0", "q_h0": "--qh0", "q_max": "--qmax"}

"""``collabecon duopoly``: the Bertrand equilibrium for two model qualities (thesis Lemma 22)."""

from __future__ import annotations

import argparse
from typing import Any

from collabecon.cli._checks import finite_float
from econ import duopoly


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the flags of ``collabecon duopoly``.

    ``--ql`` and ``--qh`` (required) are the two models' qualities; ``--order`` sorts them
    instead of rejecting ``q_l > q_h``.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The subcommand's parser (``--json`` is declared on it already).
    """
    parser.add_argument(
        "--ql", type=finite_float, required=True, help="quality of the low firm's model, in [0, 1]"
    )
    parser.add_argument(
        "--qh",
        type=finite_float,
        required=True,
        help="quality of the high firm's model, in [q_l, 1]",
    )
    parser.add_argument(
        "--order", action="store_true", help="sort the pair instead of rejecting q_l > q_h"
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The Bertrand equilibrium of the duopoly for the flags' qualities.

    Parameters
    ----------
    args : argparse.Namespace
        The flags of :func:`add_arguments`.

    Returns
    -------
    dict
        The fields of :class:`econ.duopoly.DuopolyEquilibrium` as floats: ``q_l``, ``q_h``,
        prices ``p_l``, ``p_h``, demands ``D_l``, ``D_h``, indifferent types ``theta_l``,
        ``theta_h``, revenues ``U_l``, ``U_h``, ``consumer_surplus`` and ``welfare``. The
        command prints them as a key/value table and exits with 0.

    Raises
    ------
    ValueError
        A quality outside [0, 1], or ``q_l > q_h`` without ``--order``; the command exits
        with code 2.

    References
    ----------
    Werner (2024), ch. 3, §3.2, Lemmas 21-23, eq. (3.4).
    """
    return duopoly.equilibrium(args.ql, args.qh, order=args.order).to_dict()


#: library keywords of :func:`econ.duopoly.equilibrium` and the flags that set them
KEYWORDS = {"order=True": "--order", "q_l": "--ql", "q_h": "--qh"}

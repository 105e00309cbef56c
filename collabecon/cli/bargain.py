"""``collabecon bargain``: the Nash bargaining solution of the duopoly (thesis section 3.4)."""

from __future__ import annotations

import argparse
from typing import Any

from econ import bargaining


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--ql0", type=float, required=True, help="low firm's quality at the disagreement point"
    )
    parser.add_argument(
        "--qh0", type=float, required=True, help="high firm's quality at the disagreement point"
    )
    parser.add_argument(
        "--qmax", type=float, default=1.0, help="Q, the best reachable quality (default 1)"
    )
    parser.add_argument(
        "--allow-lower",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the feasible set: with --allow-lower (default, the thesis's program) the bargained "
        "q_l* may lie below q_l0, as in Proposition 4; --no-allow-lower bargains only over "
        "qualities reachable without degrading a model (q_l >= q_l0, q_h >= q_h0)",
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
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

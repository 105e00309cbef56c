"""``collabecon duopoly``: the Bertrand equilibrium for two model qualities (thesis Lemma 22)."""

from __future__ import annotations

import argparse
from typing import Any

from econ import duopoly


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--ql", type=float, required=True, help="quality of the low firm's model, in [0, 1]"
    )
    parser.add_argument(
        "--qh", type=float, required=True, help="quality of the high firm's model, in [q_l, 1]"
    )
    parser.add_argument(
        "--order", action="store_true", help="sort the pair instead of rejecting q_l > q_h"
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    return duopoly.equilibrium(args.ql, args.qh, order=args.order).to_dict()


#: library keywords of :func:`econ.duopoly.equilibrium` and the flags that set them
KEYWORDS = {"order=True": "--order", "q_l": "--ql", "q_h": "--qh"}

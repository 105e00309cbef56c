"""``collabecon verify``: check every registered proposition.

Imports ``econ`` and ``games`` only (never torch). Exits 1 when a verdict disagrees with
what its entry expects, 0 otherwise.
"""

from __future__ import annotations

import argparse
from typing import Any

from econ import propositions
from learning.cli._output import table

PACKAGES = ("econ", "games")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--only", default="", metavar="PREFIX", help="only ids starting with PREFIX"
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    propositions.load(PACKAGES)
    outcomes = list(propositions.verify(args.only))
    if not outcomes:
        raise ValueError(f"--only {args.only!r} matches no registered proposition")
    return {
        "propositions": [o.to_dict() for o in outcomes],
        "summary": propositions.summary(outcomes),
    }


def render(result: dict[str, Any]) -> str:
    rows = [
        (
            p["id"],
            p["source"],
            p["status"] + ("" if p["agrees"] else "  <-- expected " + p["expected"]),
            _clip(p["evidence"], 70),
        )
        for p in result["propositions"]
    ]
    s = result["summary"]
    foot = (
        f"\n{s['proved']} proved, {s['checked']} checked, {s['refuted']} refuted"
        f" (errors {s['error']}); {s['disagreeing']} disagree with expectation"
    )
    return table(rows, ("id", "source", "status", "evidence")) + foot


def exit_status(result: dict[str, Any]) -> int:
    return 1 if result["summary"]["disagreeing"] else 0


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"

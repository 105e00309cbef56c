"""``collabecon verify``: check every registered proposition.

Imports ``econ``, ``games`` and the torch-free theory modules of ``learning`` only (never
torch). Exits 1 when a verdict disagrees with what its entry expects, 0 otherwise.
``--markdown`` prints ``docs/errata.md`` (every refuted statement, by kind, with its
counterexample and its correction) instead of the table.

The output also gives, per paper, how many of its numbered statements the registry covers
(:func:`econ.statement_index.coverage`): numbered, registered, unchecked (registered with the
reason no check is possible) and the labels still missing.
"""

from __future__ import annotations

import argparse
from typing import Any

from collabecon._verify import verify
from collabecon.cli._output import table
from econ import propositions, statement_index
from econ.errata import errata_markdown


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``collabecon verify``: ``--only PREFIX`` and ``--markdown``."""
    parser.add_argument(
        "--only", default="", metavar="PREFIX", help="only ids starting with PREFIX"
    )
    parser.add_argument(
        "--markdown",
        action="store_true",
        help="print the errata page (docs/errata.md) generated from the registry",
    )


def outcomes(prefix: str = "") -> list[propositions.Outcome]:
    """Load every registering module and check the entries whose id starts with ``prefix``."""
    try:
        return verify(prefix)
    except ValueError:
        raise ValueError(f"--only {prefix!r} matches no registered proposition") from None


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Check the entries under ``--only``: outcomes, summary and each paper's coverage."""
    checked = outcomes(args.only)
    result: dict[str, Any] = {
        "propositions": [o.to_dict() for o in checked],
        "summary": propositions.summary(checked),
        "papers": papers(checked, args.only),
    }
    if args.markdown:
        result["markdown"] = errata_markdown(checked)
    return result


def papers(checked: list[propositions.Outcome], prefix: str = "") -> dict[str, Any]:
    """The coverage of each paper with an indexed id under ``prefix`` (every paper for ``""``)."""
    keys = {
        paper.key
        for paper in statement_index.PAPERS
        if any(i.startswith(prefix) for i in statement_index.indexed_ids(paper))
    }
    return {k: v for k, v in statement_index.coverage(checked).items() if k in keys}


def render(result: dict[str, Any]) -> str:
    """The text output: the entries, the summary, the unchecked reasons, the papers' table."""
    if "markdown" in result:
        return str(result["markdown"]).rstrip("\n")
    rows = [
        (
            p["id"],
            p["kind"],
            p["status"] + ("" if p["agrees"] else "  <-- expected " + p["expected"]),
            _clip(p["evidence"], 70),
        )
        for p in result["propositions"]
    ]
    s = result["summary"]
    foot = (
        f"\n{s['proved']} proved, {s['checked']} checked, {s['refuted']} refuted,"
        f" {s['unchecked']} unchecked (errors {s['error']});"
        f" {s['disagreeing']} disagree with expectation"
        f"\nrefuted: {s['errors_in_papers']} errors in the papers,"
        f" {s['errors_in_code']} in the authors' code,"
        f" {s['errors_in_readings']} readings we do not adopt"
    )
    text = table(rows, ("id", "kind", "status", "evidence")) + foot
    unchecked = [p for p in result["propositions"] if p["status"] == "unchecked"]
    if unchecked:
        text += "\n\nunchecked (no numerical check is possible):\n" + "\n".join(
            f"  {p['id']}: {_clip(p['evidence'], 100)}" for p in unchecked
        )
    if result["papers"]:
        cover = [
            (
                key,
                c["numbered"],
                c["registered"],
                c["unchecked"],
                _clip(", ".join(c["missing"]) or "-", 60),
            )
            for key, c in result["papers"].items()
        ]
        text += "\n\nnumbered statements per paper:\n" + table(
            cover, ("paper", "numbered", "registered", "unchecked", "missing")
        )
    return text


def exit_status(result: dict[str, Any]) -> int:
    """1 when a verdict disagrees with what its entry expects, 0 otherwise."""
    return 1 if result["summary"]["disagreeing"] else 0


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"

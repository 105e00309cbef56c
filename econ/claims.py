"""A paper's claim next to what a reproduction measured.

Every reproduction in collabecon (``collabecon table1``, ``cobo``, ``ipfl --compare``,
``pricing figures``, ``privacy figure1``, the defection-free claims, ``collabecon reproduce``)
reports each claim the paper makes about the experiment it reproduces as a :class:`Claim`,
whether the claim holds on our run or not, with the paper's number beside ours. The JSON of
every reproduction has ``claims: [{paper, id, statement, published, measured, holds, note}]``
and its rendered table is :func:`claims_markdown` (or :func:`claims_text` in a terminal).

A claim that does not hold at our scale is reported, never dropped; ``note`` says what limits
the comparison (the scale, the number of seeds, the seed-to-seed spread).

A reproduction declares its claims as data: a table of :class:`ClaimSpec` (id, statement,
where the paper prints it, the published number, what is measured and when the claim holds),
which :func:`evaluate` turns into claims on the reproduction's measured results.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from econ.outputs import plain

__all__ = [
    "Claim",
    "ClaimSpec",
    "Reproduction",
    "claims_markdown",
    "claims_text",
    "count_held",
    "evaluate",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Claim:
    """One claim of a paper and its outcome on a reproduction (built by keyword).

    Parameters
    ----------
    paper
        The paper and place, e.g. ``"Werner et al. 2023, Table 1"``.
    id
        A stable identifier, unique within a reproduction (``"table1.rotation.fc>local"``).
    statement
        What the paper claims, in its words or a faithful paraphrase.
    published
        The paper's number(s) behind the claim (a float, a string such as ``"75.4 > 71.3"``,
        a mapping), or ``None`` when the paper states the claim without a number.
    measured
        Our number(s), in the same units as ``published``.
    holds
        Whether the claim holds on the measured numbers, judged at the paper's threshold.
    note
        What limits the comparison (scale, seeds, spread), or empty.
    """

    paper: str
    id: str
    statement: str
    published: Any
    measured: Any
    holds: bool
    note: str = ""

    def __post_init__(self) -> None:
        """Refuse a claim without a paper, an id or a statement, or with a non-bool ``holds``."""
        if not self.id or not self.statement or not self.paper:
            raise ValueError("a claim needs a paper, an id and a statement")
        if not isinstance(self.holds, bool):
            raise TypeError(f"holds must be a bool, got {type(self.holds).__name__}")

    def to_dict(self) -> dict[str, Any]:
        """The claim as JSON-ready data (the ``claims`` items of every reproduction)."""
        return {
            "paper": self.paper,
            "id": self.id,
            "statement": self.statement,
            "published": plain(self.published),
            "measured": plain(self.measured),
            "holds": self.holds,
            "note": self.note,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class ClaimSpec:
    """One claim of a paper as data, judged by :func:`evaluate` on a reproduction's results.

    Parameters
    ----------
    id, statement
        As in :class:`Claim`.
    where
        Where the paper prints the claim (:attr:`Claim.paper`).
    measured
        ``measured(results)``: the number(s) compared with ``published``.
    holds
        ``holds(results)``: whether the claim holds at the paper's threshold.
    published
        The paper's number(s), or ``published(results)`` where the printed comparison names a
        quantity of the run (a grid point, a bound the run computes).
    note
        What limits the comparison, or ``note(results)``.
    applies
        ``applies(results)``: whether the results hold what the claim is about (a method, a
        task, a scheme that ran); the claim is left out otherwise. Always, when None.
    """

    id: str
    statement: str
    where: str
    measured: Callable[[Any], Any]
    holds: Callable[[Any], Any]
    published: Any = None
    note: str | Callable[[Any], str] = ""
    applies: Callable[[Any], bool] | None = None

    def __post_init__(self) -> None:
        """Refuse a spec without a place, an id or a statement, or with uncallable checks.

        ``measured`` and ``holds`` must be callables of the results.
        """
        if not self.id or not self.statement or not self.where:
            raise ValueError("a claim needs a place in the paper, an id and a statement")
        if not (callable(self.measured) and callable(self.holds)):
            raise TypeError(f"claim {self.id!r}: measured and holds must be callables")


def _value(field: Any, results: Any) -> Any:
    return field(results) if callable(field) else field


def evaluate(specs: Iterable[ClaimSpec], results: Any) -> list[Claim]:
    """The claims of ``specs`` that apply to ``results``, each judged on them, in table order."""
    return [
        Claim(
            paper=spec.where,
            id=spec.id,
            statement=spec.statement,
            published=_value(spec.published, results),
            measured=spec.measured(results),
            holds=bool(spec.holds(results)),
            note=_value(spec.note, results),
        )
        for spec in specs
        if spec.applies is None or spec.applies(results)
    ]


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.4g}"
    if isinstance(value, dict):
        return ", ".join(f"{k} {_cell(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(_cell(v) for v in value)
    return str(value)


def _unique(claims: Sequence[Claim]) -> None:
    seen: set[str] = set()
    for claim in claims:
        if claim.id in seen:
            raise ValueError(f"two claims share the id {claim.id!r}")
        seen.add(claim.id)


def claims_markdown(claims: Iterable[Claim]) -> str:
    """The claims as a markdown table: id, statement, published, measured, holds, note."""
    claims = list(claims)
    _unique(claims)
    lines = [
        "| claim | statement | published | measured | holds | note |",
        "|---|---|---|---|---|---|",
    ]
    for c in claims:
        cells = [f"`{c.id}`", c.statement, _cell(c.published), _cell(c.measured)]
        cells += ["yes" if c.holds else "**no**", c.note]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    held, total = count_held(claims)
    lines += ["", f"{held} of {total} claims hold."]
    return "\n".join(lines) + "\n"


def claims_text(claims: Iterable[Claim]) -> str:
    """The claims for a terminal, one line each: ``[ok]``/``[--]``, id, measured vs published."""
    claims = list(claims)
    _unique(claims)
    lines = [
        f"  [{'ok' if c.holds else '--'}] {c.id}: {c.statement} "
        f"(measured {_cell(c.measured)}; paper {_cell(c.published)})"
        + (f" [{c.note}]" if c.note else "")
        for c in claims
    ]
    held, total = count_held(claims)
    lines.append(f"  {held} of {total} claims hold")
    return "\n".join(lines)


def count_held(claims: Iterable[Claim]) -> tuple[int, int]:
    """``(held, total)`` over ``claims``."""
    claims = list(claims)
    return sum(c.holds for c in claims), len(claims)


@dataclass(frozen=True, slots=True)
class Reproduction:
    """What one reproduction reports: its claims, its settings and tables, its figures.

    Parameters
    ----------
    name
        The reproduction's name in ``collabecon reproduce`` (``"table1"``, ``"ipfl"``, ...).
    title
        A heading for the report, naming the paper and the experiment.
    claims
        Every claim of the paper about this experiment, held or not.
    body
        Markdown placed before the claims: the settings, the measured tables, the spread over
        seeds, the notes a reader needs.
    figures
        File names of figures written next to the report (relative to its folder).
    data
        The measured numbers as JSON-ready data.
    """

    name: str
    title: str
    claims: tuple[Claim, ...]
    body: str = ""
    figures: tuple[str, ...] = ()
    data: Any = None

    def __post_init__(self) -> None:
        """Refuse two claims that share an id."""
        _unique(self.claims)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: name, title, claims, figures, data."""
        return {
            "name": self.name,
            "title": self.title,
            "claims": [c.to_dict() for c in self.claims],
            "figures": list(self.figures),
            "data": plain(self.data),
        }

    def markdown(self, level: int = 2) -> str:
        """The reproduction as a markdown section: heading, body, claims table, figures."""
        lines = [f"{'#' * level} {self.title}", ""]
        if self.body:
            lines += [self.body.rstrip(), ""]
        lines += [claims_markdown(self.claims)]
        lines += [f"![{name}]({name})" for name in self.figures]
        return "\n".join(lines).rstrip() + "\n"

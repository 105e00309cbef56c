"""The proposition registry: every paper result the toolkit touches, as a checkable object.

Each lemma, proposition, theorem or corollary is registered in the ``propositions`` or
``<model>_propositions`` module beside the module of its model, with the :func:`proposition`
decorator around a ``check()`` function that returns a :class:`Verdict`:

``proved``
    sympy establishes it; the evidence is the key expression.
``checked``
    no symbolic proof, but it holds on a stated number of random and edge points.
``refuted``
    it fails; the verdict carries a counterexample. The corrected statement is registered
    beside it with the id suffix ``.corrected``.
``unchecked``
    no numerical check is possible (the statement's constants cannot be computed on any
    instance); the verdict gives the reason. Such an entry is listed and counted apart, never
    silently absent, and names no perturbation.

Each entry also declares whether it is expected to hold (``holds``); ``collabecon verify``
fails only when a verdict disagrees with that expectation. Each entry has a :class:`Kind`
that says whose statement it is: the paper's as printed, the authors' code's, a reading we
chose where the text is ambiguous, or a result the toolkit derives itself. An error of the
paper and an error of the authors' code are reported apart.

A verdict is earned, not asserted: every check takes the printed pieces of its statement (a
formula, a constant, a hypothesis) as keyword arguments whose defaults are the printed ones,
and every entry names a ``perturb`` mapping under which its verdict flips. The test suite
runs each check both ways, so a check that cannot fail is caught.
"""

from __future__ import annotations

import importlib
import pkgutil
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from fractions import Fraction
from typing import Any, cast

import numpy as np
import sympy as sp

from econ.outputs import plain

CORRECTED = ".corrected"  # the id suffix of a corrected statement


class Kind(str, Enum):
    """Whose statement an entry is."""

    PAPER = "paper"  # printed in one of the papers
    CODE = "code"  # what the authors' published code does
    READING = "reading"  # a reading we chose where the printed text is ambiguous
    DERIVED = "derived"  # a result the toolkit derives; the papers do not state it


class Status(str, Enum):
    """What a check established."""

    PROVED = "proved"
    CHECKED = "checked"
    REFUTED = "refuted"
    UNCHECKED = "unchecked"  # registered with the reason no check is possible
    ERROR = "error"  # the check itself raised: never agrees with any expectation


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of one check, with the evidence a reader needs to trust it."""

    status: Status
    evidence: str
    counterexample: Mapping[str, Any] | None = None
    n_points: int | None = None
    drawn: str | None = None

    @property
    def holds(self) -> bool:
        """Whether the statement was found to hold (``proved`` or ``checked``)."""
        return self.status in (Status.PROVED, Status.CHECKED)


def proved(evidence: str | sp.Basic) -> Verdict:
    """A symbolic proof; ``evidence`` is the decisive expression or identity."""
    return Verdict(Status.PROVED, str(evidence))


def checked(evidence: str, n_points: int, *, drawn: str) -> Verdict:
    """A numeric check that held on ``n_points`` points, drawn as ``drawn`` says.

    ``drawn`` tells a reader how the points were chosen (a seeded uniform sample of a box,
    a grid, the edges and the knife-edge ratios, ...), so that the count means something.
    """
    if n_points < 1:
        raise ValueError(f"a numeric check needs at least one point, got n_points={n_points}")
    if not drawn.strip():
        raise ValueError("say how the points of a numeric check were drawn")
    return Verdict(
        Status.CHECKED,
        f"holds on {n_points} points ({drawn}): {evidence}",
        n_points=n_points,
        drawn=drawn,
    )


def refuted(evidence: str, counterexample: Mapping[str, Any]) -> Verdict:
    """A failure, with the point that shows it."""
    return Verdict(Status.REFUTED, evidence, dict(counterexample))


def unchecked(reason: str) -> Verdict:
    """A statement registered without a check, with the ``reason`` none is possible."""
    if not reason.strip():
        raise ValueError("an unchecked statement needs the reason it cannot be checked")
    return Verdict(Status.UNCHECKED, reason)


def on_points(
    predicate: Callable[..., bool],
    points: Iterable[Mapping[str, Any]],
    what: str,
    *,
    drawn: str,
    hypothesis: Callable[..., bool] | None = None,
) -> Verdict:
    """``checked`` if ``predicate(**point)`` holds at every point, else ``refuted`` at the first miss.

    Points at which ``hypothesis(**point)`` is false lie outside the statement: they are
    skipped and counted apart (a point that satisfies a statement vacuously is no evidence),
    and a counterexample is only ever taken among the points that satisfy it.
    """
    n = vacuous = 0
    for point in points:
        if hypothesis is not None and not hypothesis(**point):
            vacuous += 1
            continue
        n += 1
        if not predicate(**point):
            return refuted(f"fails: {what}", {k: shown_value(v) for k, v in point.items()})
    if n == 0:
        raise ValueError(f"no point satisfies the hypothesis of {what!r} ({vacuous} drawn)")
    if vacuous:
        drawn = f"{drawn}; {vacuous} further points outside the hypothesis skipped"
    return checked(what, n, drawn=drawn)


def is_zero(expr: sp.Expr, what: str) -> Verdict:
    """``proved`` if sympy simplifies ``expr`` to 0, ``refuted`` if it is a non-zero constant.

    Anything else raises: a symbolic check that sympy cannot decide is a bug in the check,
    not a verdict.
    """
    simplified = sp.cancel(sp.together(expr))  # decides rational functions quickly
    if simplified != 0 and not simplified.is_number:
        simplified = sp.simplify(simplified)
    if simplified == 0:
        return proved(f"{what}: simplifies to 0")
    if simplified.is_number:
        return refuted(f"{what}: differs by {simplified}", {"difference": str(simplified)})
    raise ValueError(f"sympy could not decide {what}: residual {simplified}")


def sign_on_interval(expr: sp.Expr, var: sp.Symbol, low: Any, high: Any) -> int:
    """The constant sign (+1 or -1) of a rational function of ``var`` on the open interval.

    A proof, not a sample: Sturm sequences (``Poly.count_roots``) show that neither the
    numerator nor the denominator has a root strictly inside ``(low, high)``, and the sign is
    read at the midpoint. Raises ``ValueError`` if the sign changes inside.
    """
    num, den = sp.fraction(sp.factor(sp.together(expr)))
    low, high = sp.nsimplify(low), sp.nsimplify(high)
    for part in (num, den):
        poly = sp.Poly(part, var)
        inside = poly.count_roots(low, high) - sum(1 for e in (low, high) if poly.eval(e) == 0)
        if poly.degree() > 0 and inside > 0:
            raise ValueError(f"{part} has a root inside ({low}, {high})")
    value = expr.subs(var, (low + high) / 2)
    return 1 if value > 0 else -1


def all_zero(identities: Iterable[tuple[sp.Expr, str]], what: str) -> Verdict:
    """``proved`` if every ``(expr, label)`` simplifies to 0; otherwise the first failure."""
    for expr, label in identities:
        verdict = is_zero(expr, label)
        if not verdict.holds:
            return verdict
    return proved(f"{what}: every identity simplifies to 0")


def shown_value(value: Any) -> Any:
    """A counterexample's value as shown: numpy as Python, sympy and fractions exact (strings)."""
    if isinstance(value, list):
        return [shown_value(v) for v in value]
    if isinstance(value, Fraction):
        return str(value)
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, sp.Basic):
        return str(value)
    return value


@dataclass(frozen=True, slots=True)
class Proposition:
    """One registered result.

    Attributes
    ----------
    id
        Dotted id, e.g. ``thesis.ch3.prop1.4``; a corrected statement ends in ``.corrected``.
    source
        The citation: paper, section, equation or proposition number.
    statement
        One line in words and symbols.
    check
        Returns a :class:`Verdict`; must be deterministic. Called without arguments it
        checks the statement as printed; its keyword arguments are the printed pieces.
    holds
        Whether the statement is expected to hold (``False`` for a printed statement that
        the toolkit refutes).
    kind
        Whose statement it is (:class:`Kind`); by default ``derived`` for a ``.corrected``
        twin (the correction is the toolkit's) and ``paper`` otherwise.
    perturb
        Keyword arguments for ``check`` under which its verdict must flip: a changed
        constant, formula or hypothesis for an entry that holds, the correction for one
        that fails. The test suite runs every entry so.
    """

    id: str
    source: str
    statement: str
    check: Callable[..., Verdict] = field(repr=False)
    holds: bool = True
    kind: Kind = cast(Kind, None)  # noqa: RUF009  (None: resolved in __post_init__)
    perturb: Mapping[str, Any] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        """Resolve the default kind."""
        # a correction is the toolkit's own statement; anything else is the paper's unless said
        default = Kind.DERIVED if self.id.endswith(CORRECTED) else Kind.PAPER
        object.__setattr__(self, "kind", default if self.kind is None else Kind(self.kind))


_REGISTRY: dict[str, Proposition] = {}


def register(prop: Proposition) -> Proposition:
    """Add ``prop`` to the registry; ids are unique."""
    existing = _REGISTRY.get(prop.id)
    if existing is not None and existing.check is not prop.check:
        raise ValueError(f"proposition id {prop.id!r} is already registered")
    _REGISTRY[prop.id] = prop
    return prop


def proposition(
    id: str,
    *,
    source: str,
    statement: str,
    holds: bool = True,
    kind: Kind | str | None = None,
    perturb: Mapping[str, Any] | None = None,
) -> Callable[[Callable[..., Verdict]], Callable[..., Verdict]]:
    """Decorator: register the decorated ``check()`` as proposition ``id``."""

    def decorate(check: Callable[..., Verdict]) -> Callable[..., Verdict]:
        register(
            Proposition(
                id=id,
                source=source,
                statement=statement,
                check=check,
                holds=holds,
                kind=cast(Kind, None) if kind is None else Kind(kind),
                perturb=perturb,
            )
        )
        return check

    return decorate


def registered(prefix: str = "") -> list[Proposition]:
    """The registered propositions whose id starts with ``prefix``, sorted by id."""
    return sorted((p for p in _REGISTRY.values() if p.id.startswith(prefix)), key=lambda p: p.id)


def load(packages: Iterable[str]) -> None:
    """Import every module of ``packages`` so that their propositions register themselves."""
    for name in packages:
        package = importlib.import_module(name)
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{name}."):
            importlib.import_module(info.name)


@dataclass(frozen=True, slots=True)
class Outcome:
    """A proposition together with the verdict of its check."""

    proposition: Proposition
    verdict: Verdict
    seconds: float

    @property
    def agrees(self) -> bool:
        """Whether the verdict is what the entry expects (an ``unchecked`` one expects none)."""
        status = self.verdict.status
        if status is Status.UNCHECKED:
            return self.proposition.perturb is None
        return status is not Status.ERROR and self.verdict.holds == self.proposition.holds

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; exact (sympy) values of a counterexample as strings."""
        p, v = self.proposition, self.verdict
        out: dict[str, Any] = {
            "id": p.id,
            "kind": p.kind.value,
            "source": p.source,
            "statement": p.statement,
            "status": v.status.value,
            "expected": "holds" if p.holds else "fails",
            "agrees": self.agrees,
            "evidence": v.evidence,
        }
        if v.n_points is not None:
            out["n_points"] = v.n_points
            out["drawn"] = v.drawn
        if v.counterexample is not None:
            out["counterexample"] = {k: shown_value(x) for k, x in v.counterexample.items()}
        return plain(out)


def run(prop: Proposition) -> Outcome:
    """Run one check; an exception becomes an ``error`` verdict rather than a crash."""
    start = time.perf_counter()
    try:
        verdict = prop.check()
        if not isinstance(verdict, Verdict):
            raise TypeError(f"check() returned {type(verdict).__name__}, not Verdict")
    except Exception as exc:
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        verdict = Verdict(Status.ERROR, last)
    return Outcome(prop, verdict, time.perf_counter() - start)


def verify(prefix: str = "") -> Iterator[Outcome]:
    """Check every registered proposition whose id starts with ``prefix``."""
    for prop in registered(prefix):
        yield run(prop)


def summary(outcomes: Iterable[Outcome]) -> dict[str, int]:
    """Counts by status, the refuted entries by kind, and the verdicts that disagree.

    ``errors_in_papers`` counts the refuted statements the papers print, ``errors_in_code``
    those of the authors' code and ``errors_in_readings`` the readings of ambiguous text
    that the toolkit refutes (and so does not adopt).
    """
    counts = {
        "proved": 0,
        "checked": 0,
        "refuted": 0,
        "unchecked": 0,
        "error": 0,
        "disagreeing": 0,
        "errors_in_papers": 0,
        "errors_in_code": 0,
        "errors_in_readings": 0,
    }
    for o in outcomes:
        counts[o.verdict.status.value] += 1
        counts["disagreeing"] += not o.agrees
        if o.verdict.status is Status.REFUTED and o.proposition.kind is not Kind.DERIVED:
            counts[_ERROR_COUNT[o.proposition.kind]] += 1
    return counts


_ERROR_COUNT = {
    Kind.PAPER: "errors_in_papers",
    Kind.CODE: "errors_in_code",
    Kind.READING: "errors_in_readings",
}

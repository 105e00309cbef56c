"""The proposition registry: every paper result the toolkit touches, as a checkable object.

Each lemma, proposition, theorem or corollary is registered in the module of its model with
the :func:`proposition` decorator around a ``check()`` function that returns a
:class:`Verdict`:

``proved``
    sympy establishes it; the evidence is the key expression.
``checked``
    no symbolic proof, but it holds on a stated number of random and edge points.
``refuted``
    it fails; the verdict carries a counterexample. The corrected statement is registered
    beside it with the id suffix ``.corrected``.

Each entry also declares whether it is expected to hold (``holds``); ``collabecon verify``
fails only when a verdict disagrees with that expectation.
"""

from __future__ import annotations

import importlib
import pkgutil
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np
import sympy as sp


class Status(str, Enum):
    """What a check established."""

    PROVED = "proved"
    CHECKED = "checked"
    REFUTED = "refuted"
    ERROR = "error"  # the check itself raised: never agrees with any expectation


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of one check, with the evidence a reader needs to trust it."""

    status: Status
    evidence: str
    counterexample: Mapping[str, Any] | None = None

    @property
    def holds(self) -> bool:
        return self.status in (Status.PROVED, Status.CHECKED)


def proved(evidence: str | sp.Basic) -> Verdict:
    """A symbolic proof; ``evidence`` is the decisive expression or identity."""
    return Verdict(Status.PROVED, str(evidence))


def checked(evidence: str, n_points: int) -> Verdict:
    """A numeric check that held on ``n_points`` points."""
    return Verdict(Status.CHECKED, f"holds on {n_points} points: {evidence}")


def refuted(evidence: str, counterexample: Mapping[str, Any]) -> Verdict:
    """A failure, with the point that shows it."""
    return Verdict(Status.REFUTED, evidence, dict(counterexample))


def on_points(
    predicate: Callable[..., bool],
    points: Iterable[Mapping[str, Any]],
    what: str,
) -> Verdict:
    """``checked`` if ``predicate(**point)`` holds at every point, else ``refuted`` at the first miss."""
    n = 0
    for point in points:
        n += 1
        if not predicate(**point):
            return refuted(f"fails: {what}", {k: _plain(v) for k, v in point.items()})
    if n == 0:
        raise ValueError("on_points needs at least one point")
    return checked(what, n)


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


def _plain(value: Any) -> Any:
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
        Returns a :class:`Verdict`; must be deterministic.
    holds
        Whether the statement is expected to hold (``False`` for a printed statement that
        the toolkit refutes).
    """

    id: str
    source: str
    statement: str
    check: Callable[[], Verdict] = field(repr=False)
    holds: bool = True


_REGISTRY: dict[str, Proposition] = {}


def register(prop: Proposition) -> Proposition:
    """Add ``prop`` to the registry; ids are unique."""
    existing = _REGISTRY.get(prop.id)
    if existing is not None and existing.check is not prop.check:
        raise ValueError(f"proposition id {prop.id!r} is already registered")
    _REGISTRY[prop.id] = prop
    return prop


def proposition(
    id: str, *, source: str, statement: str, holds: bool = True
) -> Callable[[Callable[[], Verdict]], Callable[[], Verdict]]:
    """Decorator: register the decorated ``check()`` as proposition ``id``."""

    def decorate(check: Callable[[], Verdict]) -> Callable[[], Verdict]:
        register(Proposition(id=id, source=source, statement=statement, check=check, holds=holds))
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
        return (
            self.verdict.status is not Status.ERROR and self.verdict.holds == self.proposition.holds
        )

    def to_dict(self) -> dict[str, Any]:
        p, v = self.proposition, self.verdict
        out: dict[str, Any] = {
            "id": p.id,
            "source": p.source,
            "statement": p.statement,
            "status": v.status.value,
            "expected": "holds" if p.holds else "fails",
            "agrees": self.agrees,
            "evidence": v.evidence,
        }
        if v.counterexample is not None:
            out["counterexample"] = {k: _plain(x) for k, x in v.counterexample.items()}
        return out


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
    """Counts by status plus how many verdicts disagree with their expectation."""
    counts = {"proved": 0, "checked": 0, "refuted": 0, "error": 0, "disagreeing": 0}
    for o in outcomes:
        counts[o.verdict.status.value] += 1
        counts["disagreeing"] += not o.agrees
    return counts

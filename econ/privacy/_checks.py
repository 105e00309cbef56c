"""Helpers shared by the registered checks of :mod:`econ.privacy`.

An identity or a sign that sympy establishes gives a proof step; one that fails gives a
counterexample at an explicit point of the statement's domain, so that a check fed a changed
formula returns ``refuted`` rather than raising. A Monte Carlo estimate is held against its
formula within 4 standard errors (:func:`mc_within`, :func:`mc_verdict`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import sympy as sp
from numpy.typing import NDArray

from econ.propositions import Verdict, checked, proved, refuted

#: Summation index and number of clients of the general-N sums.
K, N_SYM = sp.symbols("k N", integer=True, positive=True)


def client_sum(expr: sp.Expr) -> sp.Expr:
    r""":math:`\sum_{k=1}^N` of ``expr``, split by linearity into sums of its monomials in ``k``."""
    out = sp.Integer(0)
    for term in sp.Add.make_args(sp.expand(expr)):
        const, rest = term.as_independent(K)
        out += const * sp.Sum(rest, (K, 1, N_SYM))
    return out


def _sample(symbols: list[sp.Symbol], rng: np.random.Generator) -> dict[sp.Symbol, sp.Rational]:
    return {s: sp.Rational(int(rng.integers(1, 400)), int(rng.integers(1, 200))) for s in symbols}


def identity(
    expr: sp.Expr,
    what: str,
    *,
    sample: Callable[[np.random.Generator], Mapping[sp.Symbol, Any]] | None = None,
) -> Verdict:
    """``proved`` if ``expr`` simplifies to 0, else ``refuted`` at a point where it is not 0.

    ``sample`` draws a point of the statement's domain (default: positive rationals for every
    free symbol); a non-zero residual is a non-zero analytic function, so it is non-zero at a
    generic point of any open domain.
    """
    residual = sp.cancel(sp.together(expr))
    if residual != 0:
        residual = sp.simplify(residual)
    if residual == 0:
        return proved(f"{what}: simplifies to 0")
    rng = np.random.default_rng(0)
    symbols = sorted(residual.free_symbols, key=str)
    for _ in range(50):
        point = dict(sample(rng)) if sample is not None else _sample(symbols, rng)
        point.update({s: v for s, v in _sample(symbols, rng).items() if s not in point})
        value = complex(sp.N(residual.subs(point)))
        if abs(value) > 1e-9 and abs(value.imag) < 1e-12:
            return refuted(
                f"{what}: does not hold, residual {residual}",
                {**{str(s): str(v) for s, v in point.items()}, "residual": value.real},
            )
    raise ValueError(f"sympy could not decide {what}: residual {residual}")


def all_hold(steps: list[Verdict | Callable[[], Verdict]], what: str) -> Verdict:
    """The first step that does not hold, or ``proved`` with every piece of evidence.

    A step may be a zero-argument callable, run only when every step before it holds (a
    later step of a changed statement may not be decidable once an earlier one fails).
    """
    evidence = []
    for step in steps:
        v = step if isinstance(step, Verdict) else step()
        if not v.holds:
            return v
        evidence.append(v.evidence)
    return proved(f"{what}: " + "; ".join(evidence))


def proves_positive(
    expr: sp.Expr,
    what: str,
    *,
    sample: Callable[[np.random.Generator], Mapping[sp.Symbol, Any]] | None = None,
    strict: bool = True,
) -> Verdict:
    """``proved`` if sympy finds ``expr`` positive for positive symbols.

    Positive with ``strict``, else non-negative.

    Parametrise the domain by positive symbols before calling. Otherwise the expression is
    evaluated on sampled points and ``refuted`` at the first negative value; if none is found
    the sign is undecided and this raises.
    """
    # a rational function is usually decided once put over one denominator and factored;
    # sympy's full simplify, much dearer, only where that leaves the sign open
    simplified = sp.factor(sp.cancel(sp.together(expr)))
    decided = simplified.is_positive if strict else simplified.is_nonnegative
    if not decided:
        simplified = sp.factor(sp.simplify(expr))
        decided = simplified.is_positive if strict else simplified.is_nonnegative
    if decided:
        return proved(f"{what}: {simplified} {'>' if strict else '>='} 0")
    rng = np.random.default_rng(1)
    symbols = sorted(simplified.free_symbols, key=str)
    for _ in range(400):
        point = dict(sample(rng)) if sample is not None else {}
        point.update({s: v for s, v in _sample(symbols, rng).items() if s not in point})
        number = complex(sp.N(simplified.subs(point)))
        if abs(number.imag) > 1e-12:
            continue  # outside the real domain of a changed formula
        value = number.real
        if value < 0 or (strict and value == 0):
            return refuted(
                f"{what}: {simplified} is {value:.6g} < 0",
                {**{str(s): str(v) for s, v in point.items()}, "value": value},
            )
    raise ValueError(f"sympy could not decide the sign of {what}: {simplified}")


def mc_within(draws: NDArray[np.float64], formula: float, what: str) -> tuple[bool, str]:
    """Whether a Monte Carlo mean lies within 4 standard errors of ``formula``, and the evidence."""
    mean, se = float(draws.mean()), float(draws.std(ddof=1) / np.sqrt(draws.size))
    ok = abs(mean - formula) <= 4 * se
    return (
        ok,
        f"{what}: Monte Carlo {mean:.5g} +- {se:.2g} vs formula {formula:.5g}",
    )


def mc_verdict(results: list[tuple[bool, str]], drawn: str) -> Verdict:
    """``checked`` if every estimate of :func:`mc_within` agrees, else ``refuted`` at the first miss."""
    evidence = "; ".join(text for _, text in results)
    misses = [text for ok, text in results if not ok]
    if not misses:
        return checked(
            f"each independent estimate within 4 standard errors of the formula: {evidence}",
            len(results),
            drawn=drawn,
        )
    return refuted(f"more than 4 standard errors from the formula: {misses[0]}", {"miss": misses})

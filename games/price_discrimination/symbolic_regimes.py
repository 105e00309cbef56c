r"""Chapter 4's two regimes as a positive parametrisation, and sympy's proofs of sign over it.

Werner (2024), ch. 4: the game's constraints (Definition 4, Assumption 1) and its regimes
(A: :math:`\underline\theta \ge \mu\bar\theta`, B: :math:`\underline\theta < \mu\bar\theta`,
Theorem 6) become positivity of free symbols: :math:`\mu = 1/(1+m)`,
:math:`\alpha^* = k/(1+k)`, and regime A writes :math:`\Delta\theta = m\underline\theta/(1+g)`,
regime B :math:`\Delta\theta = m\underline\theta + g`, with :math:`m, k, g, \underline\theta,
c_S > 0`. A rational function of these symbols whose numerator and denominator have
non-negative coefficients is then non-negative for every game of the regime, which is how the
statements of :mod:`games.price_discrimination.propositions` and its siblings prove the
inequalities of the proofs of section 4.7 for all parameters at once.
"""

from __future__ import annotations

from typing import Any

import sympy as sp

from econ.propositions import Verdict, proved, refuted
from games.price_discrimination.game import C_S, THETA_L, PDGame, seller_utility

#: The free symbols of the parametrisation besides :math:`\underline\theta` and :math:`c_S`.
M, K, G = sp.symbols("m k g", positive=True)


def regime_game(regime: str, c_s: Any = C_S) -> tuple[PDGame, Any]:
    """A symbolic game of regime ``"A"`` or ``"B"`` and its :math:`q^*`.

    References
    ----------
    Werner (2024), ch. 4, §4.2, Definition 4, Assumption 1 and Theorem 6 (the two regimes and
    :math:`q^*`).
    """
    mu = 1 / (1 + M)
    delta = M * THETA_L / (1 + G) if regime == "A" else M * THETA_L + G
    game = object.__new__(PDGame)
    values = (mu, THETA_L, THETA_L + delta, K / (1 + K) * delta, c_s, 10)
    for name, value in zip(
        ("mu", "theta_low", "theta_high", "c_b", "c_s", "n"), values, strict=True
    ):
        object.__setattr__(game, name, value)
    q_star = 1 if regime == "A" else game.q_bar
    return game, q_star


def nonnegative(expr: Any) -> bool | None:
    """True if ``expr`` (a rational function of positive symbols) is provably >= 0.

    False if sympy finds it negative, None if neither is shown.

    References
    ----------
    Werner (2024), ch. 4, §4.7 (the inequalities of the proofs, checked for every game of a
    regime).
    """
    expr = sp.factor(sp.together(expr))
    if expr.is_nonnegative:
        return True
    num, den = sp.fraction(expr)
    polys = [sp.Poly(sp.expand(p), *sorted(expr.free_symbols, key=str)) for p in (num, den)]
    if expr.free_symbols and all(all(c >= 0 for c in p.coeffs()) for p in polys):
        return True
    if expr.is_negative:
        return False
    return None


def regime_instance(regime: str) -> dict[Any, Any]:
    """A numeric point of the parametrisation of ``regime``, for counterexamples.

    References
    ----------
    Werner (2024), ch. 4, §4.2, Theorem 6 (a game of each regime).
    """
    return (
        {M: 1, K: 1, G: 1, THETA_L: 5, C_S: 5}
        if regime == "B"
        else {M: 2, K: 1, G: 1, THETA_L: 5, C_S: 5}
    )


def sign_facts(facts: list[tuple[str, str, Any]], what: str) -> Verdict:
    """``proved`` if every ``(regime, label, expr)`` has ``expr >= 0``; else a counterexample.

    References
    ----------
    Werner (2024), ch. 4, §4.7 (the inequalities of the proofs, checked for every game of a
    regime).
    """
    for regime, label, expr in facts:
        ok = nonnegative(expr)
        if ok:
            continue
        point = regime_instance(regime)
        value = sp.nsimplify(sp.sympify(expr).subs(point))
        if value < 0:
            return refuted(
                f"{label} is negative in regime {regime}",
                {
                    "regime": regime,
                    **{str(k): str(v) for k, v in point.items()},
                    "value": str(value),
                },
            )
        raise ValueError(f"sympy could not sign {label} in regime {regime}: {expr}")
    return proved(
        f"{what}: every term is a polynomial with non-negative coefficients in positive "
        "parameters (mu = 1/(1+m), alpha* = k/(1+k), Delta by regime)"
    )


def vanishes(
    expr: Any, what: str, regime: str = "B", extra: dict[Any, Any] | None = None
) -> Verdict:
    """``proved`` if ``expr`` simplifies to 0, else ``refuted`` at a numeric instance.

    References
    ----------
    Werner (2024), ch. 4, §4.7 (the identities of the proofs, checked for every game of a
    regime).
    """
    value = sp.cancel(sp.together(expr))
    if value == 0:
        return proved(f"{what}: simplifies to 0")
    point = {**regime_instance(regime), **(extra or {})}
    at = sp.nsimplify(sp.sympify(value).subs(point))
    if at == 0:
        raise ValueError(f"{what}: non-zero residual {value} vanishes at the test instance")
    return refuted(
        f"{what}: does not vanish", {**{str(k): str(v) for k, v in point.items()}, "value": str(at)}
    )


def commitment_utility(game: PDGame, regime: str) -> Any:
    r"""The utility under commitment :math:`\mathbb U_1^*` of a symbolic game of ``regime``.

    :math:`\mathbb U_1^* = \alpha^* U_S(0; \mathrm{PD}) + (1 - \alpha^*) u_S(0)`.

    :attr:`PDGame.U1_star` compares utilities to find the equilibrium, which a symbolic game
    cannot; here the regime fixes the blind seller's price.

    References
    ----------
    Werner (2024), ch. 4, §4.2, Corollary 3 and Remark 3.
    """
    star = game.c_b / game.delta
    blind = 1 if regime == "B" else 0
    return star * seller_utility(game, 0, 1, 0) + (1 - star) * seller_utility(game, 0, blind, blind)

"""The pricing and buying rules of Theorem 6 and its proof, Werner (2024), ch. 4.

Holds the registered statements about the rules Theorem 6 and its proof print for single
agents: the signal-blind seller's best price (``thesis.ch4.thm6.proof_blind``), the buyer's
rule at a tie (``thesis.ch4.thm6.buying``, Theorem 6(e)) and the aware seller's expected
utility after a low signal, the display f(p) (``thesis.ch4.thm6.proof_f``), each with its
``.corrected`` twin. The equilibrium profile, the sellers' indifference and uniqueness are in
:mod:`games.price_discrimination.theorem6_propositions`.

References
----------
Werner (2024), PhD thesis, ch. 4, section 4.2 (pp. 83-88), Theorem 6(d)-(e), and section 4.7
(pp. 98-109), the proof of Theorem 6.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from econ.propositions import Verdict, checked, on_points, proposition, refuted
from games.price_discrimination.checked_games import GAMES, GAMES_DRAWN
from games.price_discrimination.game import PDGame, posterior_after_low
from games.price_discrimination.propositions import S42, S47, F


def _proof_blind_low(theta_low: Any, mu_theta_high: Any) -> bool:
    """The proof of Theorem 6: p_blind = theta_L if theta_L <= mu theta_H (as printed)."""
    return bool(theta_low <= mu_theta_high)


def _statement_blind_low(theta_low: Any, mu_theta_high: Any) -> bool:
    """Theorem 6(d): p_blind = theta_L if theta_L >= mu theta_H."""
    return bool(theta_low >= mu_theta_high)


def _blind_rule(low_if: Callable[[Any, Any], bool]) -> Verdict:
    def best(game: str) -> bool:
        g = GAMES[game]
        revenue_low, revenue_high = g.theta_low, g.mu * g.theta_high  # everyone / high types buy
        chosen = revenue_low if low_if(g.theta_low, g.mu * g.theta_high) else revenue_high
        return bool(chosen == max(revenue_low, revenue_high))

    return on_points(
        best,
        [{"game": name} for name in GAMES],
        "the rule's price maximises the blind seller's expected revenue (theta_L vs mu theta_H)",
        drawn=GAMES_DRAWN,
    )


@proposition(
    "thesis.ch4.thm6.proof_blind",
    source=f"{S47}, proof of Theorem 6 (the display of p_blind)",
    statement="the signal-blind seller's best price is theta_L if theta_L <= mu theta_H and "
    "theta_H if theta_L > mu theta_H (the proof's display; Theorem 6(d) states the reverse)",
    holds=False,
    perturb={"low_if": _statement_blind_low},
)
def _thm6_proof_blind(low_if: Callable[[Any, Any], bool] = _proof_blind_low) -> Verdict:
    verdict = _blind_rule(low_if)
    if verdict.holds or verdict.counterexample is None:
        return verdict
    g = GAMES[verdict.counterexample["game"]]
    return refuted(
        "the displayed rule charges theta_L when theta_L < mu theta_H, where theta_H earns more "
        "(theta_L from every buyer against mu theta_H from the high types)",
        {
            **verdict.counterexample,
            "theta_L": str(g.theta_low),
            "mu theta_H": str(g.mu * g.theta_high),
            "rule's price": "theta_L" if low_if(g.theta_low, g.mu * g.theta_high) else "theta_H",
        },
    )


@proposition(
    "thesis.ch4.thm6.proof_blind.corrected",
    source=f"{S47}, proof of Theorem 6; {S42}, Theorem 6(d); docs/errata.md, "
    "thesis.ch4.thm6.proof_blind",
    statement="the signal-blind seller's best price is theta_L if theta_L >= mu theta_H, else "
    "theta_H (revenue theta_L from everyone against mu theta_H from the high types)",
    perturb={"low_if": _proof_blind_low},
)
def _thm6_proof_blind_corrected(
    low_if: Callable[[Any, Any], bool] = _statement_blind_low,
) -> Verdict:
    return _blind_rule(low_if)


def _printed_buys(value: Any, price: Any) -> bool:
    return bool(value <= price)  # Theorem 6(e) as printed: b_i = 1{theta_i <= p_i}


def _corrected_buys(value: Any, price: Any) -> bool:
    return bool(price <= value)  # the prose of Theorem 6(e): buy iff the price is at most the value


def _buying(buys: Callable[[Any, Any], bool]) -> Verdict:
    points = [
        {"game": name, "value": v, "price": p}
        for name, g in GAMES.items()
        for v in ("theta_L", "theta_H")
        for p in ("theta_L", "theta_H")
    ]

    def best_response(game: str, value: str, price: str) -> bool:
        g = GAMES[game]
        v = g.theta_low if value == "theta_L" else g.theta_high
        p = g.theta_low if price == "theta_L" else g.theta_high
        surplus = v - p
        return bool(surplus >= 0) if buys(v, p) else bool(surplus <= 0)

    return on_points(
        best_response,
        points,
        "the rule buys exactly when buying does not lose (surplus theta_i - p_i >= 0)",
        drawn=f"{GAMES_DRAWN}; both values at both prices",
    )


@proposition(
    "thesis.ch4.thm6.buying",
    source=f"{S42}, Theorem 6(e)",
    statement="buyer i buys iff b_i = 1{theta_i <= p_i} (the formula as printed; the sentence "
    "before it says 'iff their price is at most their value')",
    holds=False,
    perturb={"buys": _corrected_buys},
)
def _thm6_buying(buys: Callable[[Any, Any], bool] = _printed_buys) -> Verdict:
    return _buying(buys)


@proposition(
    "thesis.ch4.thm6.buying.corrected",
    source=f"{S42}, Theorem 6(e); docs/errata.md, thesis.ch4.thm6.buying",
    statement="b_i = 1{p_i <= theta_i}: buy iff the price is at most the value (ties buy)",
    perturb={"buys": _printed_buys},
)
def _thm6_buying_corrected(buys: Callable[[Any, Any], bool] = _corrected_buys) -> Verdict:
    return _buying(buys)


def _printed_f(game: PDGame, q: Any, p: Any) -> Any | None:
    r"""The display of :math:`f(p)` in the proof of Theorem 6, as printed.

    :math:`f(p) = p - \hat\mu q^* c_S` for :math:`p < \underline\theta`, :math:`\hat\mu p -
    \hat\mu q^* c_S` for :math:`p \in [\underline\theta, \bar\theta]` (``None`` above
    :math:`\bar\theta`, where the display says nothing).
    """
    mu_hat = posterior_after_low(game, q)
    if p < game.theta_low:
        return p - mu_hat * q * game.c_s
    if p <= game.theta_high:
        return mu_hat * p - mu_hat * q * game.c_s
    return None


def _corrected_f(game: PDGame, q: Any, p: Any) -> Any | None:
    r"""The display of :math:`f(p)` in the proof of Theorem 6, corrected.

    :math:`f(p) = p - \hat\mu c_S` for :math:`p \le \underline\theta`, :math:`\hat\mu p -
    \hat\mu c_S` for :math:`p \in (\underline\theta, \bar\theta]`.
    """
    mu_hat = posterior_after_low(game, q)
    if p <= game.theta_low:
        return p - mu_hat * game.c_s
    if p <= game.theta_high:
        return mu_hat * p - mu_hat * game.c_s
    return None


def _seller_after_low(game: PDGame, q: Any, p: Any) -> Any:
    r"""The aware seller's expected utility from price ``p`` after :math:`\underline s`.

    From eqs. (4.1)-(4.2) and the buying rule 'buy iff the price is at most the value': a
    low-signal buyer is a high type (who evaded, cost :math:`c_S`) w.p. :math:`\hat\mu`.
    """
    mu_hat = posterior_after_low(game, q)
    buys = (1 - mu_hat) * (p <= game.theta_low) + mu_hat * (p <= game.theta_high)
    return p * buys - mu_hat * game.c_s


def _f_points() -> list[dict[str, Any]]:
    points = []
    for name, g in GAMES.items():
        q = min(1, g.q_star)
        if q > 0:
            for label, p in (
                ("theta_L/2", g.theta_low / 2),
                ("theta_L", g.theta_low),
                ("(theta_L+theta_H)/2", (g.theta_low + g.theta_high) / 2),
                ("theta_H", g.theta_high),
            ):
                points.append({"game": name, "q": str(q), "p": label, "price": str(p)})
    return points


_F_DRAWN = (
    f"{GAMES_DRAWN}; at q = q* (the display's), p in {{theta_L/2, theta_L, (theta_L + "
    "theta_H)/2, theta_H}"
)


def _f_display(f: Callable[[PDGame, Any, Any], Any]) -> Verdict:
    def agrees(game: str, q: str, p: str, price: str) -> bool:
        g = GAMES[game]
        return bool(f(g, F(q), F(price)) == _seller_after_low(g, F(q), F(price)))

    return on_points(
        agrees,
        _f_points(),
        "the display equals the seller's expected utility after s_L computed from eqs. (4.1)-"
        "(4.2) with posterior mu_hat = q mu/(q mu + 1 - mu) (exact rationals)",
        drawn=_F_DRAWN,
    )


@proposition(
    "thesis.ch4.thm6.proof_f",
    source=f"{S47}, proof of Theorem 6, the display of f(p) (the seller's expected utility "
    "after s_L)",
    statement="f(p) = p - mu_hat q* c_S if p < theta_L and mu_hat p - mu_hat q* c_S if p in "
    "[theta_L, theta_H] is the aware seller's expected utility from price p after s_L",
    holds=False,
    perturb={"f": _corrected_f},
)
def _thm6_proof_f(f: Callable[[PDGame, Any, Any], Any] = _printed_f) -> Verdict:
    verdict = _f_display(f)
    if verdict.holds or verdict.counterexample is None:
        return verdict
    point = verdict.counterexample
    g, q, p = GAMES[point["game"]], F(point["q"]), F(point["price"])
    return refuted(
        "the display is wrong twice: at p = theta_L the low types also buy, so f(theta_L) = "
        "theta_L - mu_hat c_S, not mu_hat theta_L - ...; and the evasion cost of a low-signal "
        "buyer is mu_hat c_S (mu_hat already carries q), not mu_hat q* c_S. With the printed "
        "branches f has no maximiser when theta_L > mu_hat theta_H (sup over p < theta_L not "
        "attained), so 'p(s_L) = argmax f = theta_L' does not follow from it",
        {
            **point,
            "printed f": str(f(g, q, p)),
            "expected utility (4.1)-(4.2)": str(_seller_after_low(g, q, p)),
            "mu_hat": str(posterior_after_low(g, q)),
        },
    )


@proposition(
    "thesis.ch4.thm6.proof_f.corrected",
    source=f"{S47}, proof of Theorem 6, the display of f(p); docs/errata.md, "
    "thesis.ch4.thm6.proof_f",
    statement="f(p) = p - mu_hat c_S if p <= theta_L and mu_hat p - mu_hat c_S if p in "
    "(theta_L, theta_H]; its maximiser is theta_L iff theta_L >= mu_hat theta_H (ties: both "
    "theta_L and theta_H maximise), else theta_H",
    perturb={"f": _printed_f},
)
def _thm6_proof_f_corrected(f: Callable[[PDGame, Any, Any], Any] = _corrected_f) -> Verdict:
    verdict = _f_display(f)
    if not verdict.holds:
        return verdict

    def argmax(game: str, q: str, p: str, price: str) -> bool:
        g, qq = GAMES[game], F(q)
        low, high = f(g, qq, g.theta_low), f(g, qq, g.theta_high)
        rule_low = g.theta_low >= posterior_after_low(g, qq) * g.theta_high
        best = max(low, high)
        return bool((low == best) == rule_low and f(g, qq, F(price)) <= best)

    points = _f_points()
    maximiser = on_points(
        argmax, points, "theta_L maximises f iff theta_L >= mu_hat theta_H", drawn=_F_DRAWN
    )
    if not maximiser.holds:
        return maximiser
    return checked(
        "the display equals the seller's expected utility after s_L from eqs. (4.1)-(4.2) "
        "(exact rationals), and theta_L maximises it iff theta_L >= mu_hat theta_H with no "
        "sampled price beating the better of theta_L and theta_H",
        len(points),
        drawn=_F_DRAWN,
    )

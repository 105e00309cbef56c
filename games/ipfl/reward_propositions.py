"""IP-FL's rank rewards (Eq. 13), a client's net token change and the ledger's conservation.

Khan et al., "IP-FL: Incentivized and Personalized Federated Learning" (arXiv 2304.07514 v4), §4.2,
Eq. 13 (the printed denominator mints or burns tokens, ``ipfl.eq13``) and Eq. 9-13 in Alg. 1's
order, against the ledger of :mod:`games.ipfl.tokens`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import sympy as sp
from numpy.typing import NDArray

from econ.propositions import (
    Kind,
    Verdict,
    checked,
    on_points,
    proposition,
    refuted,
)
from games.ipfl import (
    Ledger,
    collect,
    net_token_change_expr,
    rank_rewards,
    refund,
    refund_fraction,
    reward,
)
from games.ipfl.config import FloatArray
from games.ipfl.ledger_propositions import LEDGER_DRAWN, ledger_cases
from games.ipfl.propositions import PAPER


def _printed_eq13_denominator(n_perf: int, n_rand: int) -> float:
    """Eq. 13: N_r (N_r + 1)/2."""
    return n_rand * (n_rand + 1) / 2


def _ranked_denominator(n_perf: int, n_rand: int) -> float:
    """Eq. 13 corrected: n (n + 1)/2 with n = N_p + N_r ranked providers."""
    n = n_perf + n_rand
    return n * (n + 1) / 2


@proposition(
    "ipfl.eq13",
    source=f"{PAPER}, §4.2, Eq. 13 and the sentence after it ('beta normalizes token "
    "distribution based on provider ranks alpha')",
    statement="the provider of rank alpha in 1..N_p + N_r receives alpha tau_ar/(N_r (N_r + 1)/2)"
    ", which distributes the tokens available tau_ar",
    holds=False,
    perturb={"denominator": _ranked_denominator},
)
def _eq13_printed(
    denominator: Callable[[int, int], float] = _printed_eq13_denominator,
) -> Verdict:
    points = (
        {"n_perf": p, "n_rand": r, "pool": pool}
        for p, r, pool in itertools.product(range(0, 7), range(0, 7), (1.0, 7.0, 10.5))
    )
    return on_points(
        lambda n_perf, n_rand, pool: math.isclose(
            sum(a * pool / denominator(n_perf, n_rand) for a in range(1, n_perf + n_rand + 1)),
            pool,
            rel_tol=1e-12,
        ),
        points,
        "sum over ranks 1..N_p+N_r of alpha tau_ar/denominator = tau_ar",
        drawn="every (N_p, N_r) in {0..6} x {0..6} with pools 1, 7 and 10.5",
        hypothesis=lambda n_perf, n_rand, pool: n_rand >= 1,
    )


@proposition(
    "ipfl.eq13.corrected",
    source=f"{PAPER}, §4.2, Eq. 13 (the denominator N_r x (N_r + 1)/2) with beta = n(n + 1)/2, "
    "n the number of ranked providers; reading: sort(psi, Omega) ranks lexicographically, "
    "contribution psi first, worst first (the best provider gets rank n and the largest "
    "reward). Other readings of sort(psi, Omega): Omega first; best first, which would pay "
    "the best provider least; a rank of a combined score (psi x Omega, psi + Omega), which "
    "the text does not define. Ties in (psi, Omega) are not resolved by the text",
    statement="the provider of rank alpha in 1..n receives alpha tau_ar/(n(n + 1)/2); the "
    "rewards sum to tau_ar for every n, and games.ipfl.reward pays exactly these in "
    "(psi, Omega) order, ties broken by client id (the smaller id ranked higher), and empties "
    "the pool; over every order of tied providers the total is the same and a tied "
    "provider's reward ranges over its group's ranks (reported)",
    perturb={"denominator": lambda n: n * n / 2},
)
def _eq13_corrected(
    denominator: Callable[[Any], Any] = lambda n: n * (n + 1) / 2,
) -> Verdict:
    alpha, n, pool = sp.symbols("alpha n tau_ar", positive=True, integer=True)
    total = sp.summation(alpha * pool / denominator(n), (alpha, 1, n))
    residual = sp.simplify(total - pool)
    if residual != 0:
        return refuted(
            f"sum_(alpha=1..n) alpha tau_ar/denominator(n) - tau_ar = {residual}, not 0",
            {"n": 3, "pool": 1.0, "paid": float(total.subs({n: 3, pool: 1}))},
        )

    ties: list[tuple[int, float, float]] = []  # (providers tied, reward spread, pool)

    def holds(
        tokens: FloatArray,
        pools: FloatArray,
        cluster: int,
        chosen: NDArray[np.int64],
        price: float,
        **_: Any,
    ) -> bool:
        ledger, paid = collect(Ledger(tokens, pools), cluster, chosen, price)
        rng = np.random.default_rng(int(paid.sum()))
        psi = np.round(rng.normal(size=tokens.size), 1)
        omega = rng.integers(0, 3, tokens.size).astype(np.float64)
        after = reward(ledger, cluster, paid, psi, omega)
        order = sorted(paid.tolist(), key=lambda i: (psi[i], omega[i], -i))
        size, pot = len(order), float(ledger.pools[cluster])
        expected = ledger.tokens.copy()
        for rank, i in enumerate(order, start=1):
            expected[i] += rank * pot / float(denominator(size))
        # ties: every order of a tied group permutes its ranks; the total cannot change
        keys = [(psi[i], omega[i]) for i in order]
        for key in set(keys):
            ranks = [r for r, k in enumerate(keys, start=1) if k == key]
            if len(ranks) > 1:
                spread = (max(ranks) - min(ranks)) * pot / float(denominator(size))
                ties.append((len(ranks), spread, pot))
        return bool(
            np.allclose(after.tokens, expected, atol=1e-9)
            and np.allclose(
                rank_rewards(size, pot),
                [a * pot / float(denominator(size)) for a in range(1, size + 1)],
            )
            and after.pools[cluster] == 0.0
            and math.isclose(after.total, ledger.total, abs_tol=1e-9)
        )

    numeric = on_points(
        holds,
        ledger_cases(13, 60),
        "games.ipfl.reward pays alpha tau_ar/(n(n+1)/2) by (psi, Omega) rank and conserves tokens",
        drawn=LEDGER_DRAWN
        + " (seed 13); psi rounded to 0.1 so that ties occur, Omega in {0, 1, 2}",
    )
    if not numeric.holds:
        return numeric
    spread = max(ties, key=lambda t: t[1] / max(t[2], 1e-300), default=(0, 0.0, 1.0))
    tie_note = (
        f"ties in (psi, Omega): {len(ties)} tied groups of up to {max(t[0] for t in ties)} "
        "providers; over every order of a group its members' rewards are its ranks' rewards "
        f"permuted (the total unchanged), a member's reward ranging up to {spread[1]:.4g} "
        f"tokens of a pool of {spread[2]:.4g} ({spread[1] / max(spread[2], 1e-300):.0%})"
        if ties
        else "no ties in (psi, Omega) drawn"
    )
    return checked(
        "sympy: sum_(alpha=1..n) alpha tau_ar/(n(n+1)/2) simplifies to tau_ar for symbolic n; "
        f"{numeric.evidence}; {tie_note}",
        numeric.n_points or 1,
        drawn=numeric.drawn or LEDGER_DRAWN,
    )


def _net_closed_form(alpha: Any, n: Any, u: Any, p: Any) -> Any:
    """Net tokens of the rank-alpha provider in one cluster-round: (1-u) p (2 alpha/(n+1) - 1)."""
    return (1 - u) * p * (2 * alpha / (n + 1) - 1)


@proposition(
    "ipfl.ledger.net_change",
    source=f"{PAPER}, §4.2, Eq. 9-13 with the corrections ipfl.eq12.corrected and "
    "ipfl.eq13.corrected, in Alg. 1's order (payment, reimbursement, rewards)",
    statement="with n payers at price p and refund fraction u, the provider of rank alpha "
    "gains (1 - u) p (2 alpha/(n + 1) - 1) tokens in the round: these sum to 0, and only "
    "ranks alpha >= (n + 1)/2 gain",
    kind=Kind.DERIVED,
    perturb={"net": lambda alpha, n, u, p: (1 - u) * p * (2 * alpha / n - 1)},
)
def _net_change(net: Callable[..., Any] = _net_closed_form) -> Verdict:
    alpha, n, u, p = sp.symbols("alpha n u p", positive=True)
    for expr, label in (
        (net_token_change_expr() - net(alpha, n, u, p), "pay p, get u p back, earn the reward"),
        (sp.summation(net(alpha, n, u, p), (alpha, 1, n)), "sum over the ranks"),
    ):
        if sp.simplify(expr) != 0:
            return refuted(
                f"{label}: residual {sp.simplify(expr)}",
                {
                    "alpha": 1,
                    "n": 3,
                    "u": 0,
                    "p": 1,
                    "stated": float(net(1, 3, 0, 1)),
                    "ledger": float(net_token_change_expr().subs({alpha: 1, n: 3, u: 0, p: 1})),
                },
            )

    def holds(
        tokens: FloatArray,
        pools: FloatArray,
        cluster: int,
        chosen: NDArray[np.int64],
        price: float,
        **_: Any,
    ) -> bool:
        start = Ledger(tokens, np.zeros_like(pools))
        ledger, paid = collect(start, cluster, chosen, price)
        rng = np.random.default_rng(int(chosen.sum()))
        frac = float(rng.choice([0.0, 0.5, rng.uniform()]))
        ledger = refund(ledger, cluster, paid, frac)
        psi, omega = rng.normal(size=tokens.size), np.zeros(tokens.size)
        ledger = reward(ledger, cluster, paid, psi, omega)
        order = sorted(paid.tolist(), key=lambda i: (psi[i], omega[i], -i))
        change = ledger.tokens - tokens
        return all(
            math.isclose(change[i], float(net(rank, len(order), frac, price)), abs_tol=1e-9)
            for rank, i in enumerate(order, start=1)
        )

    numeric = on_points(
        holds,
        ledger_cases(14, 60),
        "each provider's balance change over collect, refund and reward = net(rank)",
        drawn=LEDGER_DRAWN + " (seed 14); empty pools at the start; refund fraction 0, 0.5 "
        "or uniform",
    )
    if not numeric.holds:
        return numeric
    return checked(
        "sympy: the closed form equals the ledger's pay/refund/reward expression and sums to 0 "
        f"for symbolic n; {numeric.evidence}",
        numeric.n_points or 1,
        drawn=numeric.drawn or LEDGER_DRAWN,
    )


def _ranked_reward(
    ledger: Ledger,
    cluster: int,
    payers: NDArray[np.int64],
    n_perf: int,
    psi: FloatArray,
    omega: FloatArray,
) -> Ledger:
    return reward(ledger, cluster, payers, psi, omega)


def _printed_eq13_reward(
    ledger: Ledger,
    cluster: int,
    payers: NDArray[np.int64],
    n_perf: int,
    psi: FloatArray,
    omega: FloatArray,
) -> Ledger:
    """Eq. 13 as printed: rank alpha gets alpha tau_ar/(N_r(N_r+1)/2), N_r the random picks."""
    n_rand = max(payers.size - n_perf, 1)
    order = sorted(payers.tolist(), key=lambda i: (psi[i], omega[i], -i))
    tokens, pools = ledger.tokens.copy(), ledger.pools.copy()
    pot = float(pools[cluster])
    for rank, i in enumerate(order, start=1):
        tokens[i] += rank * pot / (n_rand * (n_rand + 1) / 2)
    pools[cluster] = 0.0
    return Ledger(tokens, pools)


@proposition(
    "ipfl.ledger.conservation",
    source=f"{PAPER}, §4.2, Eq. 9-13 with ipfl.eq10's, ipfl.eq12.corrected's and "
    "ipfl.eq13.corrected's readings; Alg. 1 (one collection per cluster and round)",
    statement="over many rounds and clusters, collect, refund and reward conserve the tokens "
    "in circulation (balances plus pools) and keep every balance >= 0",
    kind=Kind.DERIVED,
    perturb={"reward_step": _printed_eq13_reward},
)
def _ledger_conservation(reward_step: Callable[..., Ledger] = _ranked_reward) -> Verdict:
    points = []
    for seed in range(40):
        rng = np.random.default_rng(seed)
        n, k = int(rng.integers(4, 20)), int(rng.integers(1, 4))
        price = float((1.0, 0.5, 3.0)[seed % 3])
        ledger = Ledger(rng.integers(0, 6, n).astype(np.float64) * price, np.zeros(k))
        start, lowest = ledger.total, float(ledger.tokens.min())
        for _ in range(int(rng.integers(3, 12))):
            for c in range(k):
                able = np.flatnonzero(ledger.tokens >= price)
                if able.size == 0:
                    continue
                chosen = rng.choice(able, int(rng.integers(1, able.size + 1)), replace=False)
                ledger, paid = collect(ledger, c, chosen, price)
                frac = refund_fraction(rng.uniform(0.1, 1), rng.uniform(0.1, 1), 0.5, 0.05)
                ledger = refund(ledger, c, paid, frac)
                n_perf = int(rng.integers(0, paid.size + 1))
                ledger = reward_step(
                    ledger, c, paid, n_perf, rng.normal(size=n), rng.integers(0, 5, n).astype(float)
                )
                lowest = min(lowest, float(ledger.tokens.min()), float(ledger.pools.min()))
        points.append({"seed": seed, "drift": abs(ledger.total - start), "lowest": lowest})
    return on_points(
        lambda seed, drift, lowest: drift < 1e-9 and lowest >= 0,
        points,
        "|total drift| < 1e-9 and every balance and pool >= 0 after every step",
        drawn="40 seeded runs (seeds 0-39): 4-19 clients with 0-5 times the price, 1-3 "
        "clusters, 3-11 rounds; each round and cluster a random nonempty set of the clients "
        "that can pay is collected, refunded by Eq. 11 (eta 0.5, gamma 0.05) and rewarded",
    )

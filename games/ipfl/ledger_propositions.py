"""IP-FL's token economy of §4.2, checkable: payments, pools, Util and refunds (Eq. 9-12).

Khan et al., "IP-FL: Incentivized and Personalized Federated Learning" (arXiv 2304.07514 v4), §4.2,
Eq. 9-12 against the ledger of :mod:`games.ipfl.tokens`; Eq. 12 as printed fails and is registered
corrected (``ipfl.eq12``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from numpy.typing import NDArray

from econ.propositions import (
    Verdict,
    on_points,
    proposition,
    refuted,
)
from games.ipfl import (
    Ledger,
    collect,
    refund,
    refund_fraction,
)
from games.ipfl.config import FloatArray
from games.ipfl.propositions import PAPER


def ledger_cases(seed: int, count: int) -> Iterator[dict[str, Any]]:
    """Random ledgers and one cluster's selection of payers who can all pay."""
    rng = np.random.default_rng(seed)
    for k in range(count):
        n, clusters = int(rng.integers(2, 16)), int(rng.integers(1, 4))
        price = float((1.0, 5.0, 0.5)[k % 3])
        tokens = rng.integers(0, 6, n) * price / 2 + (k % 2) * rng.random(n)
        tokens[rng.integers(n)] = price  # one client can pay exactly once
        pools = rng.integers(0, 4, clusters).astype(np.float64)
        able = np.flatnonzero(tokens >= price)
        if able.size == 0:
            tokens[0], able = price, np.array([0])
        chosen = rng.choice(able, int(rng.integers(1, able.size + 1)), replace=False)
        n_perf = int(rng.integers(0, chosen.size + 1))
        yield {
            "tokens": tokens,
            "pools": pools,
            "cluster": int(rng.integers(clusters)),
            "chosen": chosen,
            "n_perf": n_perf,
            "price": price,
        }


#: How :func:`ledger_cases` draws its ledgers (the ``drawn`` of the checks that use them).
LEDGER_DRAWN = (
    "seeded random ledgers: 2-15 clients with balances in multiples of price/2 (plus a "
    "fractional part in every other ledger, one client holding exactly the price), 1-3 "
    "clusters with pools of 0-3 tokens, price 0.5, 1 or 5; for one cluster 1..all clients "
    "that can pay are selected, the first N_p by performance, the rest at random"
)


@proposition(
    "ipfl.eq9",
    source=f"{PAPER}, §4.2 'Token Manager', Eq. 9; reading: the payers are the clients "
    "selected for the cluster (Alg. 1 'collects bid payments from all willing clients'). The "
    "other reading, every client that bids for the cluster pays ('each client i interested in "
    "a cluster places its bid'), fills the pool by the number of bidders times tau_p, which "
    "contradicts Eq. 10's (N_p + N_r) tau_p unless every bidder is selected",
    statement="each paying client's balance becomes tau_i = tau_i - tau_p (games.ipfl.collect); "
    "no other balance changes",
    perturb={"payment": lambda tok, price: tok - 2 * price},
)
def _eq9(payment: Callable[[float, float], float] = lambda tok, price: tok - price) -> Verdict:
    def holds(
        tokens: FloatArray,
        pools: FloatArray,
        cluster: int,
        chosen: NDArray[np.int64],
        price: float,
        **_: Any,
    ) -> bool:
        after, paid = collect(Ledger(tokens, pools), cluster, chosen, price)
        expected = tokens.copy()
        expected[chosen] = [payment(float(tokens[i]), price) for i in chosen]
        return set(paid.tolist()) == set(chosen.tolist()) and bool(
            np.allclose(after.tokens, expected, rtol=0, atol=1e-12)
        )

    return on_points(
        holds, ledger_cases(9, 60), "balances after collect = Eq. 9", drawn=LEDGER_DRAWN
    )


def _printed_pool_increase(n_perf: int, n_rand: int, price: float) -> float:
    """Eq. 10: (N_p + N_r) tau_p."""
    return (n_perf + n_rand) * price


@proposition(
    "ipfl.eq10",
    source=f"{PAPER}, §4.2, Eq. 10 ('N p' read as N_p); reading: one pool per cluster, filled "
    "by the N_p + N_r clients selected for it. The other reading, one 'overall pool' tau_ar "
    "for all clusters, would have Eq. 13 (for all k) pay that pool out once per cluster",
    statement="the pool grows by tau_ar = tau_ar + (N_p + N_r) tau_p, exactly what the payers "
    "of Eq. 9 lose (games.ipfl.collect)",
    perturb={"pool_increase": lambda n_perf, n_rand, price: n_rand * price},
)
def _eq10(
    pool_increase: Callable[[int, int, float], float] = _printed_pool_increase,
) -> Verdict:
    def holds(
        tokens: FloatArray,
        pools: FloatArray,
        cluster: int,
        chosen: NDArray[np.int64],
        n_perf: int,
        price: float,
    ) -> bool:
        after, _ = collect(Ledger(tokens, pools), cluster, chosen, price)
        grown = after.pools[cluster] - pools[cluster]
        lost = tokens.sum() - after.tokens.sum()
        stated = pool_increase(n_perf, chosen.size - n_perf, price)
        return math.isclose(grown, stated, abs_tol=1e-9) and math.isclose(
            lost, stated, abs_tol=1e-9
        )

    return on_points(
        holds,
        ledger_cases(10, 60),
        "pool increase = (N_p + N_r) tau_p = tokens paid",
        drawn=LEDGER_DRAWN,
    )


def _printed_util(acc: float, acc_max: float, eta: float, gamma: float) -> float:
    """Eq. 11: eta (gamma - min(gamma, max(0, (Acc_kr - Acc_kmax)/Acc_kmax)))/gamma."""
    return eta * (gamma - min(gamma, max(0.0, (acc - acc_max) / acc_max))) / gamma


def _util_points() -> Iterator[dict[str, float]]:
    rng = np.random.default_rng(11)
    for eta, gamma in itertools.product((0.0, 0.5, 1.0), (0.01, 0.05, 1.0)):
        for rel in (-0.5, -1e-9, 0.0, 0.5 * gamma, gamma, 2 * gamma):
            yield {"acc": 0.6 * (1 + rel), "acc_max": 0.6, "eta": eta, "gamma": gamma}
    for _ in range(60):
        yield {
            "acc": float(rng.uniform(0, 1)),
            "acc_max": float(rng.uniform(0.05, 1)),
            "eta": float(rng.uniform(0, 1)),
            "gamma": float(rng.uniform(0.001, 1)),
        }


@proposition(
    "ipfl.eq11",
    source=f"{PAPER}, §4.2, Eq. 11; reading: Acc_kmax is the best accuracy of the rounds "
    "before r ('the maximum cluster-level accuracy achieved until this round'). The other "
    "reading, round r included, has Acc_kr <= Acc_kmax and so Util = eta in every round, "
    "whatever the improvement; Acc_kmax = 0 (no accuracy yet) leaves Eq. 11 undefined",
    statement="the refund fraction is Util = eta (gamma - min(gamma, max(0, (Acc_kr - Acc_kmax)"
    "/Acc_kmax)))/gamma, eta in [0, 1], gamma in (0, 1], Acc_kmax > 0 "
    "(games.ipfl.refund_fraction)",
    perturb={
        "util": lambda acc, acc_max, eta, gamma: eta * (gamma - (acc - acc_max) / acc_max) / gamma
    },
)
def _eq11(util: Callable[[float, float, float, float], float] = _printed_util) -> Verdict:
    return on_points(
        lambda acc, acc_max, eta, gamma: math.isclose(
            refund_fraction(acc, acc_max, eta, gamma), util(acc, acc_max, eta, gamma), abs_tol=1e-12
        ),
        _util_points(),
        "refund_fraction = Eq. 11",
        drawn="a grid of eta in {0, 0.5, 1} x gamma in {0.01, 0.05, 1} x relative change "
        "-0.5, -1e-9, 0, gamma/2, gamma, 2 gamma, then seeded (seed 11) 60 uniform draws of "
        "(Acc_kr, Acc_kmax, eta, gamma)",
    )


def _printed_reimbursement(
    tokens: FloatArray, pool: float, util: float, payers: NDArray[np.int64]
) -> tuple[FloatArray, float]:
    """Eq. 12 as printed, applied to every client's balance.

    tau_i = tau_i - tau_ar Util for every i in [N]; the pool is not
    touched.
    """
    return tokens - pool * util, pool


def _refund_to_payers(
    tokens: FloatArray, pool: float, util: float, payers: NDArray[np.int64]
) -> tuple[FloatArray, float]:
    """Eq. 12 corrected: the payers share Util tau_ar equally; the pool keeps the rest."""
    out = tokens.copy()
    out[payers] += util * pool / payers.size
    return out, pool * (1 - util)


def _eq12_check(
    update: Callable[..., tuple[FloatArray, float]],
    util_max: Callable[[float, float], float],
) -> Verdict:
    rng = np.random.default_rng(12)

    def cases() -> Iterator[dict[str, Any]]:
        # three clients paid 1 token each into an empty pool; no improvement: Util = eta
        yield {
            "tokens": np.full(3, 1.0),
            "pools": np.array([3.0]),
            "cluster": 0,
            "payers": np.arange(3),
            "util": refund_fraction(0.6, 0.6, 0.5, 0.05),
            "eta": 0.5,
            "gamma": 0.05,
        }
        for case in ledger_cases(12, 60):
            ledger, paid = collect(
                Ledger(case["tokens"], case["pools"]),
                case["cluster"],
                case["chosen"],
                case["price"],
            )
            eta, gamma = float(rng.choice([0.5, 1.0, rng.uniform()])), float(rng.uniform(0.01, 1))
            acc_max = float(rng.uniform(0.1, 0.9))
            acc = acc_max * float(rng.choice([0.9, 1.0, 1 + gamma / 2, 1 + 2 * gamma]))
            yield {
                "tokens": ledger.tokens,
                "pools": ledger.pools,
                "cluster": case["cluster"],
                "payers": paid,
                "util": refund_fraction(acc, acc_max, eta, gamma),
                "eta": eta,
                "gamma": gamma,
            }

    def failures(
        tokens: FloatArray,
        pools: FloatArray,
        cluster: int,
        payers: NDArray[np.int64],
        util: float,
        eta: float,
        gamma: float,
    ) -> list[str]:
        new_tokens, new_pool = update(tokens, float(pools[cluster]), util, payers)
        ledger = refund(Ledger(tokens, pools), cluster, payers, util)
        out = []
        if not 0.0 <= util <= util_max(eta, gamma) + 1e-12:
            out.append(f"Eq. 11 gives Util = {util:.4g} outside the stated range")
        before = tokens.sum() + pools[cluster]
        if not math.isclose(new_tokens.sum() + new_pool, before, abs_tol=1e-9):
            out.append(
                f"tokens in circulation change by {new_tokens.sum() + new_pool - before:.4g}"
            )
        if np.any(new_tokens[payers] < tokens[payers] - 1e-12):
            out.append("the consumers lose tokens")
        if not (
            np.allclose(ledger.tokens, new_tokens, atol=1e-9)
            and math.isclose(float(ledger.pools[cluster]), new_pool, abs_tol=1e-9)
        ):
            out.append("games.ipfl.refund does otherwise")
        return out

    what = (
        "Util in the stated range; the reimbursement conserves tokens, no consumer loses, and "
        "games.ipfl.refund does the same"
    )
    verdict = on_points(
        lambda **point: not failures(**point),
        cases(),
        what,
        drawn="three clients that paid 1 token each, no improvement, eta 0.5, gamma 0.05; then "
        "seeded (seed 12) 60 random ledgers after one cluster's collection (see "
        "ipfl.eq9), eta 0.5, 1 or uniform, gamma uniform in [0.01, 1], Acc_kr = Acc_kmax times "
        "0.9, 1, 1 + gamma/2 or 1 + 2 gamma",
    )
    if verdict.holds or verdict.counterexample is None:
        return verdict
    point = dict(verdict.counterexample)
    args: dict[str, Any] = {
        k: np.asarray(v) if isinstance(v, list) else v for k, v in point.items()
    }
    return refuted(f"fails: {'; '.join(failures(**args))}", point)


@proposition(
    "ipfl.eq12",
    source=f"{PAPER}, §4.2, Eq. 12 and the sentence before Eq. 11 ('reimburses consumer clients')",
    statement="the reimbursement tau_i = tau_i - tau_ar x Util, Util in [0, gamma], for all "
    "i in [N], pays the consumers back out of the pool tau_ar (tokens are conserved and no "
    "consumer loses)",
    holds=False,
    perturb={"update": _refund_to_payers, "util_max": lambda eta, gamma: eta},
)
def _eq12_printed(
    update: Callable[..., tuple[FloatArray, float]] = _printed_reimbursement,
    util_max: Callable[[float, float], float] = lambda eta, gamma: gamma,
) -> Verdict:
    return _eq12_check(update, util_max)


@proposition(
    "ipfl.eq12.corrected",
    source=f"{PAPER}, §4.2, Eq. 12 (tau_i = tau_i - tau_ar x Util | Util in [0, gamma], for "
    "all i in [N]) corrected: sign, payees and range; reading: the consumers of cluster k are "
    "its payers of round r, refunded equally (in proportion to their payments: the same, "
    "every payer pays tau_p). Other readings: every client of [N] shares the refund, as "
    "Eq. 12's 'for all i' says, which pays clients that did not pay; or each payer gets back "
    "Util tau_p, its own payment times Util, which equals the equal share only while the pool "
    "holds just this round's payments",
    statement="tau_i = tau_i + Util tau_ar/|S_k| for the payers i in S_k and tau_ar = (1 - Util) "
    "tau_ar, with Util in [0, eta] (Eq. 11's range): tokens are conserved "
    "(games.ipfl.refund)",
    perturb={
        "update": lambda tokens, pool, util, payers: _refund_to_payers(
            tokens, pool * payers.size, util, payers
        )
    },
)
def _eq12_corrected(
    update: Callable[..., tuple[FloatArray, float]] = _refund_to_payers,
    util_max: Callable[[float, float], float] = lambda eta, gamma: eta,
) -> Verdict:
    return _eq12_check(update, util_max)

"""IP-FL's scheduler: how many clients each cluster selects, and which.

Khan et al., "IP-FL: Incentivized and Personalized Federated Learning" (arXiv 2304.07514 v4), §4.3
and Alg. 1 (``SelectClients``): performance and random slots, the first round's bootstrap selection,
and the reference code's schedule of them (:func:`code_slots`).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from econ.validation import non_negative, positive_int
from games.ipfl.config import IntArray, IPFLConfig


def n_perf_default(n_clients: int, n_clusters: int, share: float = 0.20) -> int:
    r"""Performance slots per cluster, :math:`N_p = \lceil share \cdot N / K \rceil`.

    The paper gives no value; ``share`` is ours.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §4.3 (:math:`N_p` is left
    adjustable there).

    Examples
    --------
    >>> n_perf_default(100, 4)
    5
    """
    return math.ceil(
        share * positive_int("n_clients", n_clients) / positive_int("n_clusters", n_clusters)
    )


def n_rand_schedule(
    n_clients: int, n_clusters: int, n_unexplored: int, high: float = 0.20, low: float = 0.05
) -> tuple[int, int]:
    r"""Exploration budget (§4.3, following Oort), total and per cluster.

    .. math::  R_{tot} = \max(\lceil low\,N \rceil, \min(\lceil high\,N \rceil,
               |\text{unexplored}|)), \qquad N_r = \lceil R_{tot} / K \rceil.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §4.3 (20% of the clients,
    floor 5%, following Oort).

    Examples
    --------
    >>> n_rand_schedule(100, 4, 50), n_rand_schedule(100, 4, 0)
    ((20, 5), (5, 2))
    """
    n_clients = positive_int("n_clients", n_clients)
    n_clusters = positive_int("n_clusters", n_clusters)
    n_unexplored = int(non_negative("n_unexplored", n_unexplored))
    total = max(math.ceil(low * n_clients), min(math.ceil(high * n_clients), n_unexplored))
    return total, math.ceil(total / n_clusters)


def code_slots(round_index: int, config: IPFLConfig) -> tuple[int, int]:
    """The RC's fixed slots per tier: ``(code_perf, code_rand)`` performance and random picks.

    From round ``code_shift_round`` on, one slot moves from random to performance (5 + 2 -> 6 + 1 in
    the ``iter_avg`` config).

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §4.3 (as the authors'
    reference code of it schedules :math:`N_p` and :math:`N_r`).

    Examples
    --------
    >>> code_slots(0, IPFLConfig()), code_slots(100, IPFLConfig())
    ((5, 2), (6, 1))
    """
    round_index = int(non_negative("round_index", round_index))
    if round_index >= config.code_shift_round and config.code_rand > 0:
        return config.code_perf + 1, config.code_rand - 1
    return config.code_perf, config.code_rand


def bootstrap_select(
    n_clients: int, n_clusters: int, per_cluster: int, rng: np.random.Generator
) -> list[IntArray]:
    """Round 0: ``per_cluster`` random clients for each cluster, disjoint while possible.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, Alg. 1 (the first round);
    §4.3.
    """
    order = rng.permutation(positive_int("n_clients", n_clients))
    out = []
    for k in range(positive_int("n_clusters", n_clusters)):
        picks = np.take(order, np.arange(k * per_cluster, (k + 1) * per_cluster) % n_clients)
        out.append(np.unique(picks))
    return out


def select_clients(
    bids: ArrayLike,
    psi: ArrayLike,
    omega: ArrayLike,
    tokens: ArrayLike,
    config: IPFLConfig,
    n_perf: int,
    n_rand: int,
    rng: np.random.Generator,
    *,
    available: ArrayLike | None = None,
    ascending: ArrayLike | None = None,
) -> list[IntArray]:
    r"""Alg. 1 ``SelectClients``: per cluster, the top bidders plus random explorers.

    Per cluster, the top ``n_perf`` bidders by :math:`(\psi_{ki}, \Omega_{ki})` descending (then
    id), plus ``n_rand`` random explorers drawn from the available clients not yet chosen for the
    cluster; only clients that can still pay are eligible, and a client pays once per cluster it
    joins.

    The first ``n_perf`` entries of each returned array are the performance picks, in rank
    order. ``code_compat``: extras from the bidders only, all bidders taken when they fit,
    random clients for a cluster nobody bids for, and ascending order for clusters whose
    entry of ``ascending`` is true (last improvement <= 0).

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, Alg. 1, function
    ``SelectClients``; §4.3.
    """
    bids = np.atleast_2d(np.asarray(bids, dtype=bool))
    n, k = bids.shape
    psi, omega = np.asarray(psi, dtype=np.float64), np.asarray(omega, dtype=np.float64)
    budget = np.asarray(tokens, dtype=np.float64).reshape(-1).copy()
    avail = np.ones(n, dtype=bool) if available is None else np.asarray(available, dtype=bool)
    asc = np.zeros(k, dtype=bool) if ascending is None else np.asarray(ascending, dtype=bool)
    out: list[IntArray] = []
    for c in range(k):
        can_pay = avail & (budget >= config.price)
        bidders = np.flatnonzero(bids[:, c] & can_pay)
        sign = 1.0 if (config.code_compat and asc[c]) else -1.0
        ranked = sorted(bidders.tolist(), key=lambda i: (sign * psi[c, i], sign * omega[c, i], i))
        if config.code_compat and len(ranked) <= n_perf + n_rand:
            chosen = list(ranked)
            if not chosen:
                pool = np.flatnonzero(can_pay)
                chosen = rng.choice(pool, min(n_perf + n_rand, pool.size), replace=False).tolist()
        else:
            chosen = ranked[:n_perf]
            source = np.array(ranked[n_perf:]) if config.code_compat else np.flatnonzero(can_pay)
            rest = np.setdiff1d(source, chosen) if source.size else source
            if rest.size:
                chosen += rng.choice(rest, min(n_rand, rest.size), replace=False).tolist()
        picked = np.array(chosen, dtype=np.int64)
        budget[picked] -= config.price
        out.append(picked)
    return out

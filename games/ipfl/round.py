"""One round of IP-FL's economy around training: :func:`open_round` and :func:`close_round`.

Opening a round collects the price from the selected clients (:class:`Opening`); closing it refunds
and rewards them from the measured accuracies; :class:`TokenState` carries the balances from round
to round (Khan et al., "IP-FL: Incentivized and Personalized Federated Learning" (arXiv 2304.07514
v4), §4.2, Eq. 9-13).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from econ.validation import non_negative, positive_int
from games.ipfl.config import BoolArray, FloatArray, IntArray, IPFLConfig
from games.ipfl.preferences import preference_bids
from games.ipfl.scheduler import (
    bootstrap_select,
    code_slots,
    n_perf_default,
    n_rand_schedule,
    select_clients,
)
from games.ipfl.tokens import Ledger, RefundTracker, collect, settle_cluster


@dataclass(frozen=True, slots=True)
class TokenState:
    """Everything the token economy carries from round to round (Alg. 1).

    ``ledger`` the balances and pools; ``tracker`` each cluster's ``Acc_max`` (Eq. 11);
    ``psi`` the latest contribution of each client to each cluster and ``omega`` how often it
    took part (the selection keys of Alg. 1, ``(K, N)``); ``explored`` which clients trained at
    least once (§4.3); ``improved`` whether each cluster's last accuracy beat its ``Acc_max``.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, Alg. 1; §4.2, Eq. 11;
    §4.3.
    """

    ledger: Ledger
    tracker: RefundTracker
    psi: FloatArray
    omega: FloatArray
    explored: BoolArray
    improved: BoolArray

    @classmethod
    def start(cls, n_clients: int, n_clusters: int, config: IPFLConfig) -> TokenState:
        """Round 0: every client holds ``tok_init``, no contribution is known.

        References
        ----------
        Khan et al., IP-FL: Incentivized and Personalized Federated Learning, Alg. 1; §4.2 and App.
        C (equal starting balances).
        """
        n, k = positive_int("n_clients", n_clients), positive_int("n_clusters", n_clusters)
        return cls(
            Ledger.start(n, k, config.tok_init),
            RefundTracker.start(k),
            np.zeros((k, n)),
            np.zeros((k, n)),
            np.zeros(n, dtype=bool),
            np.ones(k, dtype=bool),
        )


@dataclass(frozen=True, slots=True)
class Opening:
    """The first half of a round (Alg. 1, lines 1-9): bids, selection, payment.

    ``payers[c]`` are the clients that train for cluster ``c`` (in a paid round those that
    paid); ``state`` carries the ledger after the payments.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, Alg. 1, lines 1-9.
    """

    round_index: int
    paid: bool
    bids: BoolArray
    payers: tuple[IntArray, ...]
    state: TokenState

    def participations(self) -> tuple[IntArray, IntArray]:
        """Every (cluster, client) pair that trains this round, as two flat arrays in cluster order.

        ``clusters[j]`` is the cluster client ``clients[j]`` trains for.

        References
        ----------
        Khan et al., IP-FL: Incentivized and Personalized Federated Learning, Alg. 1, lines 1-9
        (the selected clients of each cluster).
        """
        clusters = np.concatenate([np.full(len(p), c) for c, p in enumerate(self.payers)])
        return clusters.astype(np.int64), np.concatenate(self.payers).astype(np.int64)

    def by_cluster(self) -> Iterator[tuple[int, IntArray, IntArray]]:
        """``(cluster, rows, members)`` for every cluster that trains.

        ``rows`` index the arrays of :meth:`participations`, ``members`` are the clients at those
        rows.
        """
        clusters, clients = self.participations()
        for c in range(len(self.payers)):
            rows = np.flatnonzero(clusters == c)
            if rows.size:
                yield c, rows, clients[rows]


def open_round(
    state: TokenState,
    round_index: int,
    config: IPFLConfig,
    rng: np.random.Generator,
    *,
    scores: ArrayLike | None = None,
    available: ArrayLike | None = None,
    groups: Sequence[ArrayLike] | None = None,
) -> Opening:
    r"""Bids, selection and payment of round ``round_index`` (Alg. 1 and 2, Eq. 9-10).

    Round 0 is free: ``groups`` (a cold start's clusters) or, without them, a bootstrap draw
    of :math:`N_p + N_r` available clients per cluster. Later rounds are paid: each client
    bids from its ``scores`` (the ``(N, K)`` accuracies of the cluster models on its
    validation data, Alg. 2), :func:`select_clients` ranks the bidders by
    :math:`(\psi, \Omega)` and adds explorers, and every selected client pays ``price``
    into its cluster's pool (:func:`collect`). ``available`` marks the clients that may be
    scheduled (the never-scheduled clients of §1 are not). ``rng`` is drawn from in this
    order: bids, selection (or the bootstrap).

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, Alg. 1 and Alg. 2; §4.2,
    Eq. 9-10; §4.3.
    """
    n, k = state.psi.shape[1], state.psi.shape[0]
    r = int(non_negative("round_index", round_index))
    avail = np.ones(n, dtype=bool) if available is None else np.asarray(available, dtype=bool)
    if config.code_compat:
        n_perf, n_rand = code_slots(r, config)
    else:
        n_perf = n_perf_default(n, k, config.perf_share)
        _, n_rand = n_rand_schedule(
            n, k, int((~state.explored).sum()), config.rand_high, config.rand_low
        )
    ledger = state.ledger
    if r == 0:
        bids = np.zeros((n, k), dtype=bool)
        if groups is not None:
            payers = [np.asarray(g, dtype=np.int64).reshape(-1) for g in groups]
        else:
            seen = np.flatnonzero(avail)
            payers = [seen[b] for b in bootstrap_select(seen.size, k, n_perf + n_rand, rng)]
    else:
        if scores is None:
            raise ValueError(f"round {r} is paid: the clients' scores are needed for their bids")
        bids = preference_bids(scores, ledger.tokens, config, rng)
        selected = select_clients(
            bids, state.psi, state.omega, ledger.tokens, config, n_perf, n_rand, rng,
            available=avail, ascending=~state.improved,
        )  # fmt: skip
        payers = []
        for c in range(k):
            ledger, paid = collect(
                ledger, c, selected[c], config.price, stale_payer=config.code_bugs
            )
            payers.append(selected[c] if config.code_bugs else paid)
    explored = state.explored.copy()
    for p in payers:
        explored[p] = True
    new_state = TokenState(ledger, state.tracker, state.psi, state.omega, explored, state.improved)
    return Opening(r, r > 0, bids, tuple(payers), new_state)


def close_round(
    opening: Opening,
    accuracy: Mapping[int, float],
    contributions: Mapping[int, ArrayLike],
    config: IPFLConfig,
) -> tuple[TokenState, FloatArray]:
    """The second half of a round (Alg. 1, lines 10-16): profiler, refund, rewards.

    For every cluster that trained, ``accuracy[c]`` is its aggregated model's validation
    accuracy and ``contributions[c]`` the first-order Shapley values of its payers, in the
    order of ``opening.payers[c]``. The contributions and participation counts are recorded;
    in a paid round :func:`settle_cluster` refunds (Eq. 11-12) and rewards (Eq. 13) from the
    cluster's pool, in cluster order; in round 0 only ``Acc_max`` is set. With ``code_bugs`` the
    rewards of the later clusters stop once a pool is found empty. Returns the new state and
    each cluster's refund fraction.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, Alg. 1, lines 10-16;
    §4.1; §4.2, Eq. 11-13.
    """
    s = opening.state
    k = s.psi.shape[0]
    psi, omega, improved = s.psi.copy(), s.omega.copy(), s.improved.copy()
    ledger, tracker = s.ledger, s.tracker
    refunds = np.zeros(k)
    halted = False
    for c, members in enumerate(opening.payers):
        if members.size == 0:
            continue
        if c not in accuracy or c not in contributions:
            raise ValueError(f"cluster {c} trained but has no accuracy or contributions")
        values = np.asarray(contributions[c], dtype=np.float64).reshape(-1)
        if values.size != members.size:
            raise ValueError(f"cluster {c}: {values.size} contributions for {members.size} payers")
        psi[c, members] = values
        omega[c, members] += 1
        acc_c = float(accuracy[c])
        best = tracker.acc_max[c]
        improved[c] = best is None or acc_c > best
        if opening.paid:
            ledger, tracker, refunds[c], empty = settle_cluster(
                ledger, tracker, c, members, acc_c, psi[c], omega[c], config,
                registered=np.flatnonzero(omega[c] > 0), rewards=not halted,
            )  # fmt: skip
            halted |= config.code_bugs and empty
        else:
            tracker = tracker.update(c, acc_c, config)
    return TokenState(ledger, tracker, psi, omega, s.explored, improved), refunds

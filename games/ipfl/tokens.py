"""IP-FL's token economy: the ledger, collection, refunds, rank rewards and a cluster's settlement.

Khan et al., "IP-FL: Incentivized and Personalized Federated Learning" (arXiv 2304.07514 v4), §4.2,
Eq. 9-13, with the readings that make the ledger conserve tokens exactly (``docs/errata.md``,
``ipfl.eq12`` and ``ipfl.eq13``), and the closed form of a client's net token change
(:func:`net_token_change_expr`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike

from econ.outputs import scalar_or_array
from econ.validation import in_interval, non_negative, positive, positive_int
from games.ipfl.config import FloatArray, IntArray, IPFLConfig


@dataclass(frozen=True, slots=True)
class Ledger:
    r"""Token balances of the clients and the pools of the clusters (immutable).

    Invariant (``ipfl.ledger.conservation``): :math:`\sum_i tok_i + \sum_k pool_k` is
    the same after every operation, and no balance or pool is ever negative (unless the RC
    payment bug is on).

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §4.2, Eq. 9-13 (the token
    balances and pools); conservation derived here, registered as ``ipfl.ledger.conservation``
    (docs/errata.md, ``ipfl.eq12``, ``ipfl.eq13``).
    """

    tokens: FloatArray
    pools: FloatArray

    def __post_init__(self) -> None:
        """Store the balances and the pools as read-only float arrays."""
        tokens = np.array(self.tokens, dtype=np.float64).reshape(-1)
        pools = np.array(self.pools, dtype=np.float64).reshape(-1)
        tokens.setflags(write=False)
        pools.setflags(write=False)
        object.__setattr__(self, "tokens", tokens)
        object.__setattr__(self, "pools", pools)

    @classmethod
    def start(cls, n_clients: int, n_clusters: int, tok_init: float) -> Ledger:
        """Every client holds ``tok_init``; every pool is empty.

        References
        ----------
        Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §4.2 and App. C
        (equal starting balances).
        """
        n_clients = positive_int("n_clients", n_clients)
        n_clusters = positive_int("n_clusters", n_clusters)
        return cls(
            np.full(n_clients, float(non_negative("tok_init", tok_init))), np.zeros(n_clusters)
        )

    @property
    def total(self) -> float:
        """Tokens in circulation (balances plus pools).

        References
        ----------
        Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §4.2, Eq. 9-13;
        registered as ``ipfl.ledger.conservation``.
        """
        return float(self.tokens.sum() + self.pools.sum())

    def _with(self, tokens: FloatArray, pools: FloatArray) -> Ledger:
        return Ledger(tokens, pools)


def _transfer(amount: float, integer: bool) -> float:
    return float(math.floor(amount + 1e-9)) if integer else float(amount)


def collect(
    ledger: Ledger, cluster: int, clients: ArrayLike, price: float, *, stale_payer: bool = False
) -> tuple[Ledger, IntArray]:
    r"""Eq. 9-10: every listed client that can pay moves ``price`` into ``pool[cluster]``.

    .. math::  \tau_i \leftarrow \tau_i - \tau_p, \qquad
               \tau_{a,k} \leftarrow \tau_{a,k} + \tau_p

    A client with fewer than ``price`` tokens is not charged. Returns the new ledger
    and the clients that paid. ``stale_payer`` reproduces an RC bug: the last listed
    client pays for everyone (its balance may go negative), as the RC's payment loop does.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §4.2, Eq. 9-10; Alg. 1.
    """
    clients = np.asarray(clients, dtype=np.int64).reshape(-1)
    price = float(positive("price", price))
    tokens, pools = ledger.tokens.copy(), ledger.pools.copy()
    if stale_payer and clients.size:
        tokens[clients[-1]] -= price * clients.size
        pools[cluster] += price * clients.size
        return ledger._with(tokens, pools), clients
    paid = []
    for i in clients:
        if tokens[i] >= price:
            tokens[i] -= price
            pools[cluster] += price
            paid.append(int(i))
    return ledger._with(tokens, pools), np.array(paid, dtype=np.int64)


def refund_fraction(acc: float, acc_max: float, eta_tok: float, gamma_acc: float) -> float:
    r"""Eq. 11, the share of the pool returned to the payers ("utility").

    .. math::

        u_k = \eta\, \frac{\gamma - \min(\gamma, \max(0, \delta_k))}{\gamma},
        \qquad \delta_k = \frac{Acc_{k,r} - Acc_{k,\max}}{Acc_{k,\max}}.

    :math:`u_k = \eta` when the cluster model did not improve on its best, 0 when it
    improved by at least :math:`\gamma` (relative), linear in between. Its range is
    :math:`[0, \eta]`, not the "[0, γ]" printed with Eq. 12 (``docs/errata.md``,
    ``ipfl.eq12``).

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §4.2, Eq. 11 (range as
    corrected in docs/errata.md, ``ipfl.eq12``).

    Examples
    --------
    >>> refund_fraction(0.5, 0.5, 0.5, 0.05)
    0.5
    >>> round(refund_fraction(0.51, 0.5, 0.5, 0.05), 6)
    0.3
    >>> refund_fraction(0.6, 0.5, 0.5, 0.05)
    0.0
    """
    acc_max = float(positive("acc_max", acc_max))
    eta_tok = float(in_interval("eta_tok", eta_tok, 0.0, 1.0))
    gamma_acc = float(in_interval("gamma_acc", gamma_acc, 0.0, 1.0, low_open=True))
    delta = (float(acc) - acc_max) / acc_max
    return eta_tok * (gamma_acc - min(gamma_acc, max(0.0, delta))) / gamma_acc


def code_refund_fraction(improved: bool, pool: float, n_parties: int) -> float:
    """RC refund: 1 without improvement, else 0.

    Overwritten to ``n_parties / pool`` whenever the pool holds more than ``n_parties`` tokens.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §4.2, Eq. 11 (as the
    authors' reference code of it implements it).

    Examples
    --------
    >>> code_refund_fraction(False, 3.0, 5), code_refund_fraction(True, 3.0, 5)
    (1.0, 0.0)
    >>> code_refund_fraction(True, 10.0, 5)
    0.5
    """
    if pool > n_parties:
        return n_parties / pool
    return 0.0 if improved else 1.0


def refund(
    ledger: Ledger, cluster: int, payers: ArrayLike, fraction: float, *, integer: bool = False
) -> Ledger:
    r"""Eq. 12 (corrected): ``fraction`` of ``pool[cluster]`` goes back to the payers equally.

    Under ``code_compat`` the driver passes every client ever associated with the tier.

    .. math::  \tau_i \leftarrow \tau_i + \frac{u_k\, \tau_{a,k}}{|S_k|},\ i \in S_k;
               \qquad \tau_{a,k} \leftarrow \tau_{a,k} - u_k \tau_{a,k}

    With ``integer`` each share is floored and the remainder stays in the pool.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §4.2, Eq. 12 (corrected:
    docs/errata.md, ``ipfl.eq12``).
    """
    payers = np.asarray(payers, dtype=np.int64).reshape(-1)
    fraction = float(in_interval("fraction", fraction, 0.0, 1.0))
    if payers.size == 0 or fraction == 0.0:
        return ledger
    tokens, pools = ledger.tokens.copy(), ledger.pools.copy()
    share = _transfer(fraction * pools[cluster] / payers.size, integer)
    share = min(share, pools[cluster] / payers.size)
    for i in payers:
        tokens[i] += share
    pools[cluster] -= share * payers.size
    pools[cluster] = max(pools[cluster], 0.0)
    return ledger._with(tokens, pools)


def rank_rewards(n: int, pool: float) -> FloatArray:
    r"""Eq. 13 (corrected): reward of rank :math:`\alpha = 1..n` (1 = worst contributor).

    .. math::  r_\alpha = \frac{\alpha\, \tau_{a,k}}{n(n+1)/2}, \qquad \sum_\alpha r_\alpha = \tau_{a,k}.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §4.2, Eq. 13 (corrected:
    docs/errata.md, ``ipfl.eq13``).

    Examples
    --------
    >>> rank_rewards(3, 6.0).tolist()
    [1.0, 2.0, 3.0]
    """
    n = positive_int("n", n)
    return np.arange(1, n + 1, dtype=np.float64) * float(pool) / (n * (n + 1) / 2)


def literal_reward_total(n_perf: int, n_rand: int, pool: float) -> float:
    """What the printed Eq. 13 pays out.

    Ranks :math:`1..N_p+N_r` over the denominator :math:`N_r(N_r+1)/2`. Differs from ``pool``
    whenever :math:`N_p > 0` (``docs/errata.md``, ``ipfl.eq13``).

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §4.2, Eq. 13 as printed
    (docs/errata.md, ``ipfl.eq13``).

    Examples
    --------
    >>> literal_reward_total(2, 1, 6.0)
    36.0
    >>> literal_reward_total(0, 3, 6.0)
    6.0
    """
    n = positive_int("n_perf + n_rand", n_perf + n_rand)
    n_rand = positive_int("n_rand", n_rand)
    return float(np.arange(1, n + 1).sum() * pool / (n_rand * (n_rand + 1) / 2))


def _lex_order(providers: IntArray, psi: FloatArray, omega: FloatArray) -> IntArray:
    """Providers sorted worst first by (psi, omega, -id): the best ends last."""
    keys = sorted(providers.tolist(), key=lambda i: (psi[i], omega[i], -i))
    return np.array(keys, dtype=np.int64)


def reward(
    ledger: Ledger,
    cluster: int,
    providers: ArrayLike,
    psi: ArrayLike,
    omega: ArrayLike,
    *,
    integer: bool = False,
) -> Ledger:
    r"""Eq. 13 (``rank_lex``): the pool goes to the providers by rank of :math:`(\psi, \Omega)`.

    ``psi`` and ``omega`` are indexed by client id. Ties break by participation, then by the
    smaller id. With ``integer`` each reward is floored; the remainder stays in the pool.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §4.2, Eq. 13 (corrected:
    docs/errata.md, ``ipfl.eq13``); Alg. 1.
    """
    providers = np.asarray(providers, dtype=np.int64).reshape(-1)
    if providers.size == 0:
        return ledger
    psi, omega = np.asarray(psi, dtype=np.float64), np.asarray(omega, dtype=np.float64)
    order = _lex_order(providers, psi, omega)
    tokens, pools = ledger.tokens.copy(), ledger.pools.copy()
    pays = rank_rewards(order.size, pools[cluster])
    for i, amount in zip(order, pays, strict=True):
        paid = _transfer(amount, integer)
        tokens[i] += paid
        pools[cluster] -= paid
    pools[cluster] = 0.0 if not integer else max(pools[cluster], 0.0)
    return ledger._with(tokens, pools)


def code_split_rewards(
    ledger: Ledger,
    cluster: int,
    providers: ArrayLike,
    psi: ArrayLike,
    registered: ArrayLike,
    omega: ArrayLike,
    *,
    improved: bool,
) -> Ledger:
    r"""RC rewards: half the pool by :math:`\psi` rank, the rest by participation rank.

    The first half goes by :math:`\psi` rank among the providers, then the rest by participation
    rank over every registered client (descending after an improvement, ascending otherwise);
    integer floors, leftovers stay in the pool.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §4.2, Eq. 13 (as the
    authors' reference code of it implements it).
    """
    providers = np.asarray(providers, dtype=np.int64).reshape(-1)
    registered = np.asarray(registered, dtype=np.int64).reshape(-1)
    psi, omega = np.asarray(psi, dtype=np.float64), np.asarray(omega, dtype=np.float64)
    tokens, pools = ledger.tokens.copy(), ledger.pools.copy()
    if pools[cluster] <= 0:
        return ledger
    for members, key, descending, scale in (
        (providers, psi, True, 0.5),
        (registered, omega, improved, 1.0),
    ):
        n = members.size
        if n == 0:
            continue
        d = n * (n + 1) / 2
        order = sorted(members.tolist(), key=lambda i: key[i], reverse=descending)
        budget = pools[cluster]
        for idx, i in enumerate(order):
            paid = min(float(math.floor((n - idx) * budget / d * scale)), pools[cluster])
            tokens[i] += paid
            pools[cluster] -= paid
    return ledger._with(tokens, pools)


@dataclass(frozen=True, slots=True)
class RefundTracker:
    r"""``Acc_max`` per cluster: the best accuracy before the current round (Eq. 11).

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §4.2, Eq. 11
    (:math:`Acc_{k,\max}`).
    """

    acc_max: tuple[float | None, ...]

    @classmethod
    def start(cls, n_clusters: int) -> RefundTracker:
        """No ``Acc_max`` known yet for any of the ``n_clusters`` clusters.

        References
        ----------
        Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §4.2, Eq. 11.
        """
        return cls((None,) * positive_int("n_clusters", n_clusters))

    def fraction(
        self, cluster: int, acc: float, config: IPFLConfig, pool: float, n_payers: int
    ) -> float:
        """The refund fraction of ``cluster`` for this round's accuracy ``acc``.

        0 in the first paid round or while ``Acc_max`` is 0 ("skip at first").

        References
        ----------
        Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §4.2, Eq. 11.
        """
        best = self.acc_max[cluster]
        if best is None or best == 0:
            return 0.0
        if config.code_compat:
            return code_refund_fraction(acc > best, pool, n_payers)
        return refund_fraction(acc, best, config.eta_tok, config.gamma_acc)

    def update(self, cluster: int, acc: float, config: IPFLConfig) -> RefundTracker:
        """``Acc_max <- max(Acc_max, acc)`` (an RC bug resets it to 0 after no improvement).

        References
        ----------
        Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §4.2, Eq. 11.
        """
        best = self.acc_max[cluster]
        values = list(self.acc_max)
        if config.code_bugs and best is not None and best != 0 and acc <= best:
            values[cluster] = 0.0
        else:
            values[cluster] = float(acc) if best is None else max(best, float(acc))
        return RefundTracker(tuple(values))


def settle_cluster(
    ledger: Ledger,
    tracker: RefundTracker,
    cluster: int,
    payers: ArrayLike,
    acc: float,
    psi: ArrayLike,
    omega: ArrayLike,
    config: IPFLConfig,
    *,
    registered: ArrayLike | None = None,
    rewards: bool = True,
) -> tuple[Ledger, RefundTracker, float, bool]:
    """Refund then rewards of one cluster in one paid round.

    Alg. 1 order: payment -> training -> aggregation -> profiler -> reimbursement -> rewards.

    ``registered`` lists every client ever associated with the tier (default: the payers);
    under ``code_compat`` the refund goes to all of them (RC "Reimburse Token to ALL
    Consumers") and the participation pass of the rewards ranks them.
    ``rewards=False`` skips the rewards: the RC's reward functions ``return`` at the first
    tier whose pool is empty, so with ``code_bugs`` the driver stops rewarding the later
    clusters of the round once this function reports an empty pool.
    Returns the ledger, the updated ``Acc_max`` tracker, the refund fraction used, and
    whether the pool was empty when the rewards came due.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, Alg. 1 (order of the
    round); §4.2, Eq. 11-13.
    """
    payers = np.asarray(payers, dtype=np.int64).reshape(-1)
    members = payers if registered is None else np.asarray(registered, dtype=np.int64).ravel()
    consumers = members if config.code_compat else payers
    u = tracker.fraction(cluster, acc, config, float(ledger.pools[cluster]), consumers.size)
    best = tracker.acc_max[cluster]
    improved = best is not None and acc > best
    ledger = refund(ledger, cluster, consumers, u, integer=config.integer_tokens)
    empty = bool(ledger.pools[cluster] <= 0)
    if rewards and not empty:
        if config.reward_mode == "code_split":
            ledger = code_split_rewards(
                ledger, cluster, payers, psi, members, omega, improved=improved
            )
        else:
            ledger = reward(ledger, cluster, payers, psi, omega, integer=config.integer_tokens)
    return ledger, tracker.update(cluster, acc, config), u, empty


@cache
def net_token_change_expr() -> sp.Expr:
    r"""Net tokens of the provider of rank :math:`\alpha` in one cluster-round.

    Registered as ``ipfl.ledger.net_change``:

    .. math::  \mathrm{net}(\alpha) = (1 - u)\, p \left(\frac{2\alpha}{n + 1} - 1\right),

    pay :math:`p`, get :math:`u p` back, earn :math:`2\alpha(1-u)p/(n+1)`.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §4.2, Eq. 9-13
    (corrected); derived here, registered as ``ipfl.ledger.net_change`` (docs/errata.md,
    ``ipfl.eq12``, ``ipfl.eq13``).

    Examples
    --------
    >>> net_token_change_expr()
    2*alpha*p*(1 - u)/(n + 1) + p*u - p
    """
    alpha, n, u, p = sp.symbols("alpha n u p", positive=True)
    return -p + u * p + alpha * (1 - u) * n * p / (n * (n + 1) / 2)


@cache
def _net_numeric() -> Any:
    alpha, n, u, p = sp.symbols("alpha n u p", positive=True)
    return sp.lambdify((alpha, n, u, p), net_token_change_expr(), "numpy")


def net_token_change(alpha: ArrayLike, n: int, u: float, price: float) -> FloatArray:
    """Numeric twin of :func:`net_token_change_expr` (lambdified).

    A float for a scalar ``alpha``.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §4.2, Eq. 9-13
    (corrected); derived here, registered as ``ipfl.ledger.net_change``.

    Examples
    --------
    >>> net_token_change([1, 2, 3], 3, 0.5, 1.0).tolist()
    [-0.25, 0.0, 0.25]
    >>> net_token_change(3, 3, 0.0, 1.0)
    0.5
    """
    value = np.asarray(
        _net_numeric()(np.asarray(alpha, dtype=np.float64), n, u, price), dtype=np.float64
    )
    return scalar_or_array(value, alpha)

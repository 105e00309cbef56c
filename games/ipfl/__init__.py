"""IP-FL's mechanism: token economy, preference bids, scheduler, Shapley contributions, PMA.

Pure numpy (no torch): the learning driver (:mod:`learning.drivers.ipfl`) trains the cluster models
and hands this module accuracies, selections and flattened parameter vectors. Everything
follows Khan et al., "IP-FL: Incentivized and Personalized Federated Learning" (arXiv
2304.07514 v4), with readings of §4.2 where the printed equations are ambiguous or wrong,
which make the ledger conserve tokens exactly (registered in :mod:`games.ipfl.propositions`; see
``docs/errata.md``, ``ipfl.eq2``, ``ipfl.eq12`` and ``ipfl.eq13``):

- one pool per cluster, filled by the clients *selected* for it (Eq. 9-10);
- the refund fraction of Eq. 11 goes back to that round's payers, equally (Eq. 12 corrected);
- rank rewards use the conserving denominator :math:`n(n+1)/2` with :math:`n` the number of
  ranked providers (Eq. 13 corrected; the printed :math:`N_r(N_r+1)/2` mints or burns tokens,
  see :func:`literal_reward_total`);
- a client that cannot pay the price is not charged and not selected;
- opt-outs count clients with :math:`PMA_i \\le 0` (Eq. 2 corrected).

The behaviours of the authors' reference code (repository
``AFKD98/PI-FL-Personalized-and-Incentivized-Federated-Learning``, files
``aggregator/fusion/tier_fedavg_fusion_handler.py`` and
``party/training/tier_fedavg_local_training_handler.py``; "RC" below) are available with
``rc_compat=True``; its outright bugs only with ``rc_bugs=True``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike, NDArray

from econ.outputs import frame, plain, scalar_or_array
from econ.qualities import ModelQualities
from econ.validation import choice, in_interval, non_negative, positive, positive_int

__all__ = [
    "IPFLConfig",
    "Ledger",
    "Opening",
    "RefundTracker",
    "TokenQualities",
    "TokenState",
    "aggregation_weights",
    "bootstrap_select",
    "close_round",
    "collect",
    "f1_features",
    "importance_weights",
    "literal_reward_total",
    "n_perf_default",
    "n_rand_schedule",
    "net_token_change",
    "net_token_change_expr",
    "open_round",
    "opt_outs",
    "personalised_model",
    "pma",
    "preference_bids",
    "rank_rewards",
    "rc_refund_fraction",
    "rc_slots",
    "rc_split_rewards",
    "refund",
    "refund_fraction",
    "reward",
    "select_clients",
    "settle_cluster",
    "shapley_first_order",
]

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]
IntArray = NDArray[np.int64]

_REWARD_MODES = ("rank_lex", "rc_split")
_TH_MODES = ("raw", "normalized")


# --------------------------------------------------------------------------- configuration


@dataclass(frozen=True, slots=True, kw_only=True)
class IPFLConfig:
    """Knobs of the mechanism (§4.2-4.3 and App. C give no values; the defaults are ours
    unless marked RC).

    Parameters
    ----------
    tok_init
        Equal starting balance of every client (App. C "opportunity fairness"; RC 100).
    price
        Posted price :math:`\\tau_p` per cluster per round (RC 1).
    eta_tok, gamma_acc
        Cap :math:`\\eta` of the refund fraction and the relative-improvement threshold
        :math:`\\gamma` of Eq. 11.
    th_bid, th_mode
        Bid threshold :math:`Th` of Alg. 2, on raw accuracy (``"raw"``) or on normalised
        importance weights (``"normalized"``).
    incentive
        False gives the "NI" ablation (App. D.1): one uniformly random cluster per client.
    perf_share, rand_high, rand_low
        Total performance budget (share of N, split over clusters) and the exploration
        budget that starts at ``rand_high`` of N and shrinks to the floor ``rand_low`` (§4.3).
    integer_tokens
        Floor every transfer and keep the remainder in the pool (RC).
    reward_mode
        ``"rank_lex"`` (Eq. 13 corrected) or ``"rc_split"`` (RC two-pass rewards).
    rc_compat
        Reference-code behaviours: step refund with the pool override, paid to
        every client ever associated with the tier, split rewards, integer tokens, fixed
        ``rc_perf`` + ``rc_rand`` slots per tier (one moves from random to performance at
        round ``rc_shift_round``), random extras from bidders, ascending sort after a
        non-improving round, uniform :math:`\\lambda` in :math:`\\psi`. (The driver adds the
        RC's local optimiser, Adadelta.)
    rc_perf, rc_rand, rc_shift_round
        The RC slot schedule (``iter_avg`` config: 5 + 2 per tier, shift at round 100).
    rc_bugs
        Also the RC's bugs: the last selected client pays for
        everyone; ``Acc_max`` reset to 0 after a non-improving round; the reward passes of a
        round stop at the first tier whose pool is empty, skipping every later tier (see
        :func:`settle_cluster`). Only with ``rc_compat``.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §4.2 (Eq. 9-13), §4.3
    (scheduler), Alg. 1-2, App. C (opportunity fairness), App. D.1 (the NI ablation).
    """

    tok_init: float = 100.0
    price: float = 1.0
    eta_tok: float = 0.5
    gamma_acc: float = 0.05
    th_bid: float = 0.9
    th_mode: str = "raw"
    incentive: bool = True
    perf_share: float = 0.20
    rand_high: float = 0.20
    rand_low: float = 0.05
    integer_tokens: bool = False
    reward_mode: str = "rank_lex"
    rc_compat: bool = False
    rc_bugs: bool = False
    rc_perf: int = 5
    rc_rand: int = 2
    rc_shift_round: int = 100

    def __post_init__(self) -> None:
        non_negative("tok_init", self.tok_init)
        positive("price", self.price)
        in_interval("eta_tok", self.eta_tok, 0.0, 1.0)
        in_interval("gamma_acc", self.gamma_acc, 0.0, 1.0, low_open=True)
        in_interval("th_bid", self.th_bid, 0.0, 1.0)
        choice("th_mode", self.th_mode, _TH_MODES)
        in_interval("perf_share", self.perf_share, 0.0, 1.0)
        in_interval("rand_low", self.rand_low, 0.0, 1.0)
        in_interval("rand_high", self.rand_high, float(self.rand_low), 1.0)
        choice("reward_mode", self.reward_mode, _REWARD_MODES)
        positive_int("rc_perf", self.rc_perf)
        for name in ("rc_rand", "rc_shift_round"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
        if self.rc_bugs and not self.rc_compat:
            raise ValueError("rc_bugs needs rc_compat=True")
        if self.rc_compat:
            object.__setattr__(self, "integer_tokens", True)
            object.__setattr__(self, "reward_mode", "rc_split")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready copy.

        References
        ----------
        Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §4.2-4.3 (the knobs
        it copies).
        """
        return plain({name: getattr(self, name) for name in self.__slots__})


# --------------------------------------------------------------------------- the ledger


@dataclass(frozen=True, slots=True)
class Ledger:
    """Token balances of the clients and the pools of the clusters (immutable).

    Invariant (``ipfl.ledger.conservation``): :math:`\\sum_i tok_i + \\sum_k pool_k` is
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
    """Eq. 9-10: every listed client that can pay moves ``price`` into ``pool[cluster]``.

    .. math::  \\tau_i \\leftarrow \\tau_i - \\tau_p, \\qquad
               \\tau_{a,k} \\leftarrow \\tau_{a,k} + \\tau_p

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
    """Eq. 11, the share of the pool returned to the payers ("utility"):

    .. math::

        u_k = \\eta\\, \\frac{\\gamma - \\min(\\gamma, \\max(0, \\delta_k))}{\\gamma},
        \\qquad \\delta_k = \\frac{Acc_{k,r} - Acc_{k,\\max}}{Acc_{k,\\max}}.

    :math:`u_k = \\eta` when the cluster model did not improve on its best, 0 when it
    improved by at least :math:`\\gamma` (relative), linear in between. Its range is
    :math:`[0, \\eta]`, not the "[0, γ]" printed with Eq. 12 (``docs/errata.md``,
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


def rc_refund_fraction(improved: bool, pool: float, n_parties: int) -> float:
    """RC refund: 1 without improvement, else 0; overwritten to
    ``n_parties / pool`` whenever the pool holds more than ``n_parties`` tokens.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §4.2, Eq. 11 (as the
    authors' reference code of it implements it).

    Examples
    --------
    >>> rc_refund_fraction(False, 3.0, 5), rc_refund_fraction(True, 3.0, 5)
    (1.0, 0.0)
    >>> rc_refund_fraction(True, 10.0, 5)
    0.5
    """
    if pool > n_parties:
        return n_parties / pool
    return 0.0 if improved else 1.0


def refund(
    ledger: Ledger, cluster: int, payers: ArrayLike, fraction: float, *, integer: bool = False
) -> Ledger:
    """Eq. 12 (corrected): ``fraction`` of ``pool[cluster]`` goes back to the payers equally
    (under ``rc_compat`` the driver passes every client ever associated with the tier).

    .. math::  \\tau_i \\leftarrow \\tau_i + \\frac{u_k\\, \\tau_{a,k}}{|S_k|},\\ i \\in S_k;
               \\qquad \\tau_{a,k} \\leftarrow \\tau_{a,k} - u_k \\tau_{a,k}

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
    """Eq. 13 (corrected): reward of rank :math:`\\alpha = 1..n` (1 = worst contributor),

    .. math::  r_\\alpha = \\frac{\\alpha\\, \\tau_{a,k}}{n(n+1)/2}, \\qquad \\sum_\\alpha r_\\alpha = \\tau_{a,k}.

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
    """What the printed Eq. 13 pays out: ranks :math:`1..N_p+N_r` over the denominator
    :math:`N_r(N_r+1)/2`. Differs from ``pool`` whenever :math:`N_p > 0` (``docs/errata.md``,
    ``ipfl.eq13``).

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
    """Eq. 13 (``rank_lex``): the pool goes to the providers by rank of :math:`(\\psi, \\Omega)`.

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


def rc_split_rewards(
    ledger: Ledger,
    cluster: int,
    providers: ArrayLike,
    psi: ArrayLike,
    registered: ArrayLike,
    omega: ArrayLike,
    *,
    improved: bool,
) -> Ledger:
    """RC rewards: half the pool by :math:`\\psi` rank among the providers,
    then the rest by participation rank over every registered client (descending after an
    improvement, ascending otherwise); integer floors, leftovers stay in the pool.

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
    """``Acc_max`` per cluster: the best accuracy before the current round (Eq. 11).

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §4.2, Eq. 11
    (:math:`Acc_{k,\\max}`).
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
        """The refund fraction of ``cluster`` for this round's accuracy ``acc``; 0 in the
        first paid round or while ``Acc_max`` is 0 ("skip at first").

        References
        ----------
        Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §4.2, Eq. 11.
        """
        best = self.acc_max[cluster]
        if best is None or best == 0:
            return 0.0
        if config.rc_compat:
            return rc_refund_fraction(acc > best, pool, n_payers)
        return refund_fraction(acc, best, config.eta_tok, config.gamma_acc)

    def update(self, cluster: int, acc: float, config: IPFLConfig) -> RefundTracker:
        """``Acc_max <- max(Acc_max, acc)`` (an RC bug resets it to 0 after no improvement).

        References
        ----------
        Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §4.2, Eq. 11.
        """
        best = self.acc_max[cluster]
        values = list(self.acc_max)
        if config.rc_bugs and best is not None and best != 0 and acc <= best:
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
    """Refund then rewards of one cluster in one paid round (Alg. 1 order: payment ->
    training -> aggregation -> profiler -> reimbursement -> rewards).

    ``registered`` lists every client ever associated with the tier (default: the payers);
    under ``rc_compat`` the refund goes to all of them (RC "Reimburse Token to ALL
    Consumers") and the participation pass of the rewards ranks them.
    ``rewards=False`` skips the rewards: the RC's reward functions ``return`` at the first
    tier whose pool is empty, so with ``rc_bugs`` the driver stops rewarding the later
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
    consumers = members if config.rc_compat else payers
    u = tracker.fraction(cluster, acc, config, float(ledger.pools[cluster]), consumers.size)
    best = tracker.acc_max[cluster]
    improved = best is not None and acc > best
    ledger = refund(ledger, cluster, consumers, u, integer=config.integer_tokens)
    empty = bool(ledger.pools[cluster] <= 0)
    if rewards and not empty:
        if config.reward_mode == "rc_split":
            ledger = rc_split_rewards(
                ledger, cluster, payers, psi, members, omega, improved=improved
            )
        else:
            ledger = reward(ledger, cluster, payers, psi, omega, integer=config.integer_tokens)
    return ledger, tracker.update(cluster, acc, config), u, empty


# --------------------------------------------------------------------------- one round


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
        """Every (cluster, client) pair that trains this round, as two flat arrays in cluster
        order: ``clusters[j]`` is the cluster client ``clients[j]`` trains for.

        References
        ----------
        Khan et al., IP-FL: Incentivized and Personalized Federated Learning, Alg. 1, lines 1-9
        (the selected clients of each cluster).
        """
        clusters = np.concatenate([np.full(len(p), c) for c, p in enumerate(self.payers)])
        return clusters.astype(np.int64), np.concatenate(self.payers).astype(np.int64)

    def by_cluster(self) -> Iterator[tuple[int, IntArray, IntArray]]:
        """``(cluster, rows, members)`` for every cluster that trains: ``rows`` index the
        arrays of :meth:`participations`, ``members`` are the clients at those rows."""
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
    """Bids, selection and payment of round ``round_index`` (Alg. 1 and 2, Eq. 9-10).

    Round 0 is free: ``groups`` (a cold start's clusters) or, without them, a bootstrap draw
    of :math:`N_p + N_r` available clients per cluster. Later rounds are paid: each client
    bids from its ``scores`` (the ``(N, K)`` accuracies of the cluster models on its
    validation data, Alg. 2), :func:`select_clients` ranks the bidders by
    :math:`(\\psi, \\Omega)` and adds explorers, and every selected client pays ``price``
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
    if config.rc_compat:
        n_perf, n_rand = rc_slots(r, config)
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
            ledger, paid = collect(ledger, c, selected[c], config.price, stale_payer=config.rc_bugs)
            payers.append(selected[c] if config.rc_bugs else paid)
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
    cluster's pool, in cluster order; in round 0 only ``Acc_max`` is set. With ``rc_bugs`` the
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
            halted |= config.rc_bugs and empty
        else:
            tracker = tracker.update(c, acc_c, config)
    return TokenState(ledger, tracker, psi, omega, s.explored, improved), refunds


@cache
def net_token_change_expr() -> sp.Expr:
    """Net tokens of the provider of rank :math:`\\alpha` in one cluster-round
    (``ipfl.ledger.net_change``):

    .. math::  \\mathrm{net}(\\alpha) = (1 - u)\\, p \\left(\\frac{2\\alpha}{n + 1} - 1\\right),

    pay :math:`p`, get :math:`u p` back, earn :math:`2\\alpha(1-u)p/(n+1)`.

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
    """Numeric twin of :func:`net_token_change_expr` (lambdified); a float for a scalar
    ``alpha``.

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


# --------------------------------------------------------------------------- preferences


def importance_weights(accuracy: ArrayLike) -> FloatArray:
    """Eq. 7-8 normalised: :math:`w_{ik} = \\upsilon_{ik} / \\sum_{k'} \\upsilon_{ik'}`,
    uniform where a client's accuracies are all 0. ``accuracy`` is (N, K) in [0, 1].

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §4.1, Eq. 7-8.

    Examples
    --------
    >>> importance_weights([[0.2, 0.6], [0.0, 0.0]]).round(6).tolist()
    [[0.25, 0.75], [0.5, 0.5]]
    """
    acc = np.atleast_2d(in_interval("accuracy", accuracy, 0.0, 1.0))
    total = acc.sum(axis=1, keepdims=True)
    uniform = np.full_like(acc, 1.0 / acc.shape[1])
    return np.where(total > 0, acc / np.where(total > 0, total, 1.0), uniform)


def personalised_model(weights: ArrayLike, cluster_models: ArrayLike) -> FloatArray:
    """Eq. 8: :math:`P_i = \\sum_k w_{ik} M_k`, a convex combination (rows of ``weights``
    sum to 1; ``cluster_models`` is (K, d)). :func:`learning.drivers.ipfl.personalise` computes the same
    on stacked tensors, and a test holds the two together.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §4.1, Eq. 8.

    Examples
    --------
    >>> personalised_model([[0.25, 0.75]], [[0.0, 4.0], [4.0, 0.0]]).tolist()
    [[3.0, 1.0]]
    """
    w = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    return w @ np.asarray(cluster_models, dtype=np.float64)


def preference_bids(
    accuracy: ArrayLike,
    tokens: ArrayLike,
    config: IPFLConfig,
    rng: np.random.Generator,
) -> BoolArray:
    """Alg. 2 preference lists as an (N, K) boolean matrix.

    Incentivised: :math:`P_B(i) = \\{k : \\upsilon_{ik} > Th\\} \\cup \\{\\arg\\max_k
    \\upsilon_{ik}\\}` (on normalised weights with ``th_mode="normalized"``); a client keeps
    only the highest-weight bids it can pay for (:math:`|P_B| \\cdot \\tau_p \\le tok_i`).
    ``rc_compat``: the argmax only. NI: one uniformly random cluster.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, Alg. 2; §4.1, Eq. 7; App.
    D.1 (NI ablation).
    """
    acc = np.atleast_2d(in_interval("accuracy", accuracy, 0.0, 1.0))
    tokens = np.asarray(tokens, dtype=np.float64).reshape(-1)
    n, k = acc.shape
    bids = np.zeros((n, k), dtype=bool)
    if not config.incentive:
        bids[np.arange(n), rng.integers(0, k, size=n)] = True
    else:
        w = importance_weights(acc)
        score = acc if config.th_mode == "raw" else w
        best = np.argmax(acc, axis=1)
        if not config.rc_compat:
            bids |= score > config.th_bid
        bids[np.arange(n), best] = True
        affordable = np.floor(tokens / config.price + 1e-12).astype(np.int64)
        for i in range(n):
            chosen = np.flatnonzero(bids[i])
            if chosen.size > affordable[i]:
                keep = chosen[np.argsort(-w[i, chosen], kind="stable")[: max(affordable[i], 0)]]
                bids[i] = False
                bids[i, keep] = True
        return bids
    bids[tokens < config.price] = False
    return bids


def f1_features(
    predictions: ArrayLike, labels: ArrayLike, n_classes: int, n_top: int = 10
) -> FloatArray:
    """Cold-start features of App. B (Eq. 14, RC ``select_clients_on_basis_of_f1_Scores``):
    the per-class F1 score of each client's model on a common server test set,

    .. math::  F1_{ic} = \\frac{2\\, TP_{ic}}{2\\, TP_{ic} + FP_{ic} + FN_{ic}}

    (0 where a class is neither predicted nor present), restricted to the ``n_top`` classes
    whose F1 varies most across clients (RC ``df.var(axis=0).nlargest(10)``; ties by class
    index). ``predictions`` is (N, m), one row of predicted labels per client; ``labels`` (m,).
    Returns (N, min(n_top, n_classes)); clustering these rows gives the initial clusters.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, App. B, Eq. 14.
    """
    pred = np.atleast_2d(np.asarray(predictions, dtype=np.int64))
    y = np.asarray(labels, dtype=np.int64).reshape(-1)
    n_classes = positive_int("n_classes", n_classes)
    n_top = positive_int("n_top", n_top)
    if pred.shape[1] != y.size:
        raise ValueError(
            f"predictions must have {y.size} columns (one per label), got {pred.shape}"
        )
    classes = np.arange(n_classes)
    hit_c = (pred[:, :, None] == classes) & (y[None, :, None] == classes)
    tp = hit_c.sum(axis=1)
    predicted = (pred[:, :, None] == classes).sum(axis=1)
    present = (y[:, None] == classes).sum(axis=0)[None, :]
    denom = predicted + present  # 2TP + FP + FN
    f1 = np.where(denom > 0, 2.0 * tp / np.maximum(denom, 1), 0.0)
    order = np.argsort(-f1.var(axis=0), kind="stable")[: min(n_top, n_classes)]
    return f1[:, np.sort(order)]


# --------------------------------------------------------------------------- scheduler


def n_perf_default(n_clients: int, n_clusters: int, share: float = 0.20) -> int:
    """:math:`N_p = \\lceil share \\cdot N / K \\rceil` per cluster (the paper gives no value;
    ``share`` is ours).

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
    """Exploration budget (§4.3, following Oort): total and per cluster,

    .. math::  R_{tot} = \\max(\\lceil low\\,N \\rceil, \\min(\\lceil high\\,N \\rceil,
               |\\text{unexplored}|)), \\qquad N_r = \\lceil R_{tot} / K \\rceil.

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


def rc_slots(round_index: int, config: IPFLConfig) -> tuple[int, int]:
    """The RC's fixed slots per tier: ``(rc_perf, rc_rand)``
    performance and random picks, and from round ``rc_shift_round`` on one slot moves from
    random to performance (5 + 2 -> 6 + 1 in the ``iter_avg`` config).

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §4.3 (as the authors'
    reference code of it schedules :math:`N_p` and :math:`N_r`).

    Examples
    --------
    >>> rc_slots(0, IPFLConfig()), rc_slots(100, IPFLConfig())
    ((5, 2), (6, 1))
    """
    round_index = int(non_negative("round_index", round_index))
    if round_index >= config.rc_shift_round and config.rc_rand > 0:
        return config.rc_perf + 1, config.rc_rand - 1
    return config.rc_perf, config.rc_rand


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
    """Alg. 1 ``SelectClients``: per cluster, the top ``n_perf`` bidders by
    :math:`(\\psi_{ki}, \\Omega_{ki})` descending (then id), plus ``n_rand`` random explorers
    drawn from the available clients not yet chosen for the cluster; only clients that can
    still pay are eligible, and a client pays once per cluster it joins.

    The first ``n_perf`` entries of each returned array are the performance picks, in rank
    order. ``rc_compat``: extras from the bidders only, all bidders taken when they fit,
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
        sign = 1.0 if (config.rc_compat and asc[c]) else -1.0
        ranked = sorted(bidders.tolist(), key=lambda i: (sign * psi[c, i], sign * omega[c, i], i))
        if config.rc_compat and len(ranked) <= n_perf + n_rand:
            chosen = list(ranked)
            if not chosen:
                pool = np.flatnonzero(can_pay)
                chosen = rng.choice(pool, min(n_perf + n_rand, pool.size), replace=False).tolist()
        else:
            chosen = ranked[:n_perf]
            source = np.array(ranked[n_perf:]) if config.rc_compat else np.flatnonzero(can_pay)
            rest = np.setdiff1d(source, chosen) if source.size else source
            if rest.size:
                chosen += rng.choice(rest, min(n_rand, rest.size), replace=False).tolist()
        picked = np.array(chosen, dtype=np.int64)
        budget[picked] -= config.price
        out.append(picked)
    return out


# --------------------------------------------------------------------------- contributions


def aggregation_weights(sizes: ArrayLike, config: IPFLConfig) -> FloatArray:
    r"""The aggregation weights :math:`\lambda_i` of a cluster's payers in the profiler
    (Eq. 15-16): their shares of the training examples (FedAvg), or equal shares under
    ``rc_compat`` (the reference code averages uniformly).

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, App. H, Eq. 15-16 (the
    weights :math:`\lambda_i`).

    Examples
    --------
    >>> aggregation_weights([10, 30], IPFLConfig()).tolist()
    [0.25, 0.75]
    >>> aggregation_weights([10, 30], IPFLConfig(rc_compat=True)).tolist()
    [0.5, 0.5]
    """
    n = np.asarray(sizes, dtype=np.float64).reshape(-1)
    if n.size == 0 or (n <= 0).any():
        raise ValueError(f"sizes must be positive training-set sizes, got {n.tolist()}")
    return np.full(n.size, 1.0 / n.size) if config.rc_compat else n / n.sum()


def shapley_first_order(
    gradient: ArrayLike,
    updates: ArrayLike,
    model: ArrayLike,
    weights: ArrayLike,
    *,
    normalized: bool = True,
) -> FloatArray:
    """First-order Shapley contribution of each participant (App. H, Eq. 15-16):

    .. math::

        \\psi_i = -g^\\top \\lambda_i (W_i - W_M) \\quad\\text{(normalised, Eq. 16)}, \\qquad
        \\psi_i = -g^\\top \\lambda_i W_i \\quad\\text{(Eq. 15)},

    with :math:`g` the mean hold-out loss gradient at the aggregate :math:`W_M`,
    :math:`W_i` the participants' trained parameters (rows of ``updates``) and
    :math:`\\lambda_i` the aggregation weights. Under FedAvg
    (:math:`W_M = \\sum \\lambda_i W_i`, :math:`\\sum\\lambda_i = 1`) the normalised values sum
    to 0 (``ipfl.shapley.zero_sum``). Computed in float64.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, App. H, Eq. 15-16 and
    Alg. 3; zero sum registered as ``ipfl.shapley.zero_sum``.

    Examples
    --------
    >>> shapley_first_order([1.0, 0.0], [[2.0, 0.0], [0.0, 1.0]], [1.0, 0.5], [0.5, 0.5]).tolist()
    [-0.5, 0.5]
    """
    g = as_vector("gradient", gradient)
    upd = np.atleast_2d(np.asarray(updates, dtype=np.float64))
    lam = np.asarray(weights, dtype=np.float64).reshape(-1)
    if upd.shape != (lam.size, g.size):
        raise ValueError(f"updates must be ({lam.size}, {g.size}), got {upd.shape}")
    rows = upd - as_vector("model", model)[None, :] if normalized else upd
    return -(rows @ g) * lam


def as_vector(name: str, value: ArrayLike) -> FloatArray:
    """``value`` as a finite 1-d float64 vector.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, App. H (the parameter
    vectors of Eq. 15-16).
    """
    arr = np.asarray(value, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite")
    return arr


# --------------------------------------------------------------------------- PMA and the seam


def pma(personalised: ArrayLike, reference: ArrayLike) -> FloatArray:
    """Eq. 1: :math:`PMA_i = f_i - \\rho_i`, in percentage points (accuracies in [0, 1]); a
    float for scalars.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §3, Eq. 1.

    Examples
    --------
    >>> round(pma(0.8, 0.75), 6)
    5.0
    >>> pma([0.7, 0.9], [0.75, 0.8]).round(6).tolist()
    [-5.0, 10.0]
    """
    f = in_interval("personalised", personalised, 0.0, 1.0)
    rho = in_interval("reference", reference, 0.0, 1.0)
    points = 100.0 * (np.asarray(f, dtype=np.float64) - np.asarray(rho, dtype=np.float64))
    return scalar_or_array(points, personalised, reference)


def opt_outs(pma_pp: ArrayLike) -> BoolArray:
    """Eq. 2 corrected: client :math:`i` opts out iff :math:`PMA_i \\le 0` (the printed
    :math:`H(x) = 1[x > 0]` counts the satisfied clients; ``docs/errata.md``, ``ipfl.eq2``).

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §3, Eq. 2 (corrected:
    docs/errata.md, ``ipfl.eq2``).

    Examples
    --------
    >>> opt_outs([-5.0, 0.0, 10.0]).tolist()
    [True, True, False]
    """
    return scalar_or_array(np.asarray(pma_pp, dtype=np.float64) <= 0.0, pma_pp)


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenQualities:
    """A client's incentives in IP-FL, for the market and bargaining modules.

    Parameters
    ----------
    names
        One name per client.
    net_tokens
        Tokens at the end minus tokens at the start (the net flow from the mechanism).
    pma
        Personalised-model appeal in percentage points (Eq. 1).
    personalised_accuracy
        Accuracy in [0, 1] of the client's personalised model on its own test set.
    n_eval
        Test examples behind each accuracy.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §3, Eq. 1 (PMA) and §4.2,
    Eq. 9-13 (the token flows).
    """

    names: tuple[str, ...]
    net_tokens: FloatArray
    pma: FloatArray
    personalised_accuracy: FloatArray
    n_eval: IntArray

    def __post_init__(self) -> None:
        names = tuple(str(n) for n in self.names)
        arrays = {
            "net_tokens": np.array(self.net_tokens, dtype=np.float64).reshape(-1),
            "pma": np.array(self.pma, dtype=np.float64).reshape(-1),
            "personalised_accuracy": np.array(
                in_interval("personalised_accuracy", self.personalised_accuracy, 0.0, 1.0),
                dtype=np.float64,
            ).reshape(-1),
            "n_eval": np.array(self.n_eval, dtype=np.int64).reshape(-1),
        }
        for key, arr in arrays.items():
            if arr.shape != (len(names),):
                raise ValueError(
                    f"{key} must have one entry per name ({len(names)}), got {arr.shape}"
                )
            arr.setflags(write=False)
            object.__setattr__(self, key, arr)
        object.__setattr__(self, "names", names)

    def utility(self, price_per_token: float, value_per_point: float = 1.0) -> FloatArray:
        """Money-metric gain of participating:
        :math:`v \\cdot PMA_i + p_{tok} \\cdot \\mathrm{net}_i` (value ``v`` per point of PMA).

        References
        ----------
        Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §3, Eq. 1 and §4.2,
        Eq. 9-13; the money-metric utility is collabecon's own.

        Examples
        --------
        >>> tq = TokenQualities(names=('a', 'b'), net_tokens=[-10.0, 10.0], pma=[5.0, 2.0],
        ...                    personalised_accuracy=[0.8, 0.9], n_eval=[100, 100])
        >>> tq.utility(0.1).tolist()
        [4.0, 3.0]
        """
        p = float(non_negative("price_per_token", price_per_token))
        v = float(non_negative("value_per_point", value_per_point))
        return v * self.pma + p * self.net_tokens

    def individually_rational(self, price_per_token: float, value_per_point: float = 1.0) -> bool:
        """True iff participation is individually rational for every client:
        :math:`v \\cdot PMA_i + p_{tok}\\, \\mathrm{net}_i \\ge 0` for all :math:`i`.

        References
        ----------
        Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §3, Eq. 1-2 and §4.2,
        Eq. 9-13; the participation condition is collabecon's own.

        Examples
        --------
        >>> tq = TokenQualities(names=('a', 'b'), net_tokens=[-10.0, 10.0], pma=[5.0, 2.0],
        ...                    personalised_accuracy=[0.8, 0.9], n_eval=[100, 100])
        >>> tq.individually_rational(0.1), tq.individually_rational(1.0)
        (True, False)
        """
        return bool(np.all(self.utility(price_per_token, value_per_point) >= 0.0))

    def max_token_price(self, value_per_point: float = 1.0) -> float:
        """The largest token price at which participation stays individually rational for
        all (``inf`` when no client loses tokens; ``nan`` when IR fails even at price 0).

        References
        ----------
        Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §3, Eq. 1 and §4.2,
        Eq. 9-13; derived here from :meth:`utility`.

        Examples
        --------
        >>> tq = TokenQualities(names=('a', 'b'), net_tokens=[-10.0, 10.0], pma=[5.0, 2.0],
        ...                    personalised_accuracy=[0.8, 0.9], n_eval=[100, 100])
        >>> tq.max_token_price()
        0.5
        """
        base = value_per_point * self.pma
        if np.any(base < 0):
            return float("nan")
        losing = self.net_tokens < 0
        if not np.any(losing):
            return float("inf")
        return float(np.min(base[losing] / -self.net_tokens[losing]))

    def model_qualities(self) -> ModelQualities:
        """The personalised accuracies as :class:`econ.qualities.ModelQualities`.

        References
        ----------
        Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §3, Eq. 1
        (:math:`f_i`, the personalised accuracy).
        """
        return ModelQualities(
            names=self.names,
            quality=self.personalised_accuracy,
            metric="accuracy",
            n_eval=self.n_eval,
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready form.

        References
        ----------
        Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §3, Eq. 1 (the
        quantities it copies).
        """
        return plain(
            {
                "names": self.names,
                "net_tokens": self.net_tokens,
                "pma": self.pma,
                "personalised_accuracy": self.personalised_accuracy,
                "n_eval": self.n_eval,
            }
        )

    def to_frame(self) -> Any:
        """A pandas DataFrame, one row per client indexed by name (needs pandas).

        References
        ----------
        Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §3, Eq. 1 (the
        quantities it tabulates).
        """
        table = frame(
            {
                "name": list(self.names),
                "net_tokens": self.net_tokens,
                "pma": self.pma,
                "personalised_accuracy": self.personalised_accuracy,
                "n_eval": self.n_eval,
            },
            "TokenQualities",
        )
        return table.set_index("name")

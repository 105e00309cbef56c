r"""IP-FL's mechanism: token economy, preference bids, scheduler, Shapley contributions, PMA.

Pure numpy (no torch): the learning driver (:mod:`learning.drivers.ipfl`) trains the cluster models
and hands this package accuracies, selections and flattened parameter vectors. Everything
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
- opt-outs count clients with :math:`PMA_i \le 0` (Eq. 2 corrected).

The behaviours of the authors' reference code (repository
``AFKD98/PI-FL-Personalized-and-Incentivized-Federated-Learning``, files
``aggregator/fusion/tier_fedavg_fusion_handler.py`` and
``party/training/tier_fedavg_local_training_handler.py``; "RC" below) are available with
``code_compat=True``; its outright bugs only with ``code_bugs=True``.

The package's modules: ``config`` (:class:`IPFLConfig`), ``tokens`` (the ledger, refunds and
rewards), ``round`` (:func:`open_round` and :func:`close_round` around training),
``preferences`` (importance weights, personalised models, bids), ``scheduler`` (which clients
each cluster selects), ``contributions`` (aggregation weights, Shapley values), ``qualities``
(PMA, opt-outs, :class:`TokenQualities`) and ``propositions`` (the registered statements);
the names above are re-exported here.
"""

from __future__ import annotations

from games.ipfl.config import IPFLConfig
from games.ipfl.contributions import aggregation_weights, shapley_first_order
from games.ipfl.preferences import (
    f1_features,
    importance_weights,
    personalised_model,
    preference_bids,
)
from games.ipfl.qualities import TokenQualities, opt_outs, pma
from games.ipfl.round import Opening, TokenState, close_round, open_round
from games.ipfl.scheduler import (
    bootstrap_select,
    code_slots,
    n_perf_default,
    n_rand_schedule,
    select_clients,
)
from games.ipfl.tokens import (
    Ledger,
    RefundTracker,
    code_refund_fraction,
    code_split_rewards,
    collect,
    literal_reward_total,
    net_token_change,
    net_token_change_expr,
    rank_rewards,
    refund,
    refund_fraction,
    reward,
    settle_cluster,
)

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
    "code_refund_fraction",
    "code_slots",
    "code_split_rewards",
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
    "refund",
    "refund_fraction",
    "reward",
    "select_clients",
    "settle_cluster",
    "shapley_first_order",
]

r"""IP-FL's token ledger around any Flower strategy and ClientApp (Khan et al., Alg. 1).

Two building blocks for a Flower App of one's own, with flwr's Message API:

:func:`ledger_mod`
    A ClientApp mod. It answers the ledger's profiling request (an ``evaluate`` message whose
    config sets :data:`PROFILE`) alone, without calling the App's handler: the accuracy of
    the model sent on the node's validation data (:data:`~learning.runtimes.flower.compose.QUALITY`)
    and the gradient of its mean loss there, with the number of examples each rests on (the
    profiler's input, Khan et al., §4.2 and App. H).
:class:`TokenLedgerStrategy`
    A :class:`flwr.serverapp.strategy.Strategy` around an inner strategy (FedAvg, FedProx, a
    strategy of one's own) whose ledger, :class:`games.ipfl.TokenState`, decides each round
    which nodes pay and train, and settles the round from what they report.

A round :math:`r` (Flower's round :math:`r + 1`) of :class:`TokenLedgerStrategy`, on the
:math:`N` clients (nodes) the ledger holds, with one cluster:

1. Open (Alg. 1, lines 1-9; :func:`games.ipfl.open_round`). Round 0 is free: the bootstrap
   draw of :math:`N_p + N_r` clients. In a paid round every client that can pay the price
   bids for the cluster (with one cluster, Alg. 2's :math:`\arg\max_k` is that cluster,
   whatever the scores), :func:`games.ipfl.select_clients` takes the top :math:`N_p` bidders
   by :math:`(\psi, \Omega)` and :math:`N_r` random explorers, and each selected client pays
   :math:`\tau_p` into the pool (Eq. 9-10, :func:`games.ipfl.collect`).
2. Train. The inner strategy's ``configure_train`` sees only the payers' nodes (the ``Grid``
   it gets lists no other), and any message it addresses to another node is dropped; its
   ``aggregate_train`` aggregates the replies as it would, into the model :math:`W_M`.
3. Profile (§4.2, App. H). :math:`W_M` goes to every payer whose update came back; its
   :func:`ledger_mod` answers with the validation accuracy of :math:`W_M` and the gradient of
   its mean loss on its validation examples. The hold-out gradient :math:`g` is their mean
   weighted by those examples; the contributions are the first-order Shapley values
   :math:`\psi_i = -g^\top \lambda_i (W_i - W_M)` (Eq. 16,
   :func:`games.ipfl.shapley_first_order`) with :math:`\lambda_i` of
   :func:`games.ipfl.aggregation_weights` from the replies' ``num-examples``; the round's
   accuracy is the payers' mean accuracy.
4. Close (Alg. 1, lines 10-16; :func:`games.ipfl.close_round`): the refund of Eq. 11-12 and
   the rank rewards of Eq. 13 from the pool (round 0 only sets :math:`Acc_{\max}`).

What is Algorithm 1 as :mod:`games.ipfl` plays it: the ledger (conserving readings of Eq. 12-13,
``docs/errata.md``), the price, the bids' affordability, the scheduler's selection and its
draws, the profiler's Shapley values and the refund and rewards are the functions of
:mod:`games.ipfl`, on the replies of the nodes. What the wrapper simplifies: an arbitrary inner
strategy trains one model, so there is one cluster (:math:`K = 1`): no preference bids
between clusters, no cluster assignment and no personalised models (Eq. 8), and with
:math:`K = 1` Alg. 2's scores do not change a bid, so the nodes are not asked for them
(multi-cluster IP-FL runs on collabecon's own apps, :mod:`learning.runtimes.flower.ipfl`);
:math:`W_M` is the inner strategy's aggregate, which is FedAvg's weighted mean only for
FedAvg (the Shapley values sum to 0 only then, ``ipfl.shapley.zero_sum``); a payer whose
update does not come back (the inner strategy sampled it out, or its node failed) has paid,
but the round is settled among the payers that trained: it is neither refunded nor ranked; the hold-out gradient is
the example-weighted mean of the payers' gradients on their own validation data, one
gradient of the pooled rows up to floating-point rounding.

References
----------
Khan et al., IP-FL: Incentivized and Personalized Federated Learning (arXiv 2304.07514 v4),
Alg. 1-2; §4.2, Eq. 9-13; §4.3; App. H, Eq. 15-16.
Beutel et al. (2020), *Flower: A Friendly Federated Learning Research Framework*,
arXiv:2007.14390 (strategies, ClientApp mods).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from logging import INFO
from typing import cast

import numpy as np
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp.typing import ClientAppCallable, Mod
from flwr.common import log
from flwr.serverapp import Grid
from flwr.serverapp.strategy import Strategy

from games.ipfl import (
    IPFLConfig,
    Opening,
    TokenState,
    aggregation_weights,
    close_round,
    open_round,
    shapley_first_order,
)
from games.ipfl.config import FloatArray
from learning.runtimes.flower.compose import (
    QUALITY,
    QUALITY_EXAMPLES,
    QualityFn,
    checked_quality,
    only_record,
)
from learning.runtimes.flower.records import scalar
from learning.runtimes.flower.requests import checked_replies, source_node, wait_for_nodes

__all__ = [
    "GRADIENT",
    "GRADIENT_EXAMPLES",
    "PROFILE",
    "GradientFn",
    "LedgerRound",
    "TokenLedgerStrategy",
    "ledger_mod",
]

#: The config key of the ledger's profiling requests (an ``evaluate`` message).
PROFILE = "collabecon-ipfl-profile"

#: The array record of a profiling reply: the gradient of the mean validation loss.
GRADIENT = "gradient"

#: The metric of a profiling reply: how many validation examples the gradient rests on.
GRADIENT_EXAMPLES = "gradient-examples"

#: The App's gradient function: ``(arrays, context) -> (gradient, examples)``, the gradient of
#: the mean loss of the model ``arrays`` on the node's validation data, array by array.
GradientFn = Callable[[ArrayRecord, Context], tuple[ArrayRecord, int]]


def ledger_mod(quality: QualityFn, gradient: GradientFn) -> Mod:
    """A ClientApp mod that answers the ledger's profiling requests.

    ``quality(arrays, context)`` is the accuracy in [0, 1] of the model ``arrays`` on the
    node's validation data and the number of examples; ``gradient(arrays, context)`` the
    gradient of its mean loss there (an :class:`~flwr.app.ArrayRecord` of the model's
    parameters, by the model's names: the arrays the Shapley values are taken on) and the
    number of examples. A request whose config sets
    :data:`PROFILE` is answered here, with :data:`GRADIENT` and a ``"metrics"`` record of
    :data:`~learning.runtimes.flower.compose.QUALITY`,
    :data:`~learning.runtimes.flower.compose.QUALITY_EXAMPLES` and :data:`GRADIENT_EXAMPLES`;
    every other message goes to the App.

    Use as ``ClientApp(mods=[ledger_mod(my_accuracy, my_gradient)])``.

    Raises
    ------
    ValueError
        ``quality`` returned a value outside [0, 1] or fewer than one example, ``gradient``
        fewer than one example, or the request holds several array records.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, §4.2 (the profiler:
    the validation accuracy of Eq. 11) and App. H (the hold-out gradient of Eq. 15-16).
    """

    def mod(message: Message, context: Context, call_next: ClientAppCallable) -> Message:
        profile = any(PROFILE in c for c in message.content.config_records.values())
        sent = only_record(dict(message.content.array_records), "array record")
        if not profile or not isinstance(sent, ArrayRecord):
            return call_next(message, context)
        q, n = checked_quality(quality, sent, context)
        grad, m = gradient(sent, context)
        if int(m) < 1:
            raise ValueError(f"a gradient must rest on at least one example, got {m!r}")
        metrics = MetricRecord({QUALITY: q, QUALITY_EXAMPLES: n, GRADIENT_EXAMPLES: int(m)})
        return Message(RecordDict({GRADIENT: grad, "metrics": metrics}), reply_to=message)

    return mod


def _flat(record: ArrayRecord, names: list[str]) -> FloatArray:
    """The arrays ``names`` of ``record``, flattened and concatenated in float64.

    Raises
    ------
    ValueError
        ``record`` lacks one of them.
    """
    missing = [k for k in names if k not in record]
    if missing:
        raise ValueError(f"arrays {missing} are missing (expected {names})")
    return np.concatenate([record[k].numpy().astype(np.float64).ravel() for k in names])


class _Payers:
    """The grid the inner strategy sees: it lists the payers' nodes only."""

    def __init__(self, grid: Grid, nodes: list[int]) -> None:
        self._grid, self._nodes = grid, nodes

    def get_node_ids(self) -> list[int]:
        return list(self._nodes)

    def __getattr__(self, name: str) -> object:
        return getattr(self._grid, name)


@dataclass(frozen=True, slots=True)
class LedgerRound:
    """One round of the ledger, as :class:`TokenLedgerStrategy` played it.

    ``selected`` the nodes that paid (in a paid round) or were drawn (round 0), in the
    scheduler's order; ``trained`` those whose update came back, in the same order, with their
    ``contributions`` (Eq. 16); ``accuracy`` their mean validation accuracy of the aggregate
    (NaN when none trained); ``refund`` the refund fraction of Eq. 11; ``state`` the ledger
    after the round. ``available`` the clients that could be scheduled.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, Alg. 1.
    """

    round_index: int
    paid: bool
    available: np.ndarray
    selected: tuple[int, ...]
    trained: tuple[int, ...]
    contributions: FloatArray
    accuracy: float
    refund: float
    state: TokenState


class TokenLedgerStrategy(Strategy):
    r"""IP-FL's token ledger around an inner Flower strategy, with one cluster.

    The module docstring describes a round: the ledger opens it (bootstrap draw in round 0,
    then bids, selection and payment), the inner strategy trains on the payers' nodes only,
    the payers profile the aggregate (their ClientApps carry :func:`ledger_mod`) and the
    ledger closes the round with the refund and the rank rewards. Client :math:`i` of the
    ledger is the :math:`i`-th of the first ``n_clients`` node ids, sorted.

    Parameters
    ----------
    strategy : Strategy
        The inner strategy: its ``configure_train`` is given a ``Grid`` that lists only the
        payers' nodes (its ``min_available_nodes`` and ``min_train_nodes`` should be 1, as a
        round may have one payer; with ``fraction_train`` below 1 it samples among them),
        its ``aggregate_train`` makes the round's model, and its ``configure_evaluate`` and
        ``aggregate_evaluate`` run the evaluation on every node.
    n_clients : int
        The ledger's clients: the run waits for that many nodes before round 1.
    config : IPFLConfig, optional
        The mechanism's knobs (:class:`games.ipfl.IPFLConfig`: starting balance, price,
        refund cap and threshold, slots, RC behaviours).
    seed : int
        Round :math:`r`'s draws (bootstrap or explorers) come from
        ``numpy.random.default_rng([seed, r])``.
    timeout : float
        Seconds to wait for the nodes and for the profiling replies.

    Attributes
    ----------
    clients : list of int
        The node id of each client (empty before round 1).
    state : TokenState
        The ledger after the last round closed.
    rounds : list of LedgerRound
        Every round so far.

    Raises
    ------
    ValueError
        ``n_clients`` is below 1.

    References
    ----------
    Khan et al., IP-FL: Incentivized and Personalized Federated Learning, Alg. 1-2; §4.2,
    Eq. 9-13; §4.3; App. H, Eq. 16.

    Examples
    --------
    In a ServerApp's main, around flwr's FedAvg::

        strategy = TokenLedgerStrategy(
            FedAvg(min_train_nodes=1, min_available_nodes=1), n_clients=10
        )
        result = strategy.start(grid, ArrayRecord(model.state_dict()), num_rounds=5)
        print(strategy.state.ledger.tokens, strategy.state.ledger.pools)
    """

    def __init__(
        self,
        strategy: Strategy,
        *,
        n_clients: int,
        config: IPFLConfig | None = None,
        seed: int = 0,
        timeout: float = 600.0,
    ) -> None:
        if int(n_clients) < 1:
            raise ValueError(f"n_clients must be at least 1, got {n_clients!r}")
        self.strategy = strategy
        self.n_clients = int(n_clients)
        self.config = config or IPFLConfig()
        self.seed, self.timeout = int(seed), float(timeout)
        self.clients: list[int] = []
        self.state = TokenState.start(self.n_clients, 1, self.config)
        self.rounds: list[LedgerRound] = []
        self._grid: Grid | None = None
        self._opening: tuple[Opening, np.ndarray] | None = None

    def _ids(self, nodes: Iterable[int]) -> list[int]:
        index = {node: i for i, node in enumerate(self.clients)}
        return [index[int(n)] for n in nodes]

    # ------------------------------------------------------------------ Strategy

    def configure_train(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        """Open the round on the ledger; the inner strategy's messages to its payers.

        Parameters
        ----------
        server_round : int
            Flower's round, from 1: the ledger's round ``server_round - 1`` (round 0 free).
        arrays : ArrayRecord
            The model of the round, passed to the inner strategy.
        config : ConfigRecord
            Passed to the inner strategy.
        grid : Grid
            The nodes; the inner strategy gets a view of it with the payers' nodes only.

        Raises
        ------
        RuntimeError
            Fewer than ``n_clients`` nodes connected in time.
        ValueError
            The inner strategy's ``min_available_nodes`` or ``min_train_nodes`` exceeds the
            round's payers (it would wait for nodes that never join its view).
        """
        self._grid = grid
        if not self.clients:
            self.clients = wait_for_nodes(grid, self.n_clients, self.timeout)[: self.n_clients]
        r = server_round - 1
        connected = {int(n) for n in grid.get_node_ids()}
        available = np.array([node in connected for node in self.clients])
        scores = None if r == 0 else np.ones((self.n_clients, 1))
        opening = open_round(
            self.state,
            r,
            self.config,
            np.random.default_rng([self.seed, r]),
            scores=scores,
            available=available,
        )
        self._opening = (opening, available)
        payers = [self.clients[i] for i in opening.payers[0]]
        log(INFO, "token ledger: round %d, %d payers of %d", r, len(payers), self.n_clients)
        if not payers:
            return []
        for attribute in ("min_available_nodes", "min_train_nodes"):
            least = getattr(self.strategy, attribute, None)
            if isinstance(least, int) and least > len(payers):
                raise ValueError(
                    f"the inner strategy's {attribute}={least} exceeds the {len(payers)} "
                    f"payer(s) of round {r}, so it would wait for nodes forever; "
                    "set its min_available_nodes and min_train_nodes to 1"
                )
        messages = self.strategy.configure_train(
            server_round, arrays, config, cast(Grid, _Payers(grid, payers))
        )
        return [m for m in messages if int(m.metadata.dst_node_id) in payers]

    def aggregate_train(
        self, server_round: int, replies: Iterable[Message]
    ) -> tuple[ArrayRecord | None, MetricRecord | None]:
        """The inner strategy's aggregate; the payers profile it and the ledger settles.

        Returns
        -------
        arrays : ArrayRecord or None
            The inner strategy's aggregate.
        metrics : MetricRecord or None
            The inner strategy's metrics with the round's ``ledger-payers``,
            ``ledger-trained``, ``ledger-pool`` (after the round), ``ledger-refund`` and, when
            some payer trained, ``ledger-accuracy``.

        Raises
        ------
        RuntimeError
            Called before :meth:`configure_train`, or a profiling request failed.
        ValueError
            A reply lacks its model, ``num-examples`` or its gradient (the ClientApp lacks
            :func:`ledger_mod`).
        """
        if self._opening is None:
            raise RuntimeError("aggregate_train before configure_train")
        opening, available = self._opening
        self._opening = None
        got = [m for m in replies if not m.has_error()]
        arrays, metrics = self.strategy.aggregate_train(server_round, got)
        payers = [self.clients[i] for i in opening.payers[0]]
        back = {source_node(m): m for m in got if source_node(m) in payers}
        trained = [node for node in payers if node in back]
        accuracy, contributions = float("nan"), np.zeros(0)
        settled = dataclasses.replace(opening, payers=(np.array(self._ids(trained), np.int64),))
        if trained and arrays is not None:
            accuracy, contributions = self._profile(arrays, [back[n] for n in trained])
            state, refunds = close_round(settled, {0: accuracy}, {0: contributions}, self.config)
        else:
            state, refunds = close_round(settled, {}, {}, self.config)
        self.state = state
        self.rounds.append(
            LedgerRound(
                round_index=opening.round_index,
                paid=opening.paid,
                available=available,
                selected=tuple(payers),
                trained=tuple(trained),
                contributions=contributions,
                accuracy=accuracy,
                refund=float(refunds[0]),
                state=state,
            )
        )
        out = MetricRecord(
            {
                **(metrics or {}),
                "ledger-payers": len(payers),
                "ledger-trained": len(trained),
                "ledger-pool": float(state.ledger.pools[0]),
                "ledger-refund": float(refunds[0]),
            }
        )
        if trained:
            out["ledger-accuracy"] = accuracy
        return arrays, out

    def _profile(self, model: ArrayRecord, replies: list[Message]) -> tuple[float, FloatArray]:
        """The payers' mean accuracy of ``model`` and their Shapley values (Eq. 16).

        The values are taken on the arrays the gradients carry (the model's parameters).
        """
        assert self._grid is not None
        requests = [
            Message(
                RecordDict({"arrays": model, "config": ConfigRecord({PROFILE: True})}),
                dst_node_id=source_node(reply),
                message_type="evaluate",
            )
            for reply in replies
        ]
        profiles = checked_replies(
            self._grid.send_and_receive(requests, timeout=self.timeout),
            len(requests),
            "the ledger's profiling",
        )
        by_node = {source_node(p): p for p in profiles}
        accuracies, grads, weights = [], [], []
        for reply in replies:
            profile = by_node[source_node(reply)]
            grad = profile.content.array_records.get(GRADIENT)
            metrics = profile.content.metric_records.get("metrics")
            if grad is None or metrics is None or GRADIENT_EXAMPLES not in metrics:
                raise ValueError(
                    f"node {source_node(reply)} did not profile the model: its ClientApp "
                    "needs ledger_mod (learning.runtimes.flower.compose_ipfl)"
                )
            accuracies.append(float(scalar(metrics[QUALITY])))
            grads.append(grad)
            weights.append(float(scalar(metrics[GRADIENT_EXAMPLES])))
        names = list(grads[0])
        key = str(getattr(self.strategy, "weighted_by_key", "num-examples"))
        updates, sizes = [], []
        for reply in replies:
            update = only_record(dict(reply.content.array_records), "array record")
            record = only_record(dict(reply.content.metric_records), "metric record")
            if not isinstance(update, ArrayRecord) or not isinstance(record, MetricRecord):
                raise ValueError(f"node {source_node(reply)} replied to train without a model")
            if key not in record:
                raise ValueError(f"node {source_node(reply)} replied without {key!r}")
            updates.append(_flat(update, names))
            sizes.append(float(scalar(record[key])))
        gradients = np.stack([_flat(grad, names) for grad in grads])
        g = np.average(gradients, axis=0, weights=np.asarray(weights))
        lam = aggregation_weights(sizes, self.config)
        psi = shapley_first_order(g, np.stack(updates), _flat(model, names), lam)
        return float(np.mean(accuracies)), psi

    def configure_evaluate(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        """The inner strategy's evaluation messages."""
        return self.strategy.configure_evaluate(server_round, arrays, config, grid)

    def aggregate_evaluate(
        self, server_round: int, replies: Iterable[Message]
    ) -> MetricRecord | None:
        """The inner strategy's aggregate of the evaluation replies."""
        return self.strategy.aggregate_evaluate(server_round, replies)

    def summary(self) -> None:
        """Log the wrapper and the inner strategy's summary."""
        log(INFO, "\tIP-FL token ledger (Khan et al., Alg. 1, one cluster) around:")
        self.strategy.summary()

    # ------------------------------------------------------------------ the run

    def balances(self) -> dict[int, float]:
        """Each client's tokens after the last round, by node id (empty before round 1)."""
        tokens = self.state.ledger.tokens
        return {node: float(tokens[i]) for i, node in enumerate(self.clients)}

    def history(self) -> Iterator[dict[str, object]]:
        """Every round as a JSON-ready row: tokens by client, pool, payers, refund, accuracy."""
        for one in self.rounds:
            yield {
                "round": one.round_index,
                "paid": one.paid,
                "selected": list(one.selected),
                "trained": list(one.trained),
                "tokens": one.state.ledger.tokens.tolist(),
                "pool": float(one.state.ledger.pools[0]),
                "contributions": one.contributions.tolist(),
                "accuracy": one.accuracy,
                "refund": one.refund,
            }

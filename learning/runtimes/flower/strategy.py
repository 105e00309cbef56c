"""The ServerApp strategy that runs every split algorithm on Flower.

:class:`SplitStrategy` is a :class:`flwr.serverapp.strategy.Strategy` whose arrays are the
algorithm's state: ``configure_train`` draws the round's participants from the round's stream
(:func:`learning.rng.round_rng`, as :func:`learning.loop.run_rounds` does), calls
:meth:`~learning.algorithms.base.SplitAlgorithm.dispatch` and sends each participant its rows,
the common tensors and the stream's state; ``aggregate_train`` stacks the replies in client
order and calls :meth:`~learning.algorithms.base.SplitAlgorithm.server_update`; a round of
several exchanges (:class:`~learning.algorithms.base.MultiExchange`: CoBo's midpoint
gradients, then its local steps) runs its further exchanges there, on the grid of
``configure_train``, each from the ``next_dispatch`` of the replies before it. A survey
runs inside ``configure_train`` (it has the grid), before the dispatch; the finish exchange
and a last evaluation of the finished models follow the rounds. The server's
:class:`~learning.algorithms.Context` holds the reported training-set sizes and no example.
:func:`learning.runtimes.flower.apps.serve` runs it on a grid.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from logging import INFO
from typing import Any

import numpy as np
import torch
from flwr.app import (
    ArrayRecord,
    ConfigRecord,
    Message,
    MetricRecord,
    MetricRecordValues,
    RecordDict,
)
from flwr.common import log
from flwr.serverapp import Grid
from flwr.serverapp.strategy import Strategy

from learning.algorithms import Dispatch, SplitAlgorithm, State
from learning.algorithms.exchanges import FinishExchange, MultiExchange, Survey
from learning.engine import Params
from learning.loop import RoundRecord
from learning.rng import round_rng
from learning.runtimes.flower.records import pack, record_of, rows, scalar, stack, unpack
from learning.runtimes.flower.requests import checked_replies, source_node
from learning.runtimes.flower.streams import stream_state
from learning.train import TrainConfig

__all__ = ["SplitStrategy"]


class SplitStrategy(Strategy):
    """The server half of a :class:`~learning.algorithms.base.SplitAlgorithm` as a Flower strategy.

    The module docstring describes its rounds.

    Parameters
    ----------
    algorithm : SplitAlgorithm
        Built on the server's context (reported sizes, no examples).
    nodes : list of int
        Flower node id of client ``k`` at position ``k``.
    base : dict
        Settings every message carries (the run's JSON, the nodes' data directory).
    entropy : int
        Root of the run's streams (:mod:`learning.rng`).
    config : TrainConfig
        The run (participants per round, evaluation schedule).
    """

    def __init__(
        self,
        algorithm: SplitAlgorithm,
        nodes: list[int],
        base: dict[str, Any],
        entropy: int,
        config: TrainConfig,
        initial_held: State | None = None,
        timeout: float = 600.0,
    ) -> None:
        self.algorithm = algorithm
        self.timeout = timeout
        self.held = algorithm.client_held
        self.initial_held = initial_held or {}
        self.delivered: set[int] = set()
        self.reported: Params | None = None
        self.nodes = nodes
        self.base = base
        self.entropy = entropy
        self.config = config
        self.sizes = algorithm.ctx.train.sizes_numpy()
        self.state: State = {}
        self.history: list[RoundRecord] = []
        self.train_loss: dict[int, float] = {}
        self.evaluation: dict[str, np.ndarray] = {}
        self._round: tuple[State, np.ndarray, np.ndarray, np.random.Generator, State] | None = None
        self._grid: Grid | None = None

    def _state(self, arrays: ArrayRecord) -> State:
        return unpack(arrays.to_torch_state_dict(), "state", self.algorithm.ctx.device)

    def _messages(
        self,
        sent: Dispatch,
        working: np.ndarray,
        phase: str,
        rng: np.random.Generator | None,
    ) -> list[Message]:
        """One message per client of ``working``.

        Each carries the client's rows of ``sent``, the common tensors, the settings, and
        (with ``rng``) the stream its minibatches come from.
        """
        train = phase == "train"
        settings: dict[str, Any] = {
            **self.base,
            "phase": phase,
            "algorithm": self.algorithm.name,
            "client-params": json.dumps(self.algorithm.client_arguments()),
            "options": json.dumps(sent.config),
            "held": json.dumps(list(self.held) if train else []),
        }
        if rng is not None:
            settings["stream"] = stream_state(rng)
            settings["rows"] = int(working.size)
            settings["width"] = int(self.sizes[working].max())
        common = pack(sent.common, "common")
        return [
            Message(
                RecordDict(
                    {
                        "arrays": ArrayRecord(
                            {
                                **pack(rows(sent.each, i), "each"),
                                **common,
                                **(self._first(int(k)) if train else {}),
                            }
                        ),
                        "config": ConfigRecord({**settings, "row": i}),
                    }
                ),
                dst_node_id=self.nodes[int(k)],
                message_type="train" if phase != "survey" else "query",
            )
            for i, k in enumerate(working)
        ]

    def _replies(self, replies: Iterable[Message], working: np.ndarray, what: str) -> State:
        """The replies of ``working``, stacked in its order on the server's device."""
        got = checked_replies(replies, working.size, what)
        by_node = {source_node(m): m for m in got}
        ordered = [
            unpack(
                record_of(
                    by_node[self.nodes[int(k)]].content, "reply", ArrayRecord
                ).to_torch_state_dict(),
                "reply",
            )
            for k in working
        ]
        return _to(stack(ordered), self.algorithm.ctx.device)

    def exchange(
        self,
        grid: Grid,
        sent: Dispatch,
        working: np.ndarray,
        phase: str,
        rng: np.random.Generator | None,
    ) -> State:
        """Send ``sent`` to ``working`` for the client half ``phase``; the stacked replies.

        Waits for every reply.
        """
        messages = self._messages(sent, working, phase, rng)
        return self._replies(grid.send_and_receive(messages, timeout=self.timeout), working, phase)

    def configure_train(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        """The messages that start round ``server_round``: each participant's dispatch.

        Draws the round's participants from the round's stream (:func:`learning.rng.round_rng`,
        all clients unless ``clients_per_round`` is set), runs the algorithm's survey first when
        it has one (:class:`~learning.algorithms.base.Survey`), then
        :meth:`~learning.algorithms.base.SplitAlgorithm.dispatch`; the round is kept for
        :meth:`aggregate_train`.

        Parameters
        ----------
        server_round : int
            The round, from 1.
        arrays : ArrayRecord
            The algorithm's state after the previous round.
        config : ConfigRecord
            Unused: the settings come from the run's :class:`~learning.train.TrainConfig`.
        grid : Grid
            The nodes; the survey and the round's further exchanges go through it.

        Returns
        -------
        list of Message
            One ``train`` message per client that works in the round.

        Raises
        ------
        RuntimeError
            A node failed or did not answer the survey in time.
        """
        state = self._state(arrays)
        n = len(self.nodes)
        rng = round_rng(self.entropy, server_round - 1)
        per_round = self.config.clients_per_round
        clients = (
            np.arange(n)
            if per_round is None
            else np.sort(rng.choice(n, size=per_round, replace=False))
        )
        algorithm = self.algorithm
        if isinstance(algorithm, Survey):
            asked = algorithm.survey(state, clients)
            if asked is not None:
                answers = self.exchange(grid, asked, clients, "survey", None)
                state = algorithm.server_survey(state, clients, answers)
        sent = algorithm.dispatch(state, clients, rng)
        working = sent.working(clients)
        self._round = (state, clients, working, rng, sent.plan)
        self._grid = grid
        return self._messages(sent, working, "train", rng)

    def aggregate_train(
        self, server_round: int, replies: Iterable[Message]
    ) -> tuple[ArrayRecord | None, MetricRecord | None]:
        """The algorithm's state after round ``server_round``, from its participants' replies.

        The replies are stacked in client order; a round of several exchanges
        (:class:`~learning.algorithms.base.MultiExchange`) sends each further dispatch and
        stacks its replies; then :meth:`~learning.algorithms.base.SplitAlgorithm.server_update`.

        Parameters
        ----------
        server_round : int
            The round, from 1.
        replies : iterable of Message
            The replies to :meth:`configure_train`'s messages.

        Returns
        -------
        arrays : ArrayRecord
            The new state, also kept as :attr:`state`.
        metrics : MetricRecord
            The update's metrics (``train_loss`` among them, kept by round).

        Raises
        ------
        RuntimeError
            Called before :meth:`configure_train`, or a node failed or did not answer in time.
        """
        if self._round is None or self._grid is None:
            raise RuntimeError("aggregate_train before configure_train")
        state, clients, working, rng, plan = self._round
        what = f"round {server_round}"
        stacked = self._replies(replies, working, what)
        self.delivered.update(int(k) for k in working)
        current = {**state, **plan}
        algorithm = self.algorithm
        following = (
            algorithm.next_dispatch(current, clients, stacked)
            if isinstance(algorithm, MultiExchange)
            else None
        )
        while following is not None:  # the round's further exchanges
            working = following.working(clients)
            messages = self._messages(following, working, "train", rng)
            got = self._grid.send_and_receive(messages, timeout=self.timeout)
            stacked = self._replies(got, working, what)
            self.delivered.update(int(k) for k in working)
            current = {**state, **following.plan}
            assert isinstance(algorithm, MultiExchange)
            following = algorithm.next_dispatch(current, clients, stacked)
        self.state, metrics = algorithm.server_update(current, clients, stacked, rng)
        self.train_loss[server_round] = float(metrics["train_loss"])
        return ArrayRecord(pack(self.state, "state")), MetricRecord(
            {k: float(v) for k, v in metrics.items()}
        )

    def configure_evaluate(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        """The messages that ask every node to evaluate its model after ``server_round``.

        None except every ``eval_every`` rounds and after the last round. A client-held model
        (the algorithm's ``client_model``) stays on its node, which reports it after the last
        round; otherwise each node gets its row of the algorithm's client models.

        Parameters
        ----------
        server_round : int
            The round just trained, from 1.
        arrays : ArrayRecord
            The algorithm's state after that round.
        config : ConfigRecord
            Unused: the schedule comes from the run's :class:`~learning.train.TrainConfig`.
        grid : Grid
            Unused: the messages name their nodes.

        Returns
        -------
        list of Message
            One ``evaluate`` message per node, or none in a round without evaluation.
        """
        if server_round % self.config.eval_every and server_round != self.config.rounds:
            return []
        key = self.algorithm.client_model
        if key is not None:
            settings = {
                **self.base,
                "model-held": key,
                "report": server_round == self.config.rounds,
            }
            return [
                Message(
                    RecordDict(
                        {
                            "arrays": ArrayRecord(self._first(k)),
                            "config": ConfigRecord(settings),
                        }
                    ),
                    dst_node_id=node,
                    message_type="evaluate",
                )
                for k, node in enumerate(self.nodes)
            ]
        return self._evaluate_messages(self.algorithm.client_models(self._state(arrays)))

    def _evaluate_messages(self, models: Params) -> list[Message]:
        """Every node's evaluation of its row of ``models`` on its own test set."""
        return [
            Message(
                RecordDict(
                    {
                        "arrays": ArrayRecord(pack(rows(models, k), "model")),
                        "config": ConfigRecord({**self.base, "model-held": ""}),
                    }
                ),
                dst_node_id=node,
                message_type="evaluate",
            )
            for k, node in enumerate(self.nodes)
        ]

    def aggregate_evaluate(
        self, server_round: int, replies: Iterable[Message]
    ) -> MetricRecord | None:
        """The nodes' mean test loss and accuracy after ``server_round``, added to the history.

        Each node's values are kept as :attr:`evaluation` and the round's
        :class:`~learning.loop.RoundRecord` is appended to :attr:`history`; after the last
        round the client-held models the nodes report are kept as :attr:`reported`.

        Parameters
        ----------
        server_round : int
            The round evaluated, from 1.
        replies : iterable of Message
            The replies to :meth:`configure_evaluate`'s messages, one per node.

        Returns
        -------
        MetricRecord
            ``test_loss`` and, for classification, ``test_accuracy``: unweighted means over
            the nodes.

        Raises
        ------
        RuntimeError
            A node failed or did not answer in time.
        """
        got = checked_replies(replies, len(self.nodes), f"evaluation after round {server_round}")
        if self.algorithm.client_model is not None and server_round == self.config.rounds:
            contents = {source_node(m): m.content for m in got}
            self.reported = stack(
                [
                    unpack(
                        record_of(contents[node], "model", ArrayRecord).to_torch_state_dict(),
                        "model",
                    )
                    for node in self.nodes
                ]
            )
        loss, accuracy = self._read_evaluation(got)
        record = RoundRecord(
            server_round,
            self.train_loss[server_round],
            float(loss.mean()),
            None if accuracy is None else float(accuracy.mean()),
        )
        self.history.append(record)
        out: dict[str, MetricRecordValues] = {"test_loss": record.test_loss}
        if record.test_accuracy is not None:
            out["test_accuracy"] = record.test_accuracy
        return MetricRecord(out)

    def _read_evaluation(self, got: list[Message]) -> tuple[np.ndarray, np.ndarray | None]:
        """Each node's test loss and accuracy (None for regression), in client order.

        Kept as the run's latest :attr:`evaluation`.
        """
        by_node = {source_node(m): record_of(m.content, "metrics", MetricRecord) for m in got}
        ordered = [by_node[node] for node in self.nodes]
        loss = np.array([float(scalar(m["loss"])) for m in ordered])
        accuracy = (
            np.array([float(scalar(m["accuracy"])) for m in ordered])
            if "accuracy" in ordered[0]
            else None
        )
        self.evaluation = {"loss": loss} | ({} if accuracy is None else {"accuracy": accuracy})
        return loss, accuracy

    def finish(self, grid: Grid, rng: np.random.Generator) -> State:
        """The algorithm's finish exchange with every node after the last round.

        Then every node's evaluation of its finished model; the state as it was without a
        finish exchange.
        """
        algorithm = self.algorithm
        if not isinstance(algorithm, FinishExchange):
            return self.state
        sent = algorithm.final_dispatch(self.state)
        if sent is None:
            return self.state
        if self.held:  # its evaluation would read the nodes' held models; none registered
            raise ValueError(f"{algorithm.name}: a final exchange with client-held state")
        everyone = np.arange(len(self.nodes))
        replies = self.exchange(grid, sent, everyone, "finish", rng)
        state = algorithm.server_finish(self.state, replies)
        messages = self._evaluate_messages(self.algorithm.client_models(state))
        got = checked_replies(
            grid.send_and_receive(messages, timeout=self.timeout), everyone.size, "evaluation"
        )
        self._read_evaluation(got)
        return state

    def _first(self, k: int) -> dict[str, torch.Tensor]:
        """Client ``k``'s initial client-held rows, until it has them."""
        if not self.held or k in self.delivered:
            return {}
        return pack(rows(self.initial_held, k), "held")

    def summary(self) -> None:
        """Log the strategy in one line: the algorithm's name and the number of nodes."""
        log(INFO, "\t%s on %d nodes (collabecon split)", self.algorithm.name, len(self.nodes))


def _to(value: Any, device: torch.device) -> Any:
    if isinstance(value, dict):
        return {k: _to(v, device) for k, v in value.items()}
    return value.to(device)

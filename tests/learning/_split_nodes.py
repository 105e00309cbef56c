"""A federation of one-client nodes without Flower, for testing an algorithm's split.

:func:`node_by_node` runs a :class:`~learning.algorithms.base.SplitAlgorithm` the way
:mod:`learning.runtimes.flower.apps` does: the server's algorithm is built on a context that holds the
clients' training-set sizes and no example, every node's client half on a one-client context
of its own data with minibatches from its row of the round's stream
(:class:`learning.runtimes.flower.streams.RowStream`, which refuses any other draw), client-held rows
kept by the nodes, and the server's generator not advanced by the nodes' draws. Comparing it
with :func:`batched` (every client half at once, :meth:`SplitAlgorithm.round`) shows that the
two halves are a federation: the server reads no client data and the nodes draw only their
rows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from learning.algorithms import Context, Dispatch, SplitAlgorithm, State
from learning.algorithms.exchanges import FinishExchange, MultiExchange, Survey
from learning.engine import Params, ShardedData
from learning.runtimes.flower.records import rows, stack
from learning.runtimes.flower.streams import RowStream, stream_state

Build = Callable[[Context], SplitAlgorithm]


def _client(data: ShardedData, k: int) -> ShardedData:
    start, size = int(data.offsets[k]), int(data.sizes[k])
    return ShardedData(
        x=data.x[start : start + size],
        y=data.y[start : start + size],
        offsets=torch.zeros(1, dtype=torch.long),
        sizes=data.sizes[k : k + 1].clone(),
    )


def node_contexts(ctx: Context) -> list[Context]:
    """One one-client context per client of ``ctx``: its own training and test data."""
    return [
        replace(
            ctx,
            train=_client(ctx.train, k),
            test=_client(ctx.test, k),
            clusters=np.zeros(1, dtype=np.int64),
        )
        for k in range(ctx.n_clients)
    ]


def server_context(ctx: Context) -> Context:
    """The server's context: the training-set sizes, no example."""
    nothing = torch.empty(0)
    sizes = ctx.train.sizes.clone()
    data = ShardedData(nothing, nothing, torch.zeros_like(sizes), sizes)
    return replace(ctx, train=data, test=data)


def _one(sent: Dispatch, i: int, extra: State) -> Dispatch:
    return Dispatch({**rows(sent.each, i), **extra}, sent.common, sent.config)


def _draws(sizes: np.ndarray, working: np.ndarray, rng: np.random.Generator, n: int) -> Any:
    state, width = stream_state(rng), int(sizes[working].max())
    return [RowStream(state, i, n, width) for i in range(n)]


class NodeFederation:
    """The server's algorithm and one node algorithm per client (module docstring)."""

    def __init__(self, build: Build, ctx: Context) -> None:
        self.server = build(server_context(ctx))
        self.contexts = node_contexts(ctx)
        self.nodes = [build(c) for c in self.contexts]
        self.sizes = ctx.train.sizes_numpy()
        self.held: dict[int, State] = {}

    def init(self, models: Params, rng: np.random.Generator) -> State:
        state = self.server.init(models, rng)
        for key in self.server.client_held:
            value = state.pop(key)
            for k in range(len(self.nodes)):
                self.held.setdefault(k, {})[key] = (
                    rows(value, k) if isinstance(value, dict) else value[k : k + 1]
                )
        return state

    def round(
        self, state: State, clients: np.ndarray, rng: np.random.Generator
    ) -> tuple[State, dict[str, float]]:
        server = self.server
        clients = np.asarray(clients, dtype=np.int64)
        asked = server.survey(state, clients) if isinstance(server, Survey) else None
        if asked is not None and isinstance(server, Survey):
            answers = [
                self.nodes[k].client_survey(self.contexts[k], _one(asked, i, {}), np.array([0]))
                for i, k in enumerate(clients)
            ]
            state = server.server_survey(state, clients, stack(answers))
        sent: Dispatch | None = server.dispatch(state, clients, rng)
        held = server.client_held
        while sent is not None:
            working = sent.working(clients)
            streams = _draws(self.sizes, working, rng, working.size)
            replies = []
            for i, k in enumerate(working):
                mine = _one(sent, i, self.held.get(int(k), {}) if held else {})
                reply = self.nodes[k].client_update(
                    self.contexts[k], mine, np.array([0]), streams[i]
                )
                if held:
                    self.held[int(k)] = {key: reply.pop(key) for key in held}
                replies.append(reply)
            current = {**state, **sent.plan}
            sent = (
                server.next_dispatch(current, clients, stack(replies))
                if isinstance(server, MultiExchange)
                else None
            )
        return server.server_update(current, clients, stack(replies), rng)

    def finish(self, state: State, rng: np.random.Generator) -> State:
        server = self.server
        if not isinstance(server, FinishExchange):
            return state
        sent = server.final_dispatch(state)
        if sent is None:
            return state
        everyone = np.arange(len(self.nodes))
        streams = _draws(self.sizes, everyone, rng, everyone.size)
        replies = [
            node.client_finish(ctx, _one(sent, k, {}), np.array([0]), streams[k])
            for k, (node, ctx) in enumerate(zip(self.nodes, self.contexts, strict=True))
        ]
        return self.server.server_finish(state, stack(replies))

    def client_models(self, state: State) -> Params:
        key = self.server.client_model
        if key is None:
            return self.server.client_models(state)
        return stack([self.held[k][key] for k in range(len(self.nodes))])


def _participants(n: int, per_round: int | None, rng: np.random.Generator) -> np.ndarray:
    if per_round is None:
        return np.arange(n)
    return np.sort(rng.choice(n, size=per_round, replace=False))


def run(
    federation: Any,
    models: Params,
    rounds: int,
    seed: int,
    per_round: int | None = None,
) -> tuple[State, Params, list[float]]:
    """``rounds`` rounds and the finish of ``federation`` (a :class:`NodeFederation` or a
    :class:`SplitAlgorithm`), each round's participants and stream drawn from ``seed`` as the
    round loop draws them; returns the state, the client models and the training losses."""
    n = models[next(iter(models))].shape[0]
    state = federation.init(models, np.random.default_rng([seed, 0]))
    losses = []
    for r in range(rounds):
        rng = np.random.default_rng([seed, 1, r])
        clients = _participants(n, per_round, rng)
        state, metrics = federation.round(state, clients, rng)
        losses.append(float(metrics["train_loss"]))
    state = federation.finish(state, np.random.default_rng([seed, 2]))
    return state, federation.client_models(state), losses


def largest_difference(a: Params, b: Params) -> float:
    """The largest absolute difference between two stacked parameter sets."""
    return max(float((a[k].cpu() - b[k].cpu()).abs().max()) for k in a)

"""Every algorithm with a client half is a federation: run node by node (one-client
contexts, the server with the training-set sizes only, each node drawing only its row of
the round's stream) it gives the batched engine's models and training losses, with plain
local SGD and with DP-SGD local training."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from learning.algorithms import ALGORITHMS, SplitAlgorithm, build_algorithm
from learning.dp import DPSGDSettings
from tests.learning._split_nodes import NodeFederation, largest_difference, run
from tests.learning._tiny_problem import initial_models, tiny_context

#: DP-SGD local training (batches of 3: the smallest client holds 3 examples).
DP = {"batch_size": 3, "dp": DPSGDSettings(max_grad_norm=1.0, noise_multiplier=1.1)}

#: (algorithm, parameters, participants per round[, local-training settings]): every federated
#: algorithm at least once.
CASES = [
    ("fedavg", {}, None),
    ("fedavg", {"finetune_steps": 2}, 3),
    ("fedavg", {"keep_momentum": "client"}, 3),
    ("local", {}, None),
    ("oracle", {"keep_momentum": "group"}, 4),
    ("fedprox", {"mu": 0.1}, 3),
    ("robust-fedavg", {}, None),
    ("cfl", {}, None),
    ("ifca", {"n_clusters": 2}, 3),
    ("ifca", {"n_clusters": 2, "option": "model"}, None),
    ("hypcluster", {"n_clusters": 2}, None),
    ("ditto", {}, 3),
    ("ditto", {"variant": "as-run"}, None),
    ("federated-clustering", {}, 4),
    ("fedsoft", {"tau": 1, "selection_size": 2}, 3),
    ("fedsoft", {"tau": 2, "clusters": 3}, None),
    ("fedsoft", {"tau": 2, "selection_size": 2, "lam": 0.1}, 4),
    ("federated-clustering", {"groups": 2}, None),
    ("federated-clustering", {"groups": 2, "variant": "as-run"}, 3),
    ("myopic-clustering", {}, 3),
    ("myopic-clustering", {"n_clusters": 3}, None),
    ("momentum-clustering", {}, 4),
    ("momentum-clustering", {"n_clusters": 3, "reseed": False}, None),
    ("per-fedavg", {"beta": 0.01}, 3),
    ("knn-per", {"k": 3}, None),
    ("fedavg", {}, None, DP),
    ("fedavg", {"finetune_steps": 2, "keep_momentum": "client"}, 3, DP),
    ("local", {}, None, DP),
    ("fedem", {}, None),
    ("fedem", {"components": 3}, 3),
    ("cobo", {}, None),
    ("cobo", {"schedule": "all", "gamma": 0.5, "pair_batch_size": 5}, 4),
    ("cobo", {"schedule": "all", "domain": "simplex"}, 3),
]


def _id(case) -> str:
    name, params, per_round, *local = case
    extra = ",".join(f"{k}={v}" for k, v in params.items())
    return f"{name}[{extra}]/{per_round or 'all'}" + ("/dp" if local else "")


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_node_by_node_gives_the_batched_models(case):
    name, params, per_round, *local = case
    ctx = tiny_context(steps=2)
    if local:
        ctx = replace(ctx, local=replace(ctx.local, **local[0]))

    def build(c):
        return build_algorithm(name, c, **params)

    models = initial_models(ctx)
    _, batched, losses = run(build(ctx), models, rounds=3, seed=11, per_round=per_round)
    _, nodes, node_losses = run(
        NodeFederation(build, ctx), models, rounds=3, seed=11, per_round=per_round
    )
    assert largest_difference(batched, nodes) <= 1e-6
    np.testing.assert_allclose(node_losses, losses, rtol=1e-6)


def test_every_registered_algorithm_is_split_and_has_a_case():
    split = {n for n, cls in ALGORITHMS.items() if issubclass(cls, SplitAlgorithm)}
    assert split == set(ALGORITHMS) == {case[0] for case in CASES}


def test_the_finish_exchange_hands_each_client_its_held_rows_and_keeps_its_reply():
    """In process, a :class:`FinishExchange` with client-held state gives every client its
    held rows and writes back the held entries of its reply; the server's half sees none."""
    from learning.algorithms import Dispatch
    from learning.algorithms.ditto import Ditto
    from learning.algorithms.exchanges import FinishExchange

    seen = []

    class ShiftedDitto(Ditto, FinishExchange):
        def final_dispatch(self, state):
            return Dispatch(each={}, common={}, config={})

        def client_finish(self, ctx, sent, clients, rng):
            return {"personal": {k: v + 1 for k, v in sent.each["personal"].items()}}

        def server_finish(self, state, replies):
            seen.append(set(replies))
            return state

    ctx = tiny_context(steps=1)
    algorithm = ShiftedDitto(ctx)
    state = algorithm.init(initial_models(ctx), np.random.default_rng(0))
    done = algorithm.finish(state, np.random.default_rng(1))
    assert seen == [set()]
    for name, value in state["personal"].items():
        assert torch.equal(done["personal"][name], value + 1)

"""Every algorithm with a client half is a federation: run node by node (one-client
contexts, the server with the training-set sizes only, each node drawing only its row of
the round's stream) it gives the batched engine's models and training losses."""

from __future__ import annotations

import numpy as np
import pytest

from learning.algorithms import ALGORITHMS, SplitAlgorithm, build_algorithm
from tests.learning._split_nodes import NodeFederation, largest_difference, run
from tests.learning._tiny_problem import initial_models, tiny_context

#: (algorithm, parameters, participants per round): every federated algorithm at least once.
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
    ("fedem", {}, None),
    ("fedem", {"components": 3}, 3),
]


def _id(case) -> str:
    name, params, per_round = case
    extra = ",".join(f"{k}={v}" for k, v in params.items())
    return f"{name}[{extra}]/{per_round or 'all'}"


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_node_by_node_gives_the_batched_models(case):
    name, params, per_round = case
    ctx = tiny_context(steps=2)

    def build(c):
        return build_algorithm(name, c, **params)

    models = initial_models(ctx)
    _, batched, losses = run(build(ctx), models, rounds=3, seed=11, per_round=per_round)
    _, nodes, node_losses = run(
        NodeFederation(build, ctx), models, rounds=3, seed=11, per_round=per_round
    )
    assert largest_difference(batched, nodes) <= 1e-6
    np.testing.assert_allclose(node_losses, losses, rtol=1e-6)


def test_every_federated_algorithm_has_a_case():
    federated = {
        n for n, cls in ALGORITHMS.items() if issubclass(cls, SplitAlgorithm) and cls.federated
    }
    assert federated <= {name for name, _, _ in CASES}

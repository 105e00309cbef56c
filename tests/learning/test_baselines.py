"""IFCA, HypCluster, CFL, Ditto and kNN-Per: the CFL toy failure (Werner et al. 2023, §2.1,
Example 3) and what each baseline promises."""

import dataclasses
import itertools

import numpy as np
import pytest
import torch
from scipy.stats import binomtest

from learning.algorithms import build_algorithm
from learning.algorithms.cfl import cosine_bipartition
from learning.algorithms.knn_per import LAMBDA_GRID, knn_probabilities
from learning.engine import ShardedData
from learning.loop import run_rounds
from learning.rng import round_rng
from learning.runtimes.flower.records import stack
from learning.runtimes.flower.streams import RowStream, stream_state
from tests.learning._split_nodes import node_contexts, server_context
from tests.learning._tiny_problem import CLUSTERS, initial_models, tiny_context
from tests.learning.test_federated_clustering import _toy_context


@pytest.mark.parametrize("x", [1 / 4, 1 / 3])
def test_cfl_first_split_separates_clients_2_and_3_half_the_time(x):
    rng = np.random.default_rng(0)
    seeds = 1000
    separated = 0
    for _ in range(seeds):
        g3 = x if rng.random() < 0.5 else x - 1.0
        labels = cosine_bipartition(torch.tensor([[x], [x - 0.5], [g3]]))
        separated += int(labels[1] != labels[2])
    assert 0.45 < separated / seeds < 0.55
    assert binomtest(separated, seeds, 0.5).pvalue > 1e-3


def test_cfl_splits_once_thresholds_allow_and_never_merges():
    ctx = tiny_context()
    algorithm = build_algorithm("cfl", ctx, eps1=1e6, eps2=1e-9, min_round=1)
    state = algorithm.init(initial_models(ctx), np.random.default_rng(0))
    sizes = []
    for r in range(4):
        state, _ = algorithm.round(state, np.arange(5), round_rng(0, r))
        sizes.append(next(iter(state["groups"].values())).shape[0])
    assert sizes[0] == 1 and sizes[1] == 2
    assert all(a <= b for a, b in itertools.pairwise(sizes))
    never = build_algorithm("cfl", ctx)  # reference thresholds, min_round 20
    result = run_rounds(never, initial_models(ctx), 2, 0)
    assert next(iter(result.state["groups"].values())).shape[0] == 1


def test_ditto_without_pull_is_local_training_and_with_pull_moves_toward_global():
    ctx = tiny_context()
    free = run_rounds(build_algorithm("ditto", ctx, lam=0.0), initial_models(ctx), 2, 0)
    pulled = run_rounds(build_algorithm("ditto", ctx, lam=5.0), initial_models(ctx), 2, 0)

    def spread(models):
        flat = torch.cat([v.reshape(5, -1) for v in models.values()], 1)
        return float((flat - flat.mean(0)).norm(dim=1).mean())

    assert spread(pulled.models) < spread(free.models)


def test_ifca_gives_members_of_a_cluster_one_model():
    ctx = tiny_context()
    result = run_rounds(build_algorithm("ifca", ctx, option="model"), initial_models(ctx), 2, 0)
    assignment = result.state["assignment"]
    flat = torch.cat([v.reshape(5, -1) for v in result.models.values()], 1)
    for a in range(5):
        for b in range(5):
            if assignment[a] == assignment[b]:
                assert torch.equal(flat[a], flat[b])
    # random initialisation: the cluster models differ
    clusters = result.state["clusters"]
    assert not torch.equal(clusters["0.weight"][0], clusters["0.weight"][1])
    algorithm = build_algorithm("ifca", ctx, option="model")
    assert algorithm.cluster_models(result.state) is clusters


def test_hypcluster_assigns_by_the_full_training_loss():
    ctx = tiny_context()
    algorithm = build_algorithm("hypcluster", ctx)
    state = algorithm.init(initial_models(ctx), np.random.default_rng(0))
    chosen = algorithm.choose(state["clusters"], np.arange(5), np.random.default_rng(0))
    k = algorithm.n_clusters
    for i in range(5):
        losses = [
            float(
                ctx.engine.evaluate(
                    {n: v[j : j + 1] for n, v in state["clusters"].items()},
                    ctx.train,
                    np.array([i]),
                ).loss[0]
            )
            for j in range(k)
        ]
        assert int(chosen[i]) == int(np.argmin(losses))
    assert k == np.unique(CLUSTERS).size


def test_knn_probabilities_and_personalised_evaluation():
    keys = torch.tensor([[0.0, 0.0], [0.1, 0.0], [5.0, 5.0]])
    labels = torch.tensor([1, 1, 0])
    p = knn_probabilities(keys, labels, torch.tensor([[0.0, 0.05]]), 2, 2, 1.0)
    assert torch.allclose(p, torch.tensor([[0.0, 1.0]]))
    ctx = tiny_context()
    algorithm = build_algorithm("knn-per", ctx)
    result = run_rounds(algorithm, initial_models(ctx), 2, 0)
    evaluation, lam = algorithm.evaluate(result.state, np.random.default_rng(0))
    assert evaluation.accuracy.shape == (5,) and 0.0 <= lam <= 1.0
    global_only = build_algorithm("knn-per", ctx, lam=0.0).evaluate(
        result.state, np.random.default_rng(0)
    )[0]
    assert np.allclose(global_only.accuracy, result.evaluation.accuracy)


def test_knn_per_evaluation_client_by_client_gives_the_in_process_numbers():
    """kNN-Per's personalised evaluation as a federation: every node reports its held-out
    cross-entropies from its own training set (its held-out fifth from its row of the key
    block) and then its mixture's test loss and accuracy; the server, which holds no example,
    takes the argmin of the pooled reports and collects the rest. Both equal
    :meth:`KNNPer.evaluate` on the whole federation."""
    ctx = tiny_context()
    algorithm = build_algorithm("knn-per", ctx, k=3)
    state = run_rounds(algorithm, initial_models(ctx), 2, 0).state
    expected, expected_lam = algorithm.evaluate(state, np.random.default_rng(4))

    server = build_algorithm("knn-per", server_context(ctx), k=3)
    contexts = node_contexts(ctx)
    nodes = [build_algorithm("knn-per", c, **algorithm.client_arguments()) for c in contexts]
    model = server.global_model(state)
    stream, sizes = stream_state(np.random.default_rng(4)), ctx.train.sizes_numpy()
    held_out = stack(
        [
            {"held": node.client_held_out(c, model, np.array([0]), RowStream(stream, i, 5, 20))}
            for i, (node, c) in enumerate(zip(nodes, contexts, strict=True))
        ]
    )["held"]
    assert sizes.max() == 20 and held_out.shape == (5, len(LAMBDA_GRID))
    lam = server.pool_lambda(held_out)
    assert lam == expected_lam
    reports = stack(
        [
            node.client_evaluation(c, model, np.array([0]), lam)
            for node, c in zip(nodes, contexts, strict=True)
        ]
    )
    evaluation = server.pool_evaluation(reports)
    np.testing.assert_array_equal(evaluation.n, expected.n)
    np.testing.assert_allclose(evaluation.loss, expected.loss, rtol=1e-6)
    np.testing.assert_allclose(evaluation.accuracy, expected.accuracy, rtol=0, atol=1e-12)
    pooled = held_out.sum(dim=0)
    assert float(pooled[LAMBDA_GRID.index(lam)]) == float(pooled.min())


def test_ifca_momentum_buffer_persists_across_a_cluster_switch():
    # one client, loss (w - 0)^2, gradient 2w; lr 0.1; server step divided by N = 1
    def two_rounds(momentum, dampening=0.0):
        algorithm = build_algorithm(
            "ifca", _toy_context([0.0]), momentum=momentum, dampening=dampening
        )
        state = algorithm.init({"weight": torch.zeros(1, 1, 1)}, np.random.default_rng(0))
        state["clusters"] = {"weight": torch.tensor([[[1.0]], [[3.0]]])}  # picks model 0
        state, _ = algorithm.round(state, np.arange(1), round_rng(0, 0))
        assert state["assignment"].tolist() == [0]
        assert float(state["clusters"]["weight"][0]) == pytest.approx(0.8)
        state["clusters"] = {"weight": torch.tensor([[[5.0]], [[0.5]]])}  # switches to 1
        state, _ = algorithm.round(state, np.arange(1), round_rng(0, 1))
        assert state["assignment"].tolist() == [1]
        return state["clusters"]["weight"].flatten().tolist()

    assert two_rounds(0.9) == pytest.approx([5.0, 0.5 - 0.1 * (0.9 * 2.0 + 1.0)])
    # dampened (CoBo's code): the first buffer is g itself, later ones add (1 - 0.1) g
    assert two_rounds(0.9, 0.1) == pytest.approx([5.0, 0.5 - 0.1 * (0.9 * 2.0 + 0.9 * 1.0)])
    assert two_rounds(0.0) == pytest.approx([5.0, 0.5 - 0.1 * 1.0])
    with pytest.raises(ValueError, match="option='gradient'"):
        build_algorithm("ifca", _toy_context([0.0]), option="model", momentum=0.9)


@pytest.mark.parametrize(("aggregate", "expected"), [("mean", 0.8), ("sum", 0.6)])
def test_ifca_sums_gradients_as_cobos_code_does_when_asked(aggregate, expected):
    # two clients with loss (w - 0)^2 both pick the model at 1 (gradient 2 each), lr 0.1
    algorithm = build_algorithm("ifca", _toy_context([0.0, 0.0]), aggregate=aggregate)
    state = algorithm.init({"weight": torch.zeros(2, 1, 1)}, np.random.default_rng(0))
    state["clusters"] = {"weight": torch.tensor([[[1.0]], [[3.0]]])}
    state, _ = algorithm.round(state, np.arange(2), round_rng(0, 0))
    assert state["clusters"]["weight"].flatten().tolist() == pytest.approx([expected, 3.0])
    with pytest.raises(ValueError, match="gradient"):
        build_algorithm("ifca", _toy_context([0.0]), option="model", aggregate="sum")


def test_ifca_fresh_batches_score_each_candidate_on_its_own_minibatch():
    # one client holding the targets 0 and 2, minibatches of one, models at 0 and 2. On a
    # common minibatch the client picks the model of the example drawn (model 1 half the
    # time); with a minibatch per candidate it picks model 1 only when both draws are 2.
    ctx = _toy_context([0.0])
    data = ShardedData.from_arrays([np.ones((2, 1), np.float32)], [np.array([0.0, 2.0])], "cpu")
    ctx = dataclasses.replace(ctx, train=data, local=dataclasses.replace(ctx.local, batch_size=1))
    clusters = {"weight": torch.tensor([[[0.0]], [[2.0]]])}
    draws = 400
    shares = {}
    for fresh in (False, True):
        algorithm = build_algorithm("ifca", ctx, n_clusters=2, fresh_batches=fresh)
        rng = np.random.default_rng(0)
        picks = [int(algorithm.choose(clusters, np.arange(1), rng)[0]) for _ in range(draws)]
        shares[fresh] = sum(picks)
    assert binomtest(shares[False], draws, 0.5).pvalue > 1e-3
    assert binomtest(shares[True], draws, 0.25).pvalue > 1e-3


def test_ifca_oracle_initialisation_starts_every_cluster_from_its_own_clients():
    ctx = tiny_context()
    models = initial_models(ctx)
    models = {
        k: v + torch.arange(ctx.n_clients).reshape(-1, *[1] * (v.ndim - 1))
        for k, v in models.items()
    }
    state = build_algorithm("ifca", ctx, init="oracle").init(models, np.random.default_rng(0))
    truth, owner = np.unique(CLUSTERS, return_inverse=True)
    assert state["assignment"].tolist() == owner.tolist()
    leaders = [int(np.flatnonzero(owner == c)[0]) for c in range(truth.size)]
    for k, v in state["clusters"].items():
        assert torch.equal(v, models[k][leaders])
    with pytest.raises(ValueError, match="true clusters"):
        build_algorithm("ifca", ctx, init="oracle", n_clusters=truth.size + 1)


@pytest.mark.parametrize("dampening", [0.0, 0.1])
def test_ditto_as_run_drives_the_global_model_with_personal_gradients(dampening):
    # losses (w - 0)^2 and (w - 2)^2, lr 0.1, lam 1; personal models at 1 and 3, global at 0
    algorithm = build_algorithm(
        "ditto", _toy_context([0.0, 2.0]), variant="as-run", dampening=dampening
    )
    state = algorithm.init({"weight": torch.zeros(2, 1, 1)}, np.random.default_rng(0))
    state["personal"] = {"weight": torch.tensor([[[1.0]], [[3.0]]])}
    state, _ = algorithm.round(state, np.arange(2), round_rng(0, 0))
    # gradients at the personal models are (2, 2), at the global model (0, -4)
    assert float(state["global"]["weight"]) == pytest.approx(0.0 - 0.1 * 2.0)
    assert state["personal"]["weight"].flatten().tolist() == pytest.approx(
        [1.0 - 0.1 * (2.0 + 1.0), 3.0 - 0.1 * (2.0 + 3.0)]
    )
    assert state["momentum"].flatten().tolist() == pytest.approx([2.0, 2.0])
    state, _ = algorithm.round(state, np.arange(2), round_rng(0, 1))
    # heavy ball: u = 0.9 u + (1 - dampening) g(v) with v = (0.7, 2.5)
    keep = 1.0 - dampening
    assert state["momentum"].flatten().tolist() == pytest.approx(
        [1.8 + keep * 1.4, 1.8 + keep * 1.0]
    )
    with pytest.raises(ValueError, match="as-run"):
        build_algorithm("ditto", _toy_context([0.0]), momentum=0.5)
    with pytest.raises(ValueError, match="as-run"):
        build_algorithm("ditto", _toy_context([0.0]), dampening=0.1)

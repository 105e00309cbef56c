"""Conformance of every registered algorithm, and what each of the basic ones promises."""

import numpy as np
import pytest
import torch

from learning.algorithms import ALGORITHMS, build_algorithm
from learning.loop import run_rounds
from learning.rng import round_rng
from tests.learning._tiny_problem import CLUSTERS, initial_models, tiny_context


def _rows(params, i):
    return torch.cat([p[i].reshape(-1) for p in params.values()])


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_every_algorithm_follows_the_protocol(name):
    ctx = tiny_context()
    outcomes = []
    for _ in range(2):
        algorithm = build_algorithm(name, ctx)
        assert algorithm.name == name
        state = algorithm.init(initial_models(ctx), np.random.default_rng(0))
        for r, clients in enumerate([np.arange(5), np.array([0, 2, 3])]):
            state, metrics = algorithm.round(state, clients, round_rng(0, r))
            assert np.isfinite(metrics["train_loss"])
        state = algorithm.finish(state, np.random.default_rng(1))
        models = algorithm.client_models(state)
        assert set(models) == set(initial_models(ctx))
        for key, p in models.items():
            assert p.shape == initial_models(ctx)[key].shape and torch.isfinite(p).all()
        outcomes.append(models)
    assert all(torch.equal(outcomes[0][k], outcomes[1][k]) for k in outcomes[0])
    result = run_rounds(build_algorithm(name, ctx), initial_models(ctx), 2, 0)
    assert result.evaluation.accuracy.shape == (5,) and len(result.history) == 2


def _trained(name, **params):
    ctx = tiny_context()
    algorithm = build_algorithm(name, ctx, **params)
    return ctx, run_rounds(algorithm, initial_models(ctx), 2, 3).models


def test_fedavg_gives_everyone_one_model_and_finetuning_personalises():
    _, models = _trained("fedavg")
    assert all(torch.equal(_rows(models, 0), _rows(models, k)) for k in range(5))
    _, tuned = _trained("fedavg", finetune_steps=2)
    assert not torch.equal(_rows(tuned, 0), _rows(tuned, 1))


def test_oracle_shares_within_clusters_only():
    _, models = _trained("oracle")
    for a in range(5):
        for b in range(5):
            same = torch.equal(_rows(models, a), _rows(models, b))
            assert same == (CLUSTERS[a] == CLUSTERS[b])


def test_local_clients_keep_exactly_their_own_training():
    ctx = tiny_context()
    algorithm = build_algorithm("local", ctx)
    start = initial_models(ctx)
    state = algorithm.init(start, np.random.default_rng(0))
    state, _ = algorithm.round(state, np.arange(5), np.random.default_rng(4))
    alone = ctx.fit(start, np.arange(5), np.random.default_rng(4))
    models = algorithm.client_models(state)
    assert all(torch.allclose(models[k], alone.params[k]) for k in models)
    assert not torch.equal(_rows(models, 0), _rows(models, 1))


def test_unknown_algorithm_and_parameters_are_clear_errors():
    ctx = tiny_context()
    with pytest.raises(ValueError, match="algorithm must be one of"):
        build_algorithm("no-such", ctx)
    with pytest.raises(ValueError, match="unknown bogus"):
        build_algorithm("fedavg", ctx, bogus=1)
    with pytest.raises(ValueError, match="finetune_steps"):
        build_algorithm("fedavg", ctx, finetune_steps=-1)

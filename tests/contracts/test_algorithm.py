"""The algorithm contract, checked on every entry of :data:`learning.algorithms.ALGORITHMS`.

A registered algorithm builds from a context under its registered name, runs ``init``, rounds
on all clients and on a subset, and ``finish``, gives every client a finite model of the
initial shapes, repeats itself exactly from the same seeds, and runs in the round loop.
"""

import numpy as np
import pytest
import torch

from learning.algorithms import ALGORITHMS, build_algorithm
from learning.loop import run_rounds
from learning.rng import round_rng
from tests.learning._tiny_problem import initial_models, tiny_context


def _protocol_run(name, **params):
    """One algorithm through ``init``, two rounds (all clients, then three) and ``finish``."""
    ctx = tiny_context()
    algorithm = build_algorithm(name, ctx, **params)
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
    return models


def _repeats_itself(name, **params):
    one, two = _protocol_run(name, **params), _protocol_run(name, **params)
    assert all(torch.equal(one[k], two[k]) for k in one)


def _runs_in_the_loop(name, **params):
    ctx = tiny_context()
    result = run_rounds(build_algorithm(name, ctx, **params), initial_models(ctx), 2, 0)
    assert result.evaluation.accuracy.shape == (5,) and len(result.history) == 2


def check_algorithm(name):
    """The checks every registered algorithm passes: each is called with the name and the
    algorithm's parameters (none: its defaults)."""
    return [_repeats_itself, _runs_in_the_loop]


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_every_algorithm_keeps_the_contract(name):
    for check in check_algorithm(name):
        check(name)

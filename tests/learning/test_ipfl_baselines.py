"""The baselines of IP-FL's comparison (Khan et al., §6 and Tables 4, 5, 10, 11)
on the shared engine: what each one promises (the contract every algorithm keeps:
tests/contracts/test_algorithm.py)."""

import numpy as np
import pytest
import torch

import learning.algorithms.fedem
import learning.algorithms.fedprox
import learning.algorithms.fedsoft
import learning.algorithms.perfedavg  # noqa: F401  (register the baselines)
from learning.algorithms import build_algorithm
from learning.algorithms.fedem import resample
from learning.algorithms.fedsoft import argmin_shares
from learning.drivers.ipfl.evaluation import mixture_accuracy
from learning.engine import broadcast, parameters_of, sample_batches
from learning.loop import run_rounds
from learning.per_example import per_example_losses, per_example_losses_loop
from tests.learning._tiny_problem import initial_models, tiny_context


def test_per_example_losses_match_the_loop_reference():
    ctx = tiny_context()
    gen = torch.Generator().manual_seed(3)
    base = parameters_of(ctx.engine.model)
    models = {
        k: torch.stack([v, v + 0.1 * torch.randn(v.shape, generator=gen)]) for k, v in base.items()
    }
    clients = np.array([3, 0, 4])
    fast, owner = per_example_losses(ctx.engine, models, ctx.train, clients)
    slow, owner_loop = per_example_losses_loop(ctx.engine, models, ctx.train, clients)
    assert fast.shape == (20 + 7 + 9, 2)
    assert np.array_equal(owner, owner_loop)
    assert torch.allclose(fast, slow, atol=1e-5)


def test_fedprox_with_zero_mu_is_fedavg():
    ctx = tiny_context()
    a = run_rounds(build_algorithm("fedprox", ctx, mu=0.0), initial_models(ctx), 2, 5).models
    b = run_rounds(build_algorithm("fedavg", ctx), initial_models(ctx), 2, 5).models
    c = run_rounds(build_algorithm("fedprox", ctx, mu=5.0), initial_models(ctx), 2, 5).models
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)
    assert not all(torch.allclose(a[k], c[k], atol=1e-6) for k in a)


def test_fedsoft_importance_shares_are_smoothed_and_normalised():
    losses = torch.tensor([[0.1, 0.5], [0.2, 0.1], [0.3, 0.9], [0.4, 0.8]])
    u = argmin_shares(losses, np.array([0, 0, 1, 1]), 2, 1e-4)
    assert np.allclose(u.sum(axis=1), 1.0)
    assert u[0] == pytest.approx([0.5, 0.5]) and u[1, 1] == pytest.approx(2e-4 / 2.0002)


def test_fedem_mixture_weights_stay_on_the_simplex():
    ctx = tiny_context()
    algorithm = build_algorithm("fedem", ctx, components=3)
    result = run_rounds(algorithm, initial_models(ctx), 3, 1)
    pi = result.state["pi"]
    assert pi.shape == (5, 3) and torch.allclose(pi.sum(dim=1), torch.ones(5, dtype=pi.dtype))
    assert torch.all(pi >= 0)
    components, weights = algorithm.mixture(result.state)
    one_hot = np.eye(3)[weights.argmax(axis=1)]
    mixed = mixture_accuracy(ctx.engine, components, one_hot, ctx.test)
    assert mixed == pytest.approx(ctx.engine.evaluate(result.models, ctx.test).accuracy)


def test_fedem_resampling_inverts_each_clients_cumulative_weights():
    """Key :math:`u` picks the first example with :math:`C_j > u\\, C_{n_i}` (inversion,
    Devroye 1986, §II.2.1), client :math:`i` reading the first :math:`n_i` keys of its row."""
    weights = np.array([1.0, 3.0, 0.0, 2.0, 2.0])
    sizes = np.array([2, 3])
    picks = resample(weights, sizes, np.random.default_rng(4))
    keys = np.random.default_rng(4).random((2, 3))
    expected = np.concatenate([(keys[0, :2] * 4 >= 1).astype(int), 3 + (keys[1, :3] * 4 >= 2)])
    np.testing.assert_array_equal(picks, expected)


def test_fedem_resampling_draws_in_proportion_to_the_weights():
    sizes = np.array([6000, 3000])
    weights = np.concatenate([np.arange(6000) % 4, np.ones(3000)]).astype(float)
    picks = resample(weights, sizes, np.random.default_rng(0))
    first, second = picks[:6000], picks[6000:]
    assert first.max() < 6000 and second.min() >= 6000
    shares = np.bincount(first % 4, minlength=4) / 6000
    assert shares[0] == 0.0  # a zero weight is never drawn
    np.testing.assert_allclose(shares[1:], [1 / 6, 2 / 6, 3 / 6], atol=0.02)
    assert np.unique(second).size > 1800  # equal weights: about 1 - 1/e of the examples


def test_fedem_resampling_draws_uniformly_without_weight_and_refuses_bad_input():
    picks = resample(np.zeros(4), np.array([4]), np.random.default_rng(1))
    keys = np.random.default_rng(1).random((1, 4))[0]
    np.testing.assert_array_equal(picks, np.floor(keys * 4).astype(int))
    with pytest.raises(ValueError, match="non-negative"):
        resample(np.array([1.0, -1.0]), np.array([2]), np.random.default_rng(0))
    with pytest.raises(ValueError, match="one weight per example"):
        resample(np.ones(3), np.array([2]), np.random.default_rng(0))
    with pytest.raises(ValueError, match="at least one example"):
        resample(np.ones(2), np.array([2, 0]), np.random.default_rng(0))


def test_per_fedavg_personalises_from_one_global_model():
    ctx = tiny_context()
    algorithm = build_algorithm("per-fedavg", ctx, beta=0.01)
    result = run_rounds(algorithm, initial_models(ctx), 2, 2)
    glob = result.state["global"]
    models = result.models
    first = next(iter(models))
    assert not torch.equal(models[first][0], models[first][1])
    one = broadcast({k: v[0] for k, v in glob.items()}, 5)
    assert all(torch.allclose(models[k], one[k], atol=0.5) for k in models)


def test_per_fedavg_personal_model_is_one_alpha_step():
    """Fallah et al. 2020, Eq. 3: the personalised model is the global model minus
    :math:`\\alpha` times the gradient on a minibatch of the client's data, whatever
    :math:`\\beta` is."""
    ctx = tiny_context()
    algorithm = build_algorithm("per-fedavg", ctx, beta=1e-6)
    state = algorithm.init(initial_models(ctx), np.random.default_rng(0))
    personal = algorithm.finish(state, np.random.default_rng(7))["personal"]
    glob = algorithm.client_models(state)
    picks = sample_batches(
        ctx.train.sizes_numpy(), 1, ctx.local.batch_size, np.random.default_rng(7)
    )
    rows = torch.as_tensor(picks[:, 0] + ctx.train.offsets.numpy()[:, None], dtype=torch.long)
    grads, _ = ctx.engine.gradients(glob, ctx.train.x[rows], ctx.train.y[rows])
    alpha = ctx.local.sgd.lr
    for k in personal:
        assert torch.allclose(personal[k], glob[k] - alpha * grads[k], atol=1e-6)
    moved = sum(float((personal[k] - glob[k]).abs().sum()) for k in personal)
    assert moved > 1e-3  # a step of alpha, not of beta

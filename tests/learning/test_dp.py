"""DP-SGD on the batched engine: one client's step equals Opacus's, every client's the loop's,
and each client's training is a function of its own data and its row of the random draws."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from learning.dp import (
    DPSGDSettings,
    clip_and_sum,
    clipped_gradient_sum,
    dp_local_sgd,
    noise_generators,
    per_example_gradients,
    poisson_subsets,
    private_gradients,
    sample_subsets,
)
from learning.engine import ShardedData, broadcast, parameters_of
from learning.optim import SGDConfig, sgd_step
from learning.runtimes.flower.streams import RowStream, stream_state
from tests.learning._tiny_problem import CPU, TRAIN_SIZES, tiny_data, tiny_engine


def _one_client_batch(n: int = 6):
    train, _ = tiny_data()
    return train.x[:n], train.y[:n]


@pytest.mark.filterwarnings(
    "ignore:Full backward hook is firing"
)  # Opacus's hooks, inputs need no grad
@pytest.mark.parametrize("model", ["lenet5", "mlp"])
@pytest.mark.parametrize("noise", [0.0, 1.3])
def test_one_clients_step_equals_opacus(model, noise):
    opacus = pytest.importorskip("opacus")
    from opacus.optimizers import DPOptimizer

    engine = tiny_engine(model=model)
    x, y = _one_client_batch()
    dp = DPSGDSettings(max_grad_norm=0.5, noise_multiplier=noise)
    sgd = SGDConfig(0.1, momentum=0.9, weight_decay=1e-3)

    reference = copy.deepcopy(engine.model)
    module = opacus.GradSampleModule(reference)
    optimiser = DPOptimizer(
        torch.optim.SGD(module.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-3),
        noise_multiplier=noise,
        max_grad_norm=0.5,
        expected_batch_size=x.shape[0],
        loss_reduction="mean",
        generator=torch.Generator().manual_seed(7),
    )
    loss = engine.task.loss(module(x), y)
    loss.backward()
    optimiser.step()

    params = broadcast(parameters_of(engine.model), 1)
    source = [torch.Generator().manual_seed(7)]
    grads, norms, _ = private_gradients(engine, params, x[None], y[None], dp, source)
    ours, _ = sgd_step(params, grads, None, sgd)
    for name, p in reference.named_parameters():
        torch.testing.assert_close(ours[name][0], p.detach(), rtol=1e-5, atol=1e-6)
    assert norms.shape == (1, x.shape[0]) and torch.all(norms > 0)


@pytest.mark.filterwarnings("ignore:Full backward hook is firing")
def test_one_clients_poisson_step_equals_opacus():
    # a Poisson batch padded to 6 with weight 0, against Opacus on the 4 examples drawn,
    # both divided by the expected batch size 5
    opacus = pytest.importorskip("opacus")
    from opacus.optimizers import DPOptimizer

    engine = tiny_engine(model="mlp")
    x, y = _one_client_batch()
    member = torch.tensor([True, False, True, True, False, True])
    dp = DPSGDSettings(max_grad_norm=0.5, noise_multiplier=1.3, sampling="poisson")
    reference = copy.deepcopy(engine.model)
    module = opacus.GradSampleModule(reference)
    optimiser = DPOptimizer(
        torch.optim.SGD(module.parameters(), lr=0.1),
        noise_multiplier=1.3,
        max_grad_norm=0.5,
        expected_batch_size=5,
        loss_reduction="mean",
        generator=torch.Generator().manual_seed(7),
    )
    engine.task.loss(module(x[member]), y[member]).backward()
    optimiser.step()

    params = broadcast(parameters_of(engine.model), 1)
    source = [torch.Generator().manual_seed(7)]
    grads, _, _ = private_gradients(
        engine, params, x[None], y[None], dp, source, member[None], batch_size=5
    )
    ours, _ = sgd_step(params, grads, None, SGDConfig(0.1))
    for name, p in reference.named_parameters():
        torch.testing.assert_close(ours[name][0], p.detach(), rtol=1e-5, atol=1e-6)


def test_clipping_bounds_each_examples_influence():
    engine = tiny_engine(model="mlp")
    x, y = _one_client_batch(8)
    params = broadcast(parameters_of(engine.model), 1)
    tiny = DPSGDSettings(max_grad_norm=1e-3, noise_multiplier=0.0)
    grads, norms, _ = private_gradients(engine, params, x[None], y[None], tiny, None)
    total = torch.sqrt(sum(g.square().sum() for g in grads.values()))
    assert float(total) <= 1e-3 + 1e-9  # a mean of vectors of norm <= C
    assert torch.all(norms > 1e-3)  # every example was clipped
    loose = DPSGDSettings(
        max_grad_norm=1e6, noise_multiplier=0.0
    )  # nothing clipped: the plain gradient
    plain, _, _ = private_gradients(engine, params, x[None], y[None], loose, None)
    full = engine.gradients(params, x[None], y[None])[0]
    for name in plain:
        torch.testing.assert_close(plain[name], full[name], rtol=1e-4, atol=1e-6)


def _client_batches(k: int, b: int = 3):
    train, _ = tiny_data()
    x = torch.stack([train.x[train.offsets[c] + torch.arange(b)] for c in range(k)])
    y = torch.stack([train.y[train.offsets[c] + torch.arange(b)] for c in range(k)])
    return x, y


def test_batched_clients_equal_each_client_alone():
    engine = tiny_engine(model="lenet5")
    k = len(TRAIN_SIZES)
    x, y = _client_batches(k)
    params = broadcast(parameters_of(engine.model), k)
    together, _, losses = clipped_gradient_sum(engine, params, x, y, 0.3)
    for c in range(k):
        one = {n: p[c : c + 1] for n, p in params.items()}
        each, _, _ = clipped_gradient_sum(engine, one, x[c : c + 1], y[c : c + 1], 0.3)
        for name in each:
            torch.testing.assert_close(together[name][c], each[name][0], rtol=1e-5, atol=1e-7)
    assert losses.shape == (k, 3)


@pytest.mark.parametrize("model", ["lenet5", "mlp", "linear"])
@pytest.mark.parametrize("clip", [0.05, 1e6])
def test_layer_by_layer_clipping_equals_clipping_whole_per_example_gradients(model, clip):
    # the fused path (per-layer norms from inputs and output gradients) against the
    # reference: every example's whole gradient by vmap, clipped, summed
    engine = tiny_engine(model=model)
    k = len(TRAIN_SIZES)
    x, y = _client_batches(k)
    params = broadcast(parameters_of(engine.model), k)
    params = {
        n: p + 0.05 * torch.randn(p.shape, generator=torch.Generator().manual_seed(1))
        for n, p in params.items()
    }
    fast, fast_norms, fast_losses = clipped_gradient_sum(engine, params, x, y, clip)
    per_example, losses = per_example_gradients(engine, params, x, y)
    slow, norms = clip_and_sum(per_example, clip)
    torch.testing.assert_close(fast_losses, losses, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(fast_norms, norms, rtol=1e-4, atol=1e-6)
    for name in slow:
        torch.testing.assert_close(fast[name], slow[name], rtol=1e-4, atol=1e-6)


def test_per_client_generators_give_each_client_its_own_noise():
    engine = tiny_engine(model="mlp")
    k = len(TRAIN_SIZES)
    x, y = _client_batches(k)
    params = broadcast(parameters_of(engine.model), k)
    dp = DPSGDSettings(max_grad_norm=0.3, noise_multiplier=2.0)
    seeds = [11, 12, 13, 14, 15]
    together, _, _ = private_gradients(
        engine, params, x, y, dp, [torch.Generator().manual_seed(s) for s in seeds]
    )
    for c in range(k):
        one = {n: p[c : c + 1] for n, p in params.items()}
        alone, _, _ = private_gradients(
            engine, one, x[c : c + 1], y[c : c + 1], dp, [torch.Generator().manual_seed(seeds[c])]
        )
        for name in alone:
            torch.testing.assert_close(together[name][c], alone[name][0], rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match="2 noise generators for 5 clients"):
        private_gradients(engine, params, x, y, dp, [torch.Generator(), torch.Generator()])


def test_noise_seeds_are_one_draw_a_client_from_its_row():
    sizes = np.array([4, 9, 2])
    rng = np.random.default_rng(3)
    keys = np.random.default_rng(3).random((3, 1, 9))
    seeds = [g.initial_seed() for g in noise_generators(sizes, rng)]
    assert seeds == [int(u * 2**53) for u in keys[:, 0, 0]]
    assert len(set(seeds)) == 3
    with pytest.raises(ValueError, match="at least one example"):
        noise_generators(np.array([3, 0]), rng)


@pytest.mark.parametrize("sampling", ["fixed", "poisson"])
def test_each_client_alone_with_its_row_of_the_draws_trains_as_among_all(sampling):
    # a Flower node: its own data only, its row of the round's blocks (RowStream); a Poisson
    # batch is padded to the largest of the step among all clients, or among itself alone
    engine = tiny_engine(model="mlp")
    train, _ = tiny_data()
    k = len(TRAIN_SIZES)
    start = broadcast(parameters_of(engine.model), k)
    dp = DPSGDSettings(0.5, 1.1, sampling)
    kw = dict(steps=3, batch_size=3, sgd=SGDConfig(0.1, momentum=0.9), dp=dp)
    rng = np.random.default_rng(4)
    rng.random(2)  # the round has drawn its participants
    state = stream_state(rng)
    together = dp_local_sgd(engine, start, train, np.arange(k), rng=rng, **kw)
    for c, n in enumerate(TRAIN_SIZES):
        first = int(train.offsets[c])
        mine = ShardedData(
            x=train.x[first : first + n],
            y=train.y[first : first + n],
            offsets=torch.zeros(1, dtype=torch.long),
            sizes=torch.tensor([n]),
        )
        one = {name: p[c : c + 1] for name, p in start.items()}
        stream = RowStream(state, c, k, max(TRAIN_SIZES))
        alone = dp_local_sgd(engine, one, mine, np.array([0]), rng=stream, **kw)
        for name in alone.params:
            torch.testing.assert_close(
                alone.params[name][0], together.params[name][c], rtol=1e-5, atol=1e-6
            )
            torch.testing.assert_close(
                alone.momentum[name][0], together.momentum[name][c], rtol=1e-5, atol=1e-6
            )
        np.testing.assert_allclose(alone.loss[0], together.loss[c], rtol=1e-6)


def test_subsets_are_distinct_uniform_and_fresh_each_step():
    sizes = np.array([5, 9])
    picks = sample_subsets(sizes, 4000, 3, np.random.default_rng(0))
    assert picks.shape == (2, 4000, 3)
    assert np.all(np.diff(picks, axis=-1) > 0)  # distinct, listed in increasing order
    assert picks[0].max() < 5 and picks[1].max() < 9
    freq = np.bincount(picks[0].ravel(), minlength=5) / picks[0].size
    assert np.abs(freq - 0.2).max() < 0.02  # each example drawn with probability b/n
    with pytest.raises(ValueError, match="too small"):
        sample_subsets(np.array([2, 9]), 1, 3, np.random.default_rng(0))


def test_poisson_batches_take_each_example_with_probability_b_over_n():
    sizes = np.array([5, 9])
    picks, member = poisson_subsets(sizes, 4000, 3, np.random.default_rng(0))
    keys = np.random.default_rng(0).random((2, 4000, 9))
    assert picks.shape == member.shape and picks.shape[:2] == (2, 4000)
    assert picks.shape[2] == max(member.sum(-1).max(), 1)  # the largest batch drawn
    for c, n in enumerate(sizes):
        joins = keys[c, :, :n] < 3 / n  # the client's row of the block, nothing else
        for t in (0, 1, 2, 3999):
            drawn = picks[c, t][member[c, t]]
            np.testing.assert_array_equal(drawn, np.flatnonzero(joins[t]))  # increasing
            assert np.all(~member[c, t, drawn.size :]) and np.all(picks[c, t][~member[c, t]] == 0)
        freq = np.bincount(picks[c][member[c]], minlength=n) / 4000
        assert np.abs(freq - 3 / n).max() < 0.03  # each example with probability b/n
        assert abs(member[c].sum(-1).mean() - 3) < 0.1  # batches of 3 on average
    with pytest.raises(ValueError, match="too small"):
        poisson_subsets(np.array([2, 9]), 1, 3, np.random.default_rng(0))
    with pytest.raises(ValueError, match="sampling must be one of"):
        DPSGDSettings(1.0, 1.0, "uniform")


def test_dp_training_is_seeded_and_noise_changes_it():
    engine = tiny_engine(model="mlp")
    train, _ = tiny_data()
    params = broadcast(parameters_of(engine.model), len(TRAIN_SIZES))
    clients = np.arange(len(TRAIN_SIZES))
    kw = dict(steps=3, batch_size=3, sgd=SGDConfig(0.1), dp=DPSGDSettings(1.0, 1.0))
    a = dp_local_sgd(engine, params, train, clients, rng=np.random.default_rng(1), **kw)
    b = dp_local_sgd(engine, params, train, clients, rng=np.random.default_rng(1), **kw)
    c = dp_local_sgd(engine, params, train, clients, rng=np.random.default_rng(2), **kw)
    for name in a.params:
        assert torch.equal(a.params[name], b.params[name])
    assert any(not torch.equal(a.params[n], c.params[n]) for n in a.params)
    assert a.loss.shape == (len(TRAIN_SIZES),) and np.all(np.isfinite(a.loss))
    with pytest.raises(ValueError, match="max_grad_norm"):
        DPSGDSettings(0.0, 1.0)
    with pytest.raises(ValueError, match="noise_multiplier"):
        DPSGDSettings(1.0, -1.0)
    assert CPU.type == "cpu"

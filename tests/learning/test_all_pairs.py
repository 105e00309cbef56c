"""The batched all-pairs table equals the per-pair loop."""

import numpy as np
import pytest
import torch
from torch import nn

from learning import all_pairs
from learning.algorithms.cobo_steps import pairwise_work
from learning.all_pairs import (
    client_batches,
    flatten,
    midpoint_gradient_products,
    pairwise_gradients,
    pairwise_gradients_loop,
    pairwise_losses,
    unflatten,
)
from learning.engine import BatchedEngine, Task, broadcast, parameters_of
from tests.learning._tiny_problem import CPU, N_CLASSES, initial_models, tiny_context


def _setup():
    ctx = tiny_context()
    models = initial_models(ctx)
    g = torch.Generator().manual_seed(0)
    models = {k: v + 0.05 * torch.randn(v.shape, generator=g) for k, v in models.items()}
    x, y = client_batches(ctx.train, np.arange(4), 6, np.random.default_rng(0))
    return ctx, {k: v[:3] for k, v in models.items()}, x, y


def _unsupported_engine():
    """A model :mod:`learning.stacked` refuses (Softplus), so the kernels fall back to vmap."""
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 8), nn.Softplus(), nn.Linear(8, N_CLASSES))
    return BatchedEngine(model, Task.for_classes(N_CLASSES), CPU)


def _perturbed(engine, n):
    g = torch.Generator().manual_seed(1)
    return {
        k: v + 0.1 * torch.randn(v.shape, generator=g)
        for k, v in broadcast(parameters_of(engine.model), n).items()
    }


# one call; calls of two whole batches; one batch per call; a batch split 1 + 2; 1 + 1 + 1
@pytest.mark.parametrize("examples", [16384, 40, 18, 12, 6])
def test_batched_table_matches_the_loop(monkeypatch, examples):
    monkeypatch.setattr(all_pairs, "_EXAMPLES", examples)
    ctx, models, x, y = _setup()
    grads, losses = pairwise_gradients(ctx.engine, models, x, y)
    ref_grads, ref_losses = pairwise_gradients_loop(ctx.engine, models, x, y)
    assert losses.shape == (3, 4)
    assert torch.allclose(losses, ref_losses, atol=1e-6)
    for name in grads:
        assert grads[name].shape == (3, 4, *models[name].shape[1:])
        assert torch.allclose(grads[name], ref_grads[name], atol=1e-5)
    assert torch.allclose(pairwise_losses(ctx.engine, models, x, y), ref_losses, atol=1e-6)


def test_calls_keep_batches_together_and_split_the_large_ones():
    batches = torch.tensor([0, 0, 0, 2, 2, 2])
    plan = all_pairs._calls(batches, 6, 36, True)  # 6 slots fit: two whole batches
    assert [(a, b, c.tolist(), s) for a, b, c, s in plan] == [(0, 6, [0, 2], 3)]
    plan = all_pairs._calls(batches, 6, 12, True)  # 2 slots fit: pieces of 1 and 2
    assert [(a, b, c.tolist(), s) for a, b, c, s in plan] == [
        (0, 1, [0], 1),
        (1, 3, [0], 2),
        (3, 4, [2], 1),
        (4, 6, [2], 2),
    ]
    uneven = all_pairs._calls(torch.tensor([1, 1, 3]), 6, 36, True)  # one batch per call
    assert [(a, b, c.tolist(), s) for a, b, c, s in uneven] == [(0, 2, [1], 2), (2, 3, [3], 1)]
    own = all_pairs._calls(batches, 6, 24, False)  # every slot its own copy of its batch
    assert [(a, b, c.tolist(), s) for a, b, c, s in own] == [
        (0, 4, [0, 0, 0, 2], 1),
        (4, 6, [2, 2], 1),
    ]


def test_table_of_a_model_stacked_refuses_matches_the_loop():
    engine = _unsupported_engine()
    _, _, x, y = _setup()
    models = _perturbed(engine, 3)
    grads, losses = pairwise_gradients(engine, models, x, y)
    ref_grads, ref_losses = pairwise_gradients_loop(engine, models, x, y)
    assert torch.allclose(losses, ref_losses, atol=1e-6)
    assert all(torch.allclose(grads[k], ref_grads[k], atol=1e-6) for k in grads)


@pytest.mark.parametrize(
    "pairs",
    [
        np.array([(i, j) for i in range(5) for j in range(i + 1, 5)]),  # all: shared batches
        np.array([(3, 0), (1, 4), (3, 1)]),  # sampled: batches used unequally often
    ],
)
@pytest.mark.parametrize("unsupported", [False, True])
def test_midpoint_products_match_the_cobo_loop(pairs, unsupported):
    ctx = tiny_context()
    x, y = client_batches(ctx.train, np.arange(5), 6, np.random.default_rng(0))
    engine = _unsupported_engine() if unsupported else ctx.engine
    models = _perturbed(engine, 5)
    ours = midpoint_gradient_products(engine.model, engine.task, models, x, y, pairs)
    loop = pairwise_work(models, (x, y), pairs, batched=False, model=engine.model, task=engine.task)
    # products well away from zero (float32 noise is ~1e-7), so the comparison below means
    # something in relative terms
    assert ours.shape == (len(pairs),) and bool((loop.abs() > 1e-5).all())
    torch.testing.assert_close(ours, loop, rtol=1e-4, atol=1e-6)


def test_midpoint_products_reject_bad_pairs():
    ctx, models, x, y = _setup()
    kw = dict(model=ctx.engine.model, task=ctx.engine.task, params=models, x=x, y=y)
    assert midpoint_gradient_products(**kw, pairs=np.zeros((0, 2))).shape == (0,)
    with pytest.raises(ValueError, match="different"):
        midpoint_gradient_products(**kw, pairs=np.array([[1, 1]]))
    with pytest.raises(ValueError, match="index"):
        midpoint_gradient_products(**kw, pairs=np.array([[0, 3]]))


def test_diagonal_is_the_engine_gradient():
    ctx, models, x, y = _setup()
    grads, _ = pairwise_gradients(ctx.engine, models, x[:3], y[:3])
    own, _ = ctx.engine.gradients(models, x[:3], y[:3])
    for name in own:
        diag = torch.stack([grads[name][i, i] for i in range(3)])
        assert torch.allclose(diag, own[name], atol=1e-6)


def test_flatten_round_trip():
    _, models, _, _ = _setup()
    flat = flatten(models)
    assert flat.shape[0] == 3
    back = unflatten(flat, models)
    assert all(torch.equal(back[k], models[k]) for k in models)


def test_batches_are_the_clients_own_and_reproducible():
    ctx = tiny_context()
    a = client_batches(ctx.train, np.array([1, 3]), 5, np.random.default_rng(2))
    b = client_batches(ctx.train, np.array([1, 3]), 5, np.random.default_rng(2))
    assert torch.equal(a[0], b[0]) and a[0].shape[:2] == (2, 5)
    start, size = int(ctx.train.offsets[3]), int(ctx.train.sizes[3])
    own = ctx.train.x[start : start + size]
    assert all(any(torch.equal(row, o) for o in own) for row in a[0][1])


def test_bench_all_pairs_command_does_the_same_work_both_ways(capsys):
    import json

    from collabecon.cli import main

    for method in ("fc", "cobo"):
        args = ["bench", "all-pairs", "--method", method, "--clients", "3", "--repeats", "1"]
        assert main([*args, "--batch-size", "4", "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["benchmark"] == "all-pairs" and out["clients"] == 3
        assert out["max_difference"] < 1e-4 and out["batched_s"] > 0


def test_single_model_reference_times_each_batch_size():
    from collabecon.bench.all_pairs import single_model_reference

    best = single_model_reference(clients=2, batch_sizes=(32, 128), repeats=1)
    assert list(best) == [32, 128] and all(s > 0 for s in best.values())
    with pytest.raises(ValueError, match="batch size"):
        single_model_reference(clients=2, batch_sizes=(0,), repeats=1)

"""The batched all-pairs table equals the per-pair loop."""

import numpy as np
import torch

from learning.all_pairs import (
    client_batches,
    flatten,
    pairwise_gradients,
    pairwise_gradients_loop,
    pairwise_losses,
    unflatten,
)
from tests.learning._tiny_problem import initial_models, tiny_context


def _setup():
    ctx = tiny_context()
    models = initial_models(ctx)
    g = torch.Generator().manual_seed(0)
    models = {k: v + 0.05 * torch.randn(v.shape, generator=g) for k, v in models.items()}
    x, y = client_batches(ctx.train, np.arange(4), 6, np.random.default_rng(0))
    return ctx, {k: v[:3] for k, v in models.items()}, x, y


def test_batched_table_matches_the_loop():
    ctx, models, x, y = _setup()
    grads, losses = pairwise_gradients(ctx.engine, models, x, y)
    ref_grads, ref_losses = pairwise_gradients_loop(ctx.engine, models, x, y)
    assert losses.shape == (3, 4)
    assert torch.allclose(losses, ref_losses, atol=1e-6)
    for name in grads:
        assert grads[name].shape == (3, 4, *models[name].shape[1:])
        assert torch.allclose(grads[name], ref_grads[name], atol=1e-5)
    assert torch.allclose(pairwise_losses(ctx.engine, models, x, y), ref_losses, atol=1e-6)


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

    from learning.cli import main

    args = ["bench", "all-pairs", "--method", "fc", "--clients", "3", "--repeats", "1"]
    assert main([*args, "--batch-size", "4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["benchmark"] == "all-pairs" and out["clients"] == 3
    assert out["max_difference"] < 1e-4 and out["batched_s"] > 0

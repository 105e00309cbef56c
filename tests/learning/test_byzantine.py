"""Attacks, robust aggregators and the adversarial context (Werner 2024, §2.4 and
Fig. 2.6, at small scale)."""

import numpy as np
import pytest
import torch

from learning.algorithms import build_algorithm
from learning.byzantine import (
    AGGREGATORS,
    ATTACKS,
    AdversarialContext,
    Threat,
    adversarial_context,
    honest_clients,
    submit,
)
from learning.loop import run_rounds
from tests.learning._tiny_problem import initial_models, tiny_context


def test_attacks_replace_only_the_attackers():
    ctx = adversarial_context(tiny_context(), Threat("bit-flip", 0.4), np.random.default_rng(0))
    assert ctx.attackers.sum() == 2 and set(honest_clients(ctx)) | set(
        np.flatnonzero(ctx.attackers)
    ) == set(range(5))
    v = torch.randn(3, 5, 7)
    out = submit(ctx, v, np.arange(5), np.random.default_rng(1))
    honest = honest_clients(ctx)
    assert torch.equal(out[:, honest], v[:, honest])
    for b in np.flatnonzero(ctx.attackers):
        assert torch.equal(out[:, b], -v[:, honest[0]])
    assert torch.equal(submit(tiny_context(), v, np.arange(5), np.random.default_rng(1)), v)


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_every_attack_runs_with_every_kind_of_method(attack):
    base = tiny_context()
    ctx = adversarial_context(base, Threat(attack, 0.4), np.random.default_rng(0))
    assert isinstance(ctx, AdversarialContext)
    for name in ("fedavg", "federated-clustering", "ifca"):
        result = run_rounds(build_algorithm(name, ctx), initial_models(ctx), 1, 0)
        assert result.evaluation.loss.shape == (5,)
    if attack == "label-flip":
        changed = (ctx.train.y != base.train.y).numpy()
        owners = np.repeat(np.arange(5), ctx.train.sizes.numpy())
        assert changed.any() and not changed[~ctx.attackers[owners]].any()


def test_alie_and_ipm_formulas():
    honest = torch.tensor([[1.0, 2.0], [3.0, 6.0]])
    ipm = ATTACKS["ipm"](honest, 1, np.random.default_rng(0), 0.5)
    assert torch.allclose(ipm, torch.tensor([[-1.0, -2.0]]))
    alie = ATTACKS["alie"](honest, 1, np.random.default_rng(0), 0.1)
    # N = 3, s = floor(2.5) - 1 = 1, z = Phi^-1(2/3) = 0.4307
    assert torch.allclose(
        alie, torch.tensor([[2.0 - 0.43073 * 1.0, 4.0 - 0.43073 * 2.0]]), atol=1e-4
    )


def test_robust_aggregators_ignore_a_huge_minority():
    good = torch.randn(7, 4) * 0.1
    bad = torch.full((2, 4), 1e6)
    z = torch.cat([good, bad])
    for name, fn in AGGREGATORS.items():
        assert fn(z, 2).abs().max() < 1.0, name
    assert torch.equal(
        AGGREGATORS["median"](torch.tensor([[1.0], [5.0], [2.0]]), 0), torch.tensor([2.0])
    )
    assert torch.allclose(
        AGGREGATORS["trimmed-mean"](torch.tensor([[0.0], [1.0], [2.0], [100.0]]), 1),
        torch.tensor([1.5]),
    )


def test_robust_fedavg_survives_where_fedavg_collapses():
    base = tiny_context()
    ctx = adversarial_context(base, Threat("large-gradient", 0.2), np.random.default_rng(3))
    plain = run_rounds(build_algorithm("fedavg", ctx), initial_models(ctx), 2, 0).models
    robust = run_rounds(
        build_algorithm("robust-fedavg", ctx, aggregator="median"), initial_models(ctx), 2, 0
    ).models
    assert max(float(v.abs().max()) for v in plain.values()) > 1e4
    assert max(float(v.abs().max()) for v in robust.values()) < 10


def test_same_seed_same_attackers():
    a = adversarial_context(tiny_context(), Threat("zeros", 0.4), np.random.default_rng(5))
    b = adversarial_context(tiny_context(), Threat("zeros", 0.4), np.random.default_rng(5))
    assert np.array_equal(a.attackers, b.attackers)
    with pytest.raises(ValueError, match="attack"):
        Threat("nonsense", 0.1)


def _digits_private_label(threat):
    from learning.algorithms import Context, LocalTraining
    from learning.engine import BatchedEngine, ShardedData, Task, broadcast, parameters_of
    from learning.federation import make_federation
    from learning.models import build_model
    from learning.optim import SGDConfig
    from learning.rng import torch_generator

    rng = np.random.default_rng(0)
    fed = make_federation("digits", "private-label", 20, seed=rng, n_clusters=4)
    model = build_model("mlp", fed.input_shape, fed.n_classes, generator=torch_generator(rng))
    c = fed.clients
    ctx = Context(
        engine=BatchedEngine(model, Task.for_classes(fed.n_classes), torch.device("cpu")),
        train=ShardedData.from_arrays([k.x_train for k in c], [k.y_train for k in c], "cpu"),
        test=ShardedData.from_arrays([k.x_test for k in c], [k.y_test for k in c], "cpu"),
        local=LocalTraining(1, 64, SGDConfig(0.1, momentum=0.9)),
        clusters=fed.clusters,
    )
    if threat is not None:
        ctx = adversarial_context(ctx, threat, np.random.default_rng(1))
    return ctx, broadcast(parameters_of(model), 20)


def _honest_accuracy(name, threat, rounds, **params):
    ctx, start = _digits_private_label(threat)
    result = run_rounds(build_algorithm(name, ctx, **params), start, rounds, 0, eval_every=rounds)
    honest = honest_clients(ctx)
    ev = result.evaluation
    return 100 * float(np.average(ev.accuracy[honest], weights=ev.n[honest]))


@pytest.mark.slow
def test_fc_shrugs_off_attacks_that_break_fedavg():
    # measured here: FC clean 90.6%, large-gradient 89.6%, bit-flip 89.6%; FedAvg 11.5%
    fc = {"variant": "as-run", "quantile": 0.2, "iters": 10}
    clean = _honest_accuracy("federated-clustering", None, 25, **fc)
    for attack in ("large-gradient", "bit-flip"):
        threat = Threat(attack, 0.2)
        attacked = _honest_accuracy("federated-clustering", threat, 25, **fc)
        assert attacked >= clean - 5.0, (attack, attacked, clean)
    broken = _honest_accuracy("fedavg", Threat("large-gradient", 0.2), 25)
    assert broken <= 15.0 and clean > 40.0

"""Training in IP-FL: local work, the cold start and the reference training.

A participant's local work, the F1/KMeans cold start (App. B) and the reference FedAvg or local
training that PMA is measured against (Eq. 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from games.ipfl import f1_features
from learning.algorithms import Context, build_algorithm
from learning.drivers.ipfl.config import IPFLRun
from learning.drivers.ipfl.evaluation import predictions_on
from learning.drivers.ipfl.setup import Setup
from learning.engine import LocalResult, Params, broadcast, group_mean
from learning.loop import run_rounds

__all__ = ["cold_start", "group_training", "local_train", "reference_accuracy", "updates_per_round"]


def local_train(
    run: IPFLRun, ctx: Context, start: Params, clients: np.ndarray, rng: np.random.Generator
) -> LocalResult:
    """Local training of the participants (Alg. 1) with the run's local optimiser on the engine.

    The optimiser is SGD, or the reference code's Adadelta
    (:class:`learning.engine.AdadeltaConfig`, fresh state every round).
    """
    return ctx.fit(start, clients, rng)


def cold_start(
    run: IPFLRun, setup: Setup, rng: np.random.Generator
) -> tuple[Params, Params, list[np.ndarray]]:
    """Initial clusters from per-class F1 (App. B; RC ``select_clients_on_basis_of_f1_Scores``).

    ``pretrain_rounds`` of FedAvg with every client; each client trains the result on its
    data; the per-class F1 scores of these local models on a server test set (drawn from the
    source distributions) go through :func:`games.ipfl.f1_features` and KMeans(K,
    random_state=0). Returns the pre-trained global model (one row), the K tier models (the
    data-weighted mean of their members' local models; the RC's first-member copy is a bug)
    and the members of each cluster, which train in round 0.
    """
    ctx, n, k = setup.ctx, setup.ctx.n_clients, run.clusters
    pre = group_training(run, setup, setup.initial, run.pretrain_rounds, None, rng, "fedavg")
    base = {name: v[0] for name, v in pre.items()}
    local = local_train(run, ctx, broadcast(base, n), np.arange(n), rng)
    x = np.concatenate([src[0] for src in setup.sources])
    y = np.concatenate([src[1] for src in setup.sources])
    pick = rng.choice(len(y), min(run.server_test_size, len(y)), replace=False)
    features = f1_features(
        predictions_on(ctx.engine, local.params, x[pick]),
        y[pick],
        setup.federation.n_classes,
        run.f1_classes,
    )
    from sklearn.cluster import KMeans  # scikit-learn costs seconds to import

    labels = KMeans(k, random_state=0, n_init=10).fit_predict(features).astype(np.int64)
    models = group_mean(
        local.params,
        ctx.train.sizes.double(),
        torch.as_tensor(labels, device=ctx.device),
        broadcast(base, k),
    )
    return base, models, [np.flatnonzero(labels == c) for c in range(k)]


def updates_per_round(history: Sequence[dict[str, Any]]) -> int:
    """Mean number of client updates per round: the budget FedAvg gets for ρ."""
    return int(np.rint(np.mean([sum(len(s) for s in h["selected"]) for h in history])))


def group_training(
    run: IPFLRun,
    setup: Setup,
    start: Params,
    rounds: int,
    per_round: int | None,
    rng: np.random.Generator,
    name: str,
) -> Params:
    """Every client's model after ``rounds`` rounds of FedAvg or local training from ``start``.

    FedAvg is ``name="fedavg"``, local training ``"local"``; ``per_round`` clients a round (all
    when None), with the run's local optimiser: the registered algorithm on the engine.
    """
    outcome = run_rounds(
        build_algorithm(name, setup.ctx),
        broadcast(start, setup.ctx.n_clients),
        rounds,
        rng,
        clients_per_round=per_round,
        eval_every=rounds,
    )
    return outcome.models


def reference_accuracy(
    run: IPFLRun, setup: Setup, updates_per_round: int, start: Params
) -> np.ndarray:
    """ρ_i: FedAvg or local training from the model IP-FL's clusters started from.

    FedAvg runs with the same budget of client updates per round and the same local
    optimiser; the start is the pre-trained model after a cold start.
    """
    ctx = setup.ctx
    per_round = min(ctx.n_clients, max(1, updates_per_round)) if run.rho == "fedavg" else None
    name = "fedavg" if run.rho == "fedavg" else "local"
    rng = np.random.default_rng([run.seed, 1])
    models = group_training(run, setup, start, run.rounds, per_round, rng, name)
    accuracy = ctx.engine.evaluate(models, ctx.test).accuracy
    assert accuracy is not None
    return accuracy

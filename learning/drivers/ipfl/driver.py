"""The IP-FL round loop (Khan et al., Alg. 1): the token economy of :mod:`games.ipfl` around
training on the batched engine."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from games.ipfl import (
    TokenState,
    aggregation_weights,
    close_round,
    open_round,
    pma,
    shapley_first_order,
)
from learning.drivers.ipfl.checkpoint import (
    CHECKPOINT_NAME,
    checkpoint_payload,
    read_ipfl_checkpoint,
    restore_state,
)
from learning.drivers.ipfl.config import IPFLRun
from learning.drivers.ipfl.evaluation import (
    bidder_purity,
    cluster_accuracy,
    flat,
    holdout_gradient,
    importance,
    personalised_accuracy,
)
from learning.drivers.ipfl.result import IPFLResult
from learning.drivers.ipfl.setup import Setup, build_setup
from learning.drivers.ipfl.training import (
    cold_start,
    local_train,
    reference_accuracy,
    updates_per_round,
)
from learning.engine import broadcast, group_mean, select
from learning.loop import check_finite_loss, write_checkpoint
from learning.rng import draw_entropy, round_rng

__all__ = ["run_ipfl"]


def run_ipfl(
    run: IPFLRun,
    *,
    setup: Setup | None = None,
    device: torch.device | str = "cpu",
    data_dir: str | None = None,
    checkpoint_dir: str | os.PathLike[str] | None = None,
    resume: bool = False,
    progress: Callable[[int], None] = lambda _: None,
) -> IPFLResult:
    """Run IP-FL as described by ``run``; same seed -> same result.

    With ``checkpoint_dir`` the state is written atomically after every round; ``resume``
    continues from it to the numbers of an uninterrupted run. The checkpoint is read
    weights-only (:func:`learning.loop.read_checkpoint`) and checked against ``run`` before
    any data is loaded. ``progress`` is called with the number of rounds done (of
    ``run.rounds``) once the federation is built, and after every round.
    """
    ckpt = None if checkpoint_dir is None else Path(checkpoint_dir) / CHECKPOINT_NAME
    saved = None
    if resume and ckpt is not None and ckpt.exists():
        saved = read_ipfl_checkpoint(ckpt, run)  # before any data is loaded or trained
    resuming = saved is not None
    setup = build_setup(run, device=device, data_dir=data_dir) if setup is None else setup
    ctx, engine, mech = setup.ctx, setup.ctx.engine, run.mechanism
    n, k = ctx.n_clients, run.clusters
    sizes = ctx.train.sizes_numpy().astype(np.float64)
    start, models, groups = setup.initial, broadcast(setup.initial, k), None
    if run.cold_start == "f1_kmeans" and not resuming:
        start, models, groups = cold_start(run, setup, np.random.default_rng([run.seed, 3]))
    state: dict[str, Any] = {
        "round": 0,
        "entropy": draw_entropy(np.random.default_rng(run.seed)),
        "start": start,
        "groups": groups,
        "models": models,
        "tokens": TokenState.start(n, k, mech),
        "best": np.zeros(k, dtype=np.int64),
        "history": [],
    }
    if saved is not None:
        assert ckpt is not None
        state = restore_state(ckpt, saved, ctx.device)
    tokens_start = np.full(n, float(mech.tok_init))
    available = np.ones(n, dtype=bool)
    available[setup.unseen] = False

    progress(state["round"])
    for r in range(state["round"], run.rounds):
        rng = round_rng(state["entropy"], r)
        models = state["models"]
        scores = None if r == 0 else importance(engine, models, setup.val, run.importance)
        opening = open_round(
            state["tokens"], r, mech, rng, scores=scores, available=available,
            groups=state["groups"],
        )  # fmt: skip
        payers = opening.payers
        ks, cs = opening.participations()
        accuracy: dict[int, float] = {}
        contributions: dict[int, np.ndarray] = {}
        if cs.size:
            trained = local_train(run, ctx, select(models, ks), cs, rng)
            check_finite_loss("training", float(np.mean(trained.loss)), r + 1, run.lr)
            sample_weights = torch.as_tensor(sizes[cs], device=ctx.device)
            new = group_mean(
                trained.params, sample_weights, torch.as_tensor(ks, device=ctx.device), models
            )
            cluster_val = engine.evaluate(select(new, ks), setup.val, cs).accuracy
            assert cluster_val is not None
            for c, rows, members in opening.by_cluster():
                lam = aggregation_weights(sizes[members], mech)
                g = holdout_gradient(
                    engine,
                    select(new, np.array([c])),
                    setup.val,
                    members,
                    run.holdout_per_client,
                    rng,
                )
                contributions[c] = shapley_first_order(
                    g, flat(trained.params, rows), flat(new, [c])[0], lam
                )
                accuracy[c] = float(cluster_val[rows].mean())
            models = new
        tokens, refunds = close_round(opening, accuracy, contributions, mech)
        ledger = tokens.ledger
        paid_round, bids = opening.paid, opening.bids
        record: dict[str, Any] = {
            "round": r,
            "paid": paid_round,
            "tokens": ledger.tokens.tolist(),
            "pools": ledger.pools.tolist(),
            "selected": [s.tolist() for s in payers],
            "bids": bids.astype(int).tolist(),
            "psi": tokens.psi.tolist(),
            "refund": refunds.tolist(),
            "bidder_purity": bidder_purity(bids, setup.majority, state["best"])
            if paid_round
            else float("nan"),
        }
        if (r + 1) % run.eval_every == 0 or r + 1 == run.rounds:
            acc = cluster_accuracy(engine, models, setup.sources)
            state["best"] = np.argmax(acc, axis=1)
            record["cluster_accuracy"] = acc.tolist()
            personal_r, _ = personalised_accuracy(engine, models, setup, run)
            record["personalised_accuracy"] = personal_r.tolist()
        state["history"].append(record)
        state["models"], state["tokens"], state["round"] = models, tokens, r + 1
        if ckpt is not None:
            write_checkpoint(ckpt, checkpoint_payload(run, state))
        progress(r + 1)

    models = state["models"]
    personal, weights = personalised_accuracy(engine, models, setup, run)
    rho = reference_accuracy(run, setup, updates_per_round(state["history"]), state["start"])
    final: TokenState = state["tokens"]
    explored = final.explored
    return IPFLResult(
        run=run,
        tokens_start=tokens_start,
        tokens_end=final.ledger.tokens.copy(),
        cluster_accuracy=cluster_accuracy(engine, models, setup.sources),
        personalised_accuracy=personal,
        reference_accuracy=rho,
        weights=weights,
        pma=pma(personal, rho),
        never_selected=np.flatnonzero(~explored),
        history=tuple(state["history"]),
        models=models,
        ledger=final.ledger,
        state={
            "bids": np.array(state["history"][-1]["bids"], dtype=bool)
            if state["history"]
            else np.zeros((n, k), dtype=bool),
            "selected": [np.array(s, dtype=np.int64) for s in state["history"][-1]["selected"]]
            if state["history"]
            else [],
            **{
                key: getattr(final, key)
                for key in ("psi", "omega", "tracker", "explored", "improved")
            },
            "best": state["best"],
        },
        engine=engine,
        federation=setup.federation,
    )

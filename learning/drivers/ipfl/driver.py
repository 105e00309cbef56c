"""The IP-FL round loop (Khan et al., Alg. 1).

The token economy of :mod:`games.ipfl` around the clients' work
(:class:`learning.drivers.ipfl.clients.IPFLClients`), one loop for the in-process driver
(:func:`run_ipfl`) and the Flower federation (:mod:`learning.runtimes.flower.ipfl`).
"""

from __future__ import annotations

import math
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
from learning.drivers.ipfl.clients import InProcessClients, IPFLClients
from learning.drivers.ipfl.config import IPFLRun
from learning.drivers.ipfl.evaluation import bidder_purity, flat
from learning.drivers.ipfl.result import IPFLResult
from learning.drivers.ipfl.setup import Setup, build_setup
from learning.drivers.ipfl.training import cold_start, reference_accuracy, updates_per_round
from learning.engine import Params, broadcast, group_mean, select
from learning.loop import (
    DivergedError,
    clients_divergence,
    divergence_limit,
    write_checkpoint,
)
from learning.rng import draw_entropy, round_rng

__all__ = ["play_ipfl", "run_ipfl", "start_state"]


def start_state(
    run: IPFLRun, n: int, models: Params, groups: list[np.ndarray] | None = None
) -> dict[str, Any]:
    """The loop's state before round 0.

    It holds the :math:`K` cluster models ``models``, a cold start's clusters ``groups`` (round
    0 trains them), and every client's opening balance.
    """
    return {
        "round": 0,
        "entropy": draw_entropy(np.random.default_rng(run.seed)),
        "groups": groups,
        "models": models,
        "tokens": TokenState.start(n, run.clusters, run.mechanism),
        "best": np.zeros(run.clusters, dtype=np.int64),
        "history": [],
    }


def play_ipfl(
    clients: IPFLClients,
    run: IPFLRun,
    state: dict[str, Any],
    after_round: Callable[[dict[str, Any]], None] = lambda _: None,
) -> dict[str, Any]:
    """Play the rounds ``state["round"]`` to ``run.rounds`` of IP-FL with ``clients``.

    Returns the state after the last round; ``after_round`` sees the state after every round.

    A round draws from its stream (:func:`learning.rng.round_rng`) the bids and selection
    (:func:`games.ipfl.open_round`; every client scores the cluster models from round 1 on),
    the payers' minibatches (:meth:`IPFLClients.train`) and the hold-out rows
    (:meth:`IPFLClients.profile`). Each cluster model becomes the mean of its payers' models
    weighted by their training-set sizes; each payer's contribution is its first-order
    Shapley value (Eq. 16); :func:`games.ipfl.close_round` pays refunds and rewards. The
    round's record holds the ledger, the payers, the bids, the contributions, the refunds,
    the purity of the bids (where the clients' majorities are known) and, every
    ``eval_every`` rounds and after the last, the cluster and personalised accuracies.
    """
    mech = run.mechanism
    sizes, available = clients.sizes, clients.available
    # the untrained classifier's cross-entropy, ln C, is the initial loss of the divergence rule
    classes = 1 + max(int(np.max(y)) for _, y in clients.sources)
    limit = divergence_limit(math.log(classes))
    for r in range(state["round"], run.rounds):
        rng = round_rng(state["entropy"], r)
        models = state["models"]
        scores = None if r == 0 else clients.scores(models)
        opening = open_round(
            state["tokens"], r, mech, rng, scores=scores, available=available,
            groups=state["groups"],
        )  # fmt: skip
        ks, cs = opening.participations()
        accuracy: dict[int, float] = {}
        contributions: dict[int, np.ndarray] = {}
        if cs.size:
            trained = clients.train(select(models, ks), cs, rng)
            diverged = clients_divergence("training", trained.loss, r + 1, run.lr, limit, cs)
            if diverged is not None:
                raise DivergedError(diverged)
            device = next(iter(models.values())).device
            new = group_mean(
                trained.params,
                torch.as_tensor(sizes[cs], device=device),
                torch.as_tensor(ks, device=device),
                models,
            )
            payer_accuracy, gradients = clients.profile(new, opening, rng)
            for c, rows, members in opening.by_cluster():
                lam = aggregation_weights(sizes[members], mech)
                contributions[c] = shapley_first_order(
                    gradients[c], flat(trained.params, rows), flat(new, [c])[0], lam
                )
                accuracy[c] = float(payer_accuracy[rows].mean())
            models = new
        tokens, refunds = close_round(opening, accuracy, contributions, mech)
        record: dict[str, Any] = {
            "round": r,
            "paid": opening.paid,
            "tokens": tokens.ledger.tokens.tolist(),
            "pools": tokens.ledger.pools.tolist(),
            "selected": [s.tolist() for s in opening.payers],
            "bids": opening.bids.astype(int).tolist(),
            "psi": tokens.psi.tolist(),
            "refund": refunds.tolist(),
        }
        if clients.majority is not None:
            record["bidder_purity"] = (
                bidder_purity(opening.bids, clients.majority, state["best"])
                if opening.paid
                else float("nan")
            )
        if (r + 1) % run.eval_every == 0 or r + 1 == run.rounds:
            acc = clients.cluster_accuracy(models)
            state["best"] = np.argmax(acc, axis=1)
            record["cluster_accuracy"] = acc.tolist()
            record["personalised_accuracy"] = clients.personalised(models)[0].tolist()
        state["history"].append(record)
        state["models"], state["tokens"], state["round"] = models, tokens, r + 1
        after_round(state)
    return state


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
    setup = build_setup(run, device=device, data_dir=data_dir) if setup is None else setup
    clients = InProcessClients.of(run, setup)
    n, k = setup.ctx.n_clients, run.clusters
    if saved is not None:
        assert ckpt is not None
        state = restore_state(ckpt, saved, setup.ctx.device)
    elif run.cold_start == "f1_kmeans":
        start, models, groups = cold_start(run, setup, np.random.default_rng([run.seed, 3]))
        state = {**start_state(run, n, models, groups), "start": start}
    else:
        state = {**start_state(run, n, broadcast(setup.initial, k)), "start": setup.initial}

    def after_round(done: dict[str, Any]) -> None:
        if ckpt is not None:
            write_checkpoint(ckpt, checkpoint_payload(run, done))
        progress(done["round"])

    progress(state["round"])
    state = play_ipfl(clients, run, state, after_round)
    models = state["models"]
    personal, weights = clients.personalised(models)
    rho = reference_accuracy(run, setup, updates_per_round(state["history"]), state["start"])
    final: TokenState = state["tokens"]
    explored = final.explored
    return IPFLResult(
        run=run,
        tokens_start=np.full(n, float(run.mechanism.tok_init)),
        tokens_end=final.ledger.tokens.copy(),
        cluster_accuracy=clients.cluster_accuracy(models),
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
        engine=clients.engine,
        federation=setup.federation,
    )

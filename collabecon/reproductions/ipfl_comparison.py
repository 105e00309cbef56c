"""IP-FL against the baselines of its comparison tables (§6.3-6.4, Tables 3-5).

IP-FL is Khan et al., "IP-FL: Incentivized and Personalized Federated Learning".

:func:`compare` trains IP-FL and every registered baseline on one federation with the same
budget (the rounds and local steps of the run; the mean number of client updates per round
that IP-FL used), each with its own learning rate, chosen from a small grid by the mean
accuracy of its personalised models on the clients' validation data. A method whose test
accuracy stays within :data:`CHANCE_MARGIN` of chance is flagged with a note.

The paper's orderings, IP-FL's personalised accuracy above each baseline's, are claims
(:func:`order_specs`) judged on the rows of :func:`compare`.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from collabecon.reproductions.ipfl_claims import PAPER
from econ.claims import Claim, ClaimSpec, evaluate
from games.ipfl import opt_outs, pma
from learning.algorithms import ALGORITHMS, build_algorithm
from learning.algorithms.base import algorithm_parameters
from learning.drivers.ipfl import IPFLResult, IPFLRun, Setup, build_setup, personalise, run_ipfl
from learning.drivers.ipfl.evaluation import cluster_accuracy, mixture_accuracy
from learning.drivers.ipfl.training import updates_per_round
from learning.engine import ShardedData, broadcast
from learning.loop import DivergedError, run_rounds

__all__ = [
    "BASELINES",
    "CHANCE_MARGIN",
    "LR_GRID",
    "PUBLISHED_ORDER",
    "accuracy_margin",
    "compare",
    "compared_baselines",
    "order_claims",
    "order_specs",
]

#: Baselines of the comparison tables (§6, Tables 3, 4, 5), in the paper's order; those not
#: registered are skipped.
BASELINES = ("fedavg", "fedprox", "ditto", "ifca", "fedsoft", "fedem", "per-fedavg")
_BASELINE_MODULES = ("fedprox", "fedsoft", "fedem", "perfedavg", "ditto", "ifca")
_CLUSTER_PARAMETERS = ("clusters", "components", "n_clusters", "k")
#: Learning rates every method of a comparison chooses from (by validation accuracy).
LR_GRID = (0.03, 0.1, 0.3, 1.0)
#: A method whose mean test accuracy is below chance + this margin is flagged.
CHANCE_MARGIN = 0.05

#: The paper's personalised accuracy (%) of IP-FL and each baseline behind the orderings,
#: with the cells they are read from: Table 5 (feature-shift EMNIST, row Pers. Acc.) for the
#: non-clustering methods, Table 3 (CIFAR-10 10:90, each method's best cluster-model cell)
#: for the clustering ones.
PUBLISHED_ORDER: dict[str, tuple[str, float, float]] = {
    "fedavg": ("Table 5, row Pers. Acc., columns IP-FL and FedAvg", 84.3, 75.7),
    "fedprox": ("Table 5, row Pers. Acc., columns IP-FL and FedProx", 84.3, 78.8),
    "ditto": ("Table 5, row Pers. Acc., columns IP-FL and Ditto", 84.3, 83.7),
    "per-fedavg": ("Table 5, row Pers. Acc., columns IP-FL and PerfFedAvg", 84.3, 83.7),
    "ifca": ("Table 3, 10:90, best cells: IP-FL θ1/c1, IFCA θ1/c0", 63.8, 47.0),
    "fedsoft": ("Table 3, 10:90, best cells: IP-FL θ1/c1, FedSoft θ1/c0", 63.8, 50.7),
    "fedem": ("Table 3, 10:90, best cells: IP-FL θ1/c1, FedEM θ1/c1", 63.8, 47.1),
}


def _load_baselines() -> None:
    for module in _BASELINE_MODULES:
        name = f"learning.algorithms.{module}"
        if importlib.util.find_spec(name) is not None:
            importlib.import_module(name)


def compared_baselines() -> list[str]:
    """The baselines :func:`compare` runs: those of :data:`BASELINES` that are registered."""
    _load_baselines()
    return [name for name in BASELINES if name in ALGORITHMS]


def _baseline_params(name: str, clusters: int, lr: float) -> dict[str, Any]:
    r"""Each baseline's own parameters in the comparison.

    The number of clusters under its own name; IFCA's option II (local training and model
    averaging, Ghosh et al. 2020, Alg. 1), so that it trains with the same local steps as the
    others; Per-FedAvg's outer step :math:`\beta` equal to the learning rate.
    """
    params: dict[str, Any] = {
        p: clusters for p in algorithm_parameters(name) if p in _CLUSTER_PARAMETERS
    }
    if name == "ifca":
        params["option"] = "model"
    if name == "per-fedavg":
        params["beta"] = lr
    return params


def _with_lr(setup: Setup, lr: float) -> Setup:
    ctx = setup.ctx
    sgd = dataclasses.replace(ctx.local.sgd, lr=lr)
    local = dataclasses.replace(ctx.local, sgd=sgd)
    return dataclasses.replace(setup, ctx=dataclasses.replace(ctx, local=local))


def _variant_name(run: IPFLRun) -> str:
    """``ip-fl`` for the paper's personalisation, else ``ip-fl`` with its options named.

    The options are named so that the output mixture (not Eq. 8) is never reported as IP-FL.
    """
    options = [
        value
        for value, default in (
            (run.importance, "accuracy"),
            (run.personalize, "param_avg"),
            (run.cold_start, "random"),
        )
        if value != default
    ]
    return "ip-fl" if not options else f"ip-fl ({', '.join(options)})"


@dataclasses.dataclass(frozen=True, slots=True)
class _Trained:
    """One method trained at one learning rate.

    The accuracy of its personalised models on validation and test data (per client), its
    mean test accuracy over the rounds (``[round, accuracy]`` pairs), its cluster models'
    accuracy on each source distribution (None for a method without cluster models) and,
    for IP-FL, its result.
    """

    val: np.ndarray
    test: np.ndarray
    curve: list[list[float]]
    clusters: np.ndarray | None
    result: IPFLResult | None = None


def _ipfl_accuracy(run: IPFLRun, setup: Setup) -> _Trained:
    """IP-FL's result and the accuracy of its personalised models on validation and test."""
    result = run_ipfl(run, setup=setup)
    engine = setup.ctx.engine
    if run.personalize == "param_avg":
        val = engine.evaluate(personalise(result.models, result.weights), setup.val).accuracy
    else:
        val = mixture_accuracy(engine, result.models, result.weights, setup.val)
    assert val is not None
    curve = [
        [h["round"] + 1, float(np.mean(h["personalised_accuracy"]))]
        for h in result.history
        if "personalised_accuracy" in h
    ]
    return _Trained(
        val, result.personalised_accuracy, curve, result.cluster_accuracy, result=result
    )


def _deployed_accuracy(algorithm: Any, state: Any, data: ShardedData) -> np.ndarray:
    """Per-client accuracy on ``data`` of the models ``algorithm`` deploys in ``state``.

    FedEM predicts with its output mixture; every other method with its client models.
    """
    engine = algorithm.ctx.engine
    mixture = getattr(algorithm, "mixture", None)
    if mixture is not None:
        components, pi = mixture(state)
        return mixture_accuracy(engine, components, pi, data)
    accuracy = engine.evaluate(algorithm.client_models(state), data).accuracy
    assert accuracy is not None
    return np.asarray(accuracy)


def _baseline_accuracy(name: str, run: IPFLRun, setup: Setup, lr: float, updates: int) -> _Trained:
    """Baseline ``name`` trained ``run.rounds`` rounds of ``updates`` clients at rate ``lr``.

    Every ``run.eval_every`` rounds the models the method would deploy then (after its
    finishing step, as at the end) are scored on the test data: the curve of
    :func:`compare`.
    """
    tuned = _with_lr(setup, lr)
    ctx = tuned.ctx
    algorithm = build_algorithm(name, ctx, **_baseline_params(name, run.clusters, lr))
    curve: list[list[float]] = []

    def observe(done: int, state: Any) -> None:
        if done < run.rounds:
            finished = algorithm.finish(state, np.random.default_rng([run.seed, 4, done]))
            curve.append([done, float(_deployed_accuracy(algorithm, finished, ctx.test).mean())])

    outcome = run_rounds(
        algorithm,
        broadcast(setup.initial, ctx.n_clients),
        run.rounds,
        np.random.default_rng([run.seed, 2]),
        clients_per_round=min(ctx.n_clients, max(1, updates)),
        eval_every=run.eval_every,
        observe=observe,
    )
    val = _deployed_accuracy(algorithm, outcome.state, setup.val)
    test = _deployed_accuracy(algorithm, outcome.state, ctx.test)
    curve.append([run.rounds, float(test.mean())])
    cluster_models = getattr(algorithm, "cluster_models", None)
    clusters = (
        None
        if cluster_models is None
        else cluster_accuracy(ctx.engine, cluster_models(outcome.state), setup.sources)
    )
    return _Trained(val, test, curve, clusters)


def _unless_diverged(fn: Any, *args: Any) -> Any:
    """``fn(*args)``, or None when training diverged at that learning rate."""
    try:
        return fn(*args)
    except DivergedError:
        return None


def _val_means(runs: dict[float, _Trained | None]) -> dict[float, float | None]:
    return {lr: None if r is None else float(r.val.mean()) for lr, r in runs.items()}


def _best(runs: dict[float, _Trained | None], name: str) -> float:
    """The learning rate whose run has the best mean validation accuracy (the first of a tie)."""
    scores = {lr: float(r.val.mean()) for lr, r in runs.items() if r is not None}
    if not scores:
        raise DivergedError(
            f"training of {name} diverged at every learning rate of the grid "
            f"{[float(lr) for lr in runs]} (--lr-grid); try smaller learning rates"
        )
    return max(scores, key=lambda lr: scores[lr])


def _row(
    name: str,
    accuracy: np.ndarray,
    rho: np.ndarray,
    lr: float,
    val_by_lr: dict[float, float | None],
    chance: float,
    trained: _Trained | None = None,
) -> dict[str, Any]:
    """The row of ``name`` in :func:`compare`; its curve and cluster accuracy from ``trained``."""
    values = pma(accuracy, rho)
    mean = float(accuracy.mean())
    near = mean < chance + CHANCE_MARGIN
    note = ""
    if near:
        note = (
            f"within {100 * CHANCE_MARGIN:.0f} pp of chance ({100 * chance:.0f} %) at the best "
            f"learning rate of the grid (validation accuracy "
            + ", ".join(
                f"lr {k:g}: " + ("diverged" if v is None else f"{100 * v:.1f} %")
                for k, v in val_by_lr.items()
            )
            + "): the method does not learn at this budget"
        )
    return {
        "method": name,
        "lr": lr,
        "validation_accuracy_by_lr": {f"{k:g}": v for k, v in val_by_lr.items()},
        "personalised_accuracy_mean": mean,
        "personalised_accuracy_std": float(accuracy.std()),
        "personalised_accuracy": accuracy.tolist(),
        "pma": values.tolist(),
        "pma_mean": float(values.mean()),
        "pma_positive_share": float(np.mean(values > 0)),
        "opt_out_rate": float(opt_outs(values).mean()),
        "opt_out_percent": 100.0 * float(opt_outs(values).mean()),
        "curve": [] if trained is None else trained.curve,
        "cluster_accuracy": None
        if trained is None or trained.clusters is None
        else trained.clusters.tolist(),
        "near_chance": near,
        "note": note,
    }


def compare(
    run: IPFLRun,
    *,
    lr_grid: tuple[float, ...] = LR_GRID,
    device: torch.device | str = "cpu",
    data_dir: str | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """IP-FL and every registered baseline on the same federation and budget.

    Every method trains ``run.rounds`` rounds of ``run.local_steps`` local steps; the
    baselines get as many client updates per round as IP-FL used on average. Each method's
    learning rate is the one of ``lr_grid`` with the best mean validation accuracy of its
    personalised models. PMA is measured against the FedAvg row (Eq. 1). Each row has the
    personalised test accuracy (per client; mean, std over clients), PMA (per client, its
    mean, the share of clients with PMA > 0; pp), the opt-out rate (PMA <= 0, Eq. 2), the
    mean test accuracy every ``run.eval_every`` rounds (``curve``, ``[round, accuracy]``
    pairs: Fig. 2), the cluster models' accuracy on each source distribution
    (``cluster_accuracy``, None without cluster models: Tables 2, 8, 9), the chosen
    learning rate, the validation accuracy at every grid point and ``near_chance`` with a ``note`` when the mean accuracy is below chance +
    :data:`CHANCE_MARGIN`. ``claims`` are the paper's orderings (IP-FL above each baseline,
    Tables 3 and 5).

    The baselines train with the engine's SGD, so ``run`` must use SGD too. ``progress``
    is called with a short text before each training run (a method at one learning rate:
    ``(1 + len(compared_baselines())) * len(lr_grid)`` calls).
    """
    if run.local_optimizer != "sgd":
        raise ValueError(
            "compare trains the baselines with SGD; give optimizer='sgd' (with --code-compat, "
            "the reference code's Adadelta is used for IP-FL alone)"
        )
    if not lr_grid or any(not (lr > 0 and np.isfinite(lr)) for lr in lr_grid):
        raise ValueError(f"lr_grid must be positive finite learning rates, got {lr_grid}")
    baselines = compared_baselines()
    setup = build_setup(run, device=device, data_dir=data_dir)
    chance = 1.0 / setup.federation.n_classes
    # IP-FL first: its mean number of updates per round is every baseline's budget
    ipfl: dict[float, _Trained | None] = {}
    for lr in lr_grid:
        progress(f"{_variant_name(run)}, lr {lr:g}")
        ipfl[lr] = _unless_diverged(
            _ipfl_accuracy, dataclasses.replace(run, lr=lr), _with_lr(setup, lr)
        )
    ip_lr = _best(ipfl, "ip-fl")
    chosen = ipfl[ip_lr]
    assert chosen is not None and chosen.result is not None
    result = chosen.result
    updates = updates_per_round(result.history)
    tests: dict[str, tuple[float, dict[float, float | None], _Trained]] = {
        _variant_name(run): (ip_lr, _val_means(ipfl), chosen)
    }
    for name in baselines:
        runs: dict[float, _Trained | None] = {}
        for lr in lr_grid:
            progress(f"{name}, lr {lr:g}")
            runs[lr] = _unless_diverged(_baseline_accuracy, name, run, setup, lr, updates)
        best = _best(runs, name)
        trained = runs[best]
        assert trained is not None
        tests[name] = (best, _val_means(runs), trained)
    rho = tests["fedavg"][2].test if "fedavg" in tests else result.reference_accuracy
    rows = [_row(name, t.test, rho, lr, val, chance, t) for name, (lr, val, t) in tests.items()]
    return {
        "partition": run.partition,
        "shift": run.shift,
        "budget": {
            "rounds": run.rounds,
            "local_steps": run.local_steps,
            "client_updates_per_round": updates,
        },
        "lr_grid": list(lr_grid),
        "chance": chance,
        "rows": rows,
        "claims": [c.to_dict() for c in order_claims(rows, run)],
    }


def _versus(rows: list[dict[str, Any]], method: str) -> tuple[dict[str, Any], np.ndarray]:
    """The row of ``method`` and IP-FL's per-client accuracy minus its (pp)."""
    row = next(r for r in rows[1:] if r["method"] == method)
    diff = np.asarray(rows[0]["personalised_accuracy"]) - np.asarray(row["personalised_accuracy"])
    return row, 100 * diff


def _standard_error(diff: np.ndarray) -> float:
    return float(diff.std(ddof=1) / np.sqrt(diff.size)) if diff.size > 1 else float("inf")


def _order_note(rows: list[dict[str, Any]], method: str, shift: str, partition: str) -> str:
    row, diff = _versus(rows, method)
    note = (
        f"one seed, {partition} {shift}; per-client difference "
        f"{diff.mean():+.1f} pp, standard error {_standard_error(diff):.1f} pp"
    )
    if row["near_chance"]:
        note += f"; {method} within {100 * CHANCE_MARGIN:.0f} pp of chance"
    return note


def _order_spec(method: str, shift: str, partition: str) -> ClaimSpec:
    """IP-FL's personalised accuracy above ``method``'s, under ``shift`` at ``partition``."""
    table, ours, theirs = PUBLISHED_ORDER[method]

    def diff(rows: list[dict[str, Any]]) -> np.ndarray:
        return _versus(rows, method)[1]

    return ClaimSpec(
        id=f"compare.{shift}.{partition}.ip-fl>{method}",
        statement=f"IP-FL's personalised accuracy exceeds {method}'s (by more than twice the "
        "standard error of the per-client differences)",
        where=f"{PAPER}, {table}",
        published=f"{ours:.1f} > {theirs:.1f}",
        measured=lambda rows: (
            f"{100 * rows[0]['personalised_accuracy_mean']:.1f} vs "
            f"{100 * _versus(rows, method)[0]['personalised_accuracy_mean']:.1f}"
        ),
        holds=lambda rows: diff(rows).mean() > 2 * _standard_error(diff(rows)),
        note=lambda rows: _order_note(rows, method, shift, partition),
        applies=lambda rows: any(r["method"] == method for r in rows[1:]),
    )


def order_specs(shift: str, partition: str) -> tuple[ClaimSpec, ...]:
    r"""The paper's orderings for a comparison under ``shift`` at ``partition``.

    Judged on :func:`compare`'s rows: IP-FL's personalised accuracy above each baseline's
    (§6.3-6.4: "IP-FL consistently outperforms"; Table 5 for FedAvg, FedProx, Ditto and
    Per-FedAvg, Table 3 for IFCA, FedSoft and FedEM). One seed: an ordering holds when the
    mean of the per-client differences exceeds twice its standard error over the clients.
    Table 5's row Avg. PMA orders the methods alike: every method's
    :math:`PMA_i = f_i - \rho_i` subtracts the same FedAvg accuracy :math:`\rho_i` (Eq. 1),
    so its per-client differences are those of the personalised accuracies.
    """
    return tuple(
        _order_spec(method, shift, partition) for method in BASELINES if method in PUBLISHED_ORDER
    )


def order_claims(rows: list[dict[str, Any]], run: IPFLRun) -> list[Claim]:
    """The paper's orderings (:func:`order_specs`) on :func:`compare`'s ``rows`` of ``run``."""
    return evaluate(order_specs(run.shift, run.partition), rows)


def accuracy_margin(rows: list[dict[str, Any]], method: str) -> tuple[float, float]:
    """IP-FL's personalised accuracy minus ``method``'s (pp): the mean over clients, its SE.

    ``rows`` are :func:`compare`'s, IP-FL's first. The ordering "IP-FL above ``method``"
    holds on one seed when the mean exceeds twice the standard error (:func:`order_specs`).
    """
    diff = _versus(rows, method)[1]
    return float(diff.mean()), _standard_error(diff)

"""IP-FL's driver: K cluster models on the batched engine, steered by the token mechanism.

The mechanism (bids, scheduler, ledger, contributions, PMA) lives in :mod:`games.ipfl`; this
module trains and evaluates. One round (Khan et al., Alg. 1; spec §2.2):

1. every client evaluates the K cluster models on its validation data (importance weights,
   Eq. 7) and bids (Alg. 2); round 0 is a random bootstrap without token flows;
2. the scheduler picks the participants of each cluster; they pay the price into its pool;
3. each participant trains its cluster's model (all pairs at once on the engine); each
   cluster model becomes the FedAvg of its participants;
4. the profiler scores each participant by the first-order Shapley value (Eq. 16) with the
   gradient of the loss on a hold-out drawn from the participants' validation data;
5. the pool pays the refund (Eq. 11-12) and the rank rewards (Eq. 13).

At the end every client builds its personalised model :math:`P_i = \\sum_k w_{ik} M_k`
(Eq. 8) and PMA is measured against FedAvg trained with the same budget (Eq. 1).
"""

from __future__ import annotations

import csv
import dataclasses
import importlib
import importlib.util
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from econ.validation import choice, in_interval, positive_int
from games.ipfl import (
    IPFLConfig,
    Ledger,
    RefundTracker,
    TokenQualities,
    bootstrap_select,
    collect,
    importance_weights,
    n_perf_default,
    n_rand_schedule,
    opt_outs,
    pma,
    preference_bids,
    select_clients,
    settle_cluster,
    shapley_first_order,
)
from learning.algorithms import ALGORITHMS, Context, LocalTraining, build_algorithm
from learning.algorithms.base import algorithm_parameters
from learning.engine import (
    Engine,
    Params,
    SGDConfig,
    ShardedData,
    broadcast,
    group_mean,
    parameters_of,
    select,
)
from learning.experiment import build_engine
from learning.federation import Federation, make_federation
from learning.loop import run_rounds
from learning.models import build_model
from learning.rng import draw_entropy, round_rng, torch_generator

__all__ = [
    "PARTITIONS",
    "IPFLResult",
    "IPFLRun",
    "Setup",
    "build_setup",
    "compare",
    "personalise",
    "run_ipfl",
]

#: Partitions of the command line: the mixtures of §6.1 and the class-group split.
PARTITIONS = ("10:90", "30:70", "40:60", "linear", "random", "pathological")
_CHECKPOINT = "ipfl_checkpoint.pt"


@dataclass(frozen=True, slots=True, kw_only=True)
class IPFLRun:
    """Every choice of one IP-FL run (data, model, training, mechanism).

    Defaults are a CPU-sized version of the paper's setting (spec §6.3): 20 clients of
    ``mnist5k`` holding upright and rotated digits 10:90, two clusters, an MLP.
    """

    dataset: str = "mnist5k"
    partition: str = "10:90"
    clients: int = 20
    clusters: int = 2
    rounds: int = 30
    model: str = "mlp"
    local_steps: int = 10
    batch_size: int = 32
    lr: float = 0.05
    momentum: float = 0.0
    size: int | None = None
    classes_per_client: int = 2
    test_fraction: float = 0.2
    val_fraction: float = 0.1
    target_fraction: float = 0.2
    flip_test_view: bool = False
    holdout_per_client: int = 32
    noisy_share: float = 0.0
    noise_rate: float = 0.5
    unseen_share: float = 0.0
    rho: str = "fedavg"
    eval_every: int = 5
    engine: str = "batched"
    seed: int = 0
    mechanism: IPFLConfig = field(default_factory=IPFLConfig)

    def __post_init__(self) -> None:
        choice("partition", self.partition, PARTITIONS)
        choice("rho", self.rho, ("fedavg", "local"))
        for name in ("clients", "clusters", "rounds", "local_steps", "batch_size", "eval_every"):
            positive_int(name, getattr(self, name))
        positive_int("holdout_per_client", self.holdout_per_client)
        for name in ("noisy_share", "noise_rate"):
            in_interval(name, getattr(self, name), 0.0, 1.0)
        in_interval("unseen_share", self.unseen_share, 0.0, 1.0, high_open=True)
        in_interval("val_fraction", self.val_fraction, 0.0, 1.0, low_open=True, high_open=True)
        in_interval(
            "target_fraction", self.target_fraction, 0.0, 1.0, low_open=True, high_open=True
        )
        if self.flip_test_view and self.partition == "pathological":
            raise ValueError("flip_test_view applies to the mixture partitions only")
        SGDConfig(self.lr, self.momentum)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready copy."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["mechanism"] = self.mechanism.to_dict()
        return out

    def fingerprint(self) -> dict[str, Any]:
        """What a checkpoint must agree on: everything but the rounds and evaluation period."""
        out = self.to_dict()
        for key in ("rounds", "eval_every"):
            out.pop(key)
        return out


@dataclass(frozen=True, slots=True)
class Setup:
    """A federation on the device: engine, context (train/test), validation data, the
    source test distributions and the shared initial model."""

    federation: Federation
    ctx: Context
    val: ShardedData
    sources: tuple[tuple[np.ndarray, np.ndarray], ...]
    initial: Params
    majority: np.ndarray  # majority source of each client: view 0/1, or its class group
    noisy: np.ndarray  # clients whose training labels were partly flipped (spec B5)
    unseen: np.ndarray  # clients never scheduled (spec B6)


def _sources(fed: Federation, partition: str, k: int) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    assert fed.target is not None
    x, y = fed.target
    if partition == "pathological":
        return tuple((x[y // k == g], y[y // k == g]) for g in range(fed.n_classes // k))
    rotated = np.ascontiguousarray(np.rot90(x, k=1, axes=(-2, -1)))
    return ((x, y), (rotated, y))


def build_setup(
    run: IPFLRun, *, device: torch.device | str = "cpu", data_dir: str | None = None
) -> Setup:
    """Build the federation of ``run`` (seeded by ``run.seed``) and everything on the device."""
    rng = np.random.default_rng(run.seed)
    data_rng, model_rng, split_rng, role_rng = rng.spawn(4)
    if run.partition == "pathological":
        params: dict[str, Any] = {"classes_per_client": run.classes_per_client}
        name = "pathological"
    else:
        params = {"scheme": run.partition}
        if run.size is not None:
            params["size"] = run.size
        name = "mixture"
    fed = make_federation(
        run.dataset,
        name,
        run.clients,
        seed=data_rng,
        test_fraction=run.test_fraction,
        target_fraction=run.target_fraction,
        data_dir=data_dir,
        flip_test_view=run.flip_test_view,
        **params,
    )
    dev = torch.device(device)
    model = build_model(
        run.model, fed.input_shape, fed.n_classes, generator=torch_generator(model_rng)
    )
    engine = build_engine(run.engine, model, fed.n_classes, dev)
    noisy = np.sort(
        role_rng.choice(run.clients, round(run.noisy_share * run.clients), replace=False)
    )
    unseen = np.sort(
        role_rng.choice(run.clients, round(run.unseen_share * run.clients), replace=False)
    )
    xs_t, ys_t, xs_v, ys_v = [], [], [], []
    for j, c in enumerate(fed.clients):
        if c.n_train < 2:
            raise ValueError(f"client {j} has {c.n_train} training examples; needs 2 (train + val)")
        order = split_rng.permutation(c.n_train)
        n_val = min(max(1, round(run.val_fraction * c.n_train)), c.n_train - 1)
        xs_v.append(c.x_train[order[:n_val]])
        ys_v.append(c.y_train[order[:n_val]])
        xs_t.append(c.x_train[order[n_val:]])
        y_train = c.y_train[order[n_val:]].copy()
        if j in noisy:  # flip a share of the labels to another class (val stays clean)
            flip = role_rng.random(y_train.size) < run.noise_rate
            shift = role_rng.integers(1, fed.n_classes, size=int(flip.sum()))
            y_train[flip] = (y_train[flip] + shift) % fed.n_classes
        ys_t.append(y_train)
    ctx = Context(
        engine=engine,
        train=ShardedData.from_arrays(xs_t, ys_t, dev),
        test=ShardedData.from_arrays(
            [c.x_test for c in fed.clients], [c.y_test for c in fed.clients], dev
        ),
        local=LocalTraining(run.local_steps, run.batch_size, SGDConfig(run.lr, run.momentum)),
        clusters=fed.clusters,
    )
    base = {k: v.to(dev) for k, v in parameters_of(engine.model).items()}
    return Setup(
        federation=fed,
        ctx=ctx,
        val=ShardedData.from_arrays(xs_v, ys_v, dev),
        sources=_sources(fed, run.partition, run.classes_per_client),
        initial=base,
        majority=fed.clusters,
        noisy=noisy,
        unseen=unseen,
    )


@dataclass(frozen=True, slots=True)
class IPFLResult:
    """Outcome of :func:`run_ipfl`.

    ``cluster_accuracy[k][d]`` is the accuracy of cluster model ``k`` on source test
    distribution ``d`` (θ0 upright, θ1 rotated; or class group ``d``). ``history`` holds one
    JSON-ready record per round (balances, selections, contributions, refunds, and every
    ``eval_every`` rounds the cluster accuracies).
    """

    run: IPFLRun
    tokens_start: np.ndarray
    tokens_end: np.ndarray
    cluster_accuracy: np.ndarray
    personalised_accuracy: np.ndarray
    reference_accuracy: np.ndarray
    weights: np.ndarray
    pma: np.ndarray
    never_selected: np.ndarray
    history: tuple[dict[str, Any], ...]
    models: Params

    @property
    def opt_out_rate(self) -> float:
        return float(opt_outs(self.pma).mean())

    def qualities(self, n_eval: Sequence[int] | None = None) -> TokenQualities:
        """Per-client net token flow and PMA, for the econ modules."""
        n = len(self.pma)
        return TokenQualities(
            names=tuple(f"client{i}" for i in range(n)),
            net_tokens=self.tokens_end - self.tokens_start,
            pma=self.pma,
            personalised_accuracy=self.personalised_accuracy,
            n_eval=np.ones(n, dtype=np.int64) if n_eval is None else np.asarray(n_eval),
        )

    def summary(self) -> dict[str, Any]:
        """The command line's result object."""
        return {
            "tokens_start": self.tokens_start.tolist(),
            "tokens_end": self.tokens_end.tolist(),
            "cluster_accuracy": self.cluster_accuracy.tolist(),
            "pma_mean": float(self.pma.mean()),
            "pma_positive_share": float(np.mean(self.pma > 0)),
            "opt_out_rate": self.opt_out_rate,
            "personalised_accuracy_mean": float(self.personalised_accuracy.mean()),
        }

    def save(self, directory: str | os.PathLike[str]) -> list[Path]:
        """Write ``ipfl_rounds.csv`` (one row per round) and ``ipfl_result.json``."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        rows = [
            {
                "round": h["round"],
                "paid": h["paid"],
                "tokens_mean": float(np.mean(h["tokens"])),
                "tokens_min": float(np.min(h["tokens"])),
                "tokens_max": float(np.max(h["tokens"])),
                "pool_total": float(np.sum(h["pools"])),
                "selected": ";".join(" ".join(map(str, s)) for s in h["selected"]),
                "refund": " ".join(f"{u:.4g}" for u in h["refund"]),
                "bidder_purity": h["bidder_purity"],
                "cluster_accuracy": json.dumps(h.get("cluster_accuracy")),
            }
            for h in self.history
        ]
        csv_path = out / "ipfl_rounds.csv"
        with csv_path.open("w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        json_path = out / "ipfl_result.json"
        payload = {
            "run": self.run.to_dict(),
            **self.summary(),
            "personalised_accuracy": self.personalised_accuracy.tolist(),
            "reference_accuracy": self.reference_accuracy.tolist(),
            "pma": self.pma.tolist(),
            "history": list(self.history),
        }
        json_path.write_text(json.dumps(payload))
        return [csv_path, json_path]


# --------------------------------------------------------------------------- evaluation


def _flat(params: Params, rows: Sequence[int] | np.ndarray) -> np.ndarray:
    idx = torch.as_tensor(
        np.asarray(rows), dtype=torch.long, device=next(iter(params.values())).device
    )
    return (
        torch.cat([p.index_select(0, idx).reshape(len(idx), -1) for p in params.values()], 1)
        .double()
        .cpu()
        .numpy()
    )


def _accuracy_matrix(engine: Engine, models: Params, data: ShardedData) -> np.ndarray:
    """(N, K): accuracy of cluster model k on client i's examples of ``data``."""
    n, k = data.n_clients, next(iter(models.values())).shape[0]
    out = np.zeros((n, k))
    for c in range(k):
        ev = engine.evaluate(select(models, np.full(n, c)), data)
        assert ev.accuracy is not None
        out[:, c] = ev.accuracy
    return out


def personalise(models: Params, weights: np.ndarray) -> Params:
    """Eq. 8 on tensors: :math:`P_i = \\sum_k w_{ik} M_k` for every client (rows of ``weights``)."""
    w = torch.as_tensor(
        weights, dtype=next(iter(models.values())).dtype, device=next(iter(models.values())).device
    )
    return {name: torch.tensordot(w, p, dims=([1], [0])) for name, p in models.items()}


def _personalised_accuracy(
    engine: Engine, models: Params, setup: Setup, weights: np.ndarray | None = None
) -> np.ndarray:
    """f_i: accuracy of P_i (Eq. 8, weights from the validation accuracies) on D_i^test."""
    if weights is None:
        weights = importance_weights(_accuracy_matrix(engine, models, setup.val))
    accuracy = engine.evaluate(personalise(models, weights), setup.ctx.test).accuracy
    assert accuracy is not None
    return accuracy


def _cluster_accuracy(
    engine: Engine, models: Params, sources: Sequence[tuple[np.ndarray, np.ndarray]]
) -> np.ndarray:
    cols = []
    for x, y in sources:
        ev = engine.evaluate_on(models, x, y)
        assert ev.accuracy is not None
        cols.append(ev.accuracy)
    return np.stack(cols, axis=1)


def _holdout_gradient(
    engine: Engine,
    model: Params,
    val: ShardedData,
    clients: np.ndarray,
    per_client: int,
    rng: np.random.Generator,
) -> np.ndarray:
    sizes = val.sizes_numpy()[clients]
    starts = val.offsets.cpu().numpy()[clients]
    rows = np.concatenate(
        [s + rng.permutation(n)[: min(n, per_client)] for s, n in zip(starts, sizes, strict=True)]
    )
    idx = torch.as_tensor(rows, dtype=torch.long, device=val.x.device)
    grads, _ = engine.gradients(model, val.x[idx][None], val.y[idx][None])
    return _flat(grads, [0])[0]


# --------------------------------------------------------------------------- the run


def _purity(bids: np.ndarray, majority: np.ndarray, best: np.ndarray) -> float:
    """Share of bids placed by clients whose majority distribution is the one the cluster
    model is best on (spec §2.8)."""
    rows, cols = np.nonzero(bids)
    return float(np.mean(majority[rows] == best[cols])) if rows.size else float("nan")


def _updates_per_round(history: Sequence[dict[str, Any]]) -> int:
    """Mean number of client updates per round: the budget FedAvg gets for ρ."""
    return int(np.rint(np.mean([sum(len(s) for s in h["selected"]) for h in history])))


def _save_checkpoint(path: Path, payload: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    torch.save(payload, tmp)
    os.replace(tmp, path)


def _reference(run: IPFLRun, setup: Setup, updates_per_round: int) -> np.ndarray:
    """ρ_i: FedAvg with the same budget of client updates per round, or local training."""
    ctx = setup.ctx
    name = "fedavg" if run.rho == "fedavg" else "local"
    per_round = min(ctx.n_clients, max(1, updates_per_round)) if name == "fedavg" else None
    outcome = run_rounds(
        build_algorithm(name, ctx),
        broadcast(setup.initial, ctx.n_clients),
        run.rounds,
        np.random.default_rng([run.seed, 1]),
        clients_per_round=per_round,
        eval_every=run.rounds,
    )
    assert outcome.evaluation.accuracy is not None
    return outcome.evaluation.accuracy


def run_ipfl(
    run: IPFLRun,
    *,
    setup: Setup | None = None,
    device: torch.device | str = "cpu",
    data_dir: str | None = None,
    checkpoint_dir: str | os.PathLike[str] | None = None,
    resume: bool = False,
) -> IPFLResult:
    """Run IP-FL as described by ``run``; same seed -> same result.

    With ``checkpoint_dir`` the state is written atomically after every round; ``resume``
    continues from it to the numbers of an uninterrupted run.
    """
    setup = build_setup(run, device=device, data_dir=data_dir) if setup is None else setup
    ctx, engine, mech = setup.ctx, setup.ctx.engine, run.mechanism
    n, k = ctx.n_clients, run.clusters
    n_perf = n_perf_default(n, k, mech.perf_share)
    sizes = ctx.train.sizes_numpy().astype(np.float64)
    state: dict[str, Any] = {
        "round": 0,
        "entropy": draw_entropy(np.random.default_rng(run.seed)),
        "models": broadcast(setup.initial, k),
        "ledger": Ledger.start(n, k, mech.tok_init),
        "tracker": RefundTracker.start(k),
        "psi": np.zeros((k, n)),
        "omega": np.zeros((k, n)),
        "explored": np.zeros(n, dtype=bool),
        "improved": np.ones(k, dtype=bool),
        "best": np.zeros(k, dtype=np.int64),
        "history": [],
    }
    ckpt = None if checkpoint_dir is None else Path(checkpoint_dir) / _CHECKPOINT
    if resume and ckpt is not None and ckpt.exists():
        saved = torch.load(ckpt, map_location="cpu", weights_only=False)
        if saved["run"] != run.fingerprint():
            raise ValueError(f"{ckpt} belongs to another run configuration")
        state = saved["state"]
        state["models"] = {key: v.to(ctx.device) for key, v in state["models"].items()}
    tokens_start = np.full(n, float(mech.tok_init))
    available = np.ones(n, dtype=bool)
    available[setup.unseen] = False

    for r in range(state["round"], run.rounds):
        rng = round_rng(state["entropy"], r)
        models: Params = state["models"]
        ledger: Ledger = state["ledger"]
        acc_val = _accuracy_matrix(engine, models, setup.val)
        _, n_rand = n_rand_schedule(
            n, k, int((~state["explored"]).sum()), mech.rand_high, mech.rand_low
        )
        paid_round = r > 0
        if not paid_round:
            seen = np.setdiff1d(np.arange(n), setup.unseen)
            boot = bootstrap_select(seen.size, k, n_perf + n_rand, rng)
            selected = [seen[b] for b in boot]
            bids = np.zeros((n, k), dtype=bool)
        else:
            bids = preference_bids(acc_val, ledger.tokens, mech, rng)
            selected = select_clients(
                bids,
                state["psi"],
                state["omega"],
                ledger.tokens,
                mech,
                n_perf,
                n_rand,
                rng,
                available=available,
                ascending=~state["improved"],
            )
        payers = []
        for c in range(k):
            if paid_round:
                ledger, paid = collect(ledger, c, selected[c], mech.price, stale_payer=mech.rc_bugs)
                payers.append(paid if not mech.rc_bugs else selected[c])
            else:
                payers.append(selected[c])
        ks = np.concatenate([np.full(len(s), c) for c, s in enumerate(payers)]).astype(np.int64)
        cs = np.concatenate(payers).astype(np.int64)
        refunds = np.zeros(k)
        if cs.size:
            trained = ctx.fit(select(models, ks), cs, rng)
            weights = torch.as_tensor(sizes[cs], device=ctx.device)
            new = group_mean(
                trained.params, weights, torch.as_tensor(ks, device=ctx.device), models
            )
            cluster_val = engine.evaluate(select(new, ks), setup.val, cs).accuracy
            assert cluster_val is not None
            for c in range(k):
                rows = np.flatnonzero(ks == c)
                if rows.size == 0:
                    continue
                members = cs[rows]
                lam = (
                    np.full(rows.size, 1.0 / rows.size)
                    if mech.rc_compat
                    else sizes[members] / sizes[members].sum()
                )
                g = _holdout_gradient(
                    engine, select(new, [c]), setup.val, members, run.holdout_per_client, rng
                )
                psi = shapley_first_order(g, _flat(trained.params, rows), _flat(new, [c])[0], lam)
                state["psi"][c, members] = psi
                state["omega"][c, members] += 1
                acc_c = float(cluster_val[rows].mean())
                best = state["tracker"].acc_max[c]
                state["improved"][c] = best is None or acc_c > best
                if paid_round:
                    ledger, state["tracker"], refunds[c] = settle_cluster(
                        ledger,
                        state["tracker"],
                        c,
                        members,
                        acc_c,
                        state["psi"][c],
                        state["omega"][c],
                        mech,
                        registered=np.flatnonzero(state["omega"][c] > 0),
                    )
                else:
                    state["tracker"] = state["tracker"].update(c, acc_c, mech)
            models = new
        state["explored"][cs] = True
        record: dict[str, Any] = {
            "round": r,
            "paid": paid_round,
            "tokens": ledger.tokens.tolist(),
            "pools": ledger.pools.tolist(),
            "selected": [s.tolist() for s in payers],
            "bids": bids.astype(int).tolist(),
            "psi": state["psi"].tolist(),
            "refund": refunds.tolist(),
            "bidder_purity": _purity(bids, setup.majority, state["best"])
            if paid_round
            else float("nan"),
        }
        if (r + 1) % run.eval_every == 0 or r + 1 == run.rounds:
            acc = _cluster_accuracy(engine, models, setup.sources)
            state["best"] = np.argmax(acc, axis=1)
            record["cluster_accuracy"] = acc.tolist()
            record["personalised_accuracy"] = _personalised_accuracy(engine, models, setup).tolist()
        state["history"].append(record)
        state["models"], state["ledger"], state["round"] = models, ledger, r + 1
        if ckpt is not None:
            cpu_state = {**state, "models": {key: v.cpu() for key, v in models.items()}}
            _save_checkpoint(ckpt, {"run": run.fingerprint(), "state": cpu_state})

    models = state["models"]
    weights = importance_weights(_accuracy_matrix(engine, models, setup.val))
    personal = _personalised_accuracy(engine, models, setup, weights)
    rho = _reference(run, setup, _updates_per_round(state["history"]))
    explored = state["explored"]
    return IPFLResult(
        run=run,
        tokens_start=tokens_start,
        tokens_end=state["ledger"].tokens.copy(),
        cluster_accuracy=_cluster_accuracy(engine, models, setup.sources),
        personalised_accuracy=personal,
        reference_accuracy=rho,
        weights=weights,
        pma=pma(personal, rho),
        never_selected=np.flatnonzero(~explored),
        history=tuple(state["history"]),
        models=models,
    )


# --------------------------------------------------------------------------- baselines


#: Baselines of the comparison table (spec §4), in the paper's order; those not registered
#: (e.g. not yet built) are skipped.
BASELINES = ("fedavg", "fedprox", "ditto", "ifca", "fedsoft", "fedem", "per-fedavg")
_BASELINE_MODULES = ("fedprox", "fedsoft", "fedem", "perfedavg", "ditto", "ifca")
_CLUSTER_PARAMETERS = ("clusters", "components", "n_clusters", "k")


def _load_baselines() -> None:
    for module in _BASELINE_MODULES:
        name = f"learning.algorithms.{module}"
        if importlib.util.find_spec(name) is not None:
            importlib.import_module(name)


def _baseline_params(name: str, clusters: int) -> dict[str, Any]:
    """The number of clusters for the cluster-based baselines, under their own name."""
    return {p: clusters for p in algorithm_parameters(name) if p in _CLUSTER_PARAMETERS}


def compare(
    run: IPFLRun, *, device: torch.device | str = "cpu", data_dir: str | None = None
) -> list[dict[str, Any]]:
    """IP-FL and every registered baseline on the same federation and budget: personalised
    accuracy (mean, std over clients), PMA against FedAvg (pp) and the opt-out rate."""
    _load_baselines()
    setup = build_setup(run, device=device, data_dir=data_dir)
    result = run_ipfl(run, setup=setup)
    rho = result.reference_accuracy
    updates = _updates_per_round(result.history)
    rows = [_row("ip-fl", result.personalised_accuracy, rho)]
    for name in BASELINES:
        if name not in ALGORITHMS:
            continue
        if name == "fedavg":
            rows.append(_row(name, rho, rho))
            continue
        outcome = run_rounds(
            build_algorithm(name, setup.ctx, **_baseline_params(name, run.clusters)),
            broadcast(setup.initial, setup.ctx.n_clients),
            run.rounds,
            np.random.default_rng([run.seed, 2]),
            clients_per_round=min(setup.ctx.n_clients, max(1, updates)),
            eval_every=run.rounds,
        )
        assert outcome.evaluation.accuracy is not None
        rows.append(_row(name, outcome.evaluation.accuracy, rho))
    return rows


def _row(name: str, accuracy: np.ndarray, rho: np.ndarray) -> dict[str, Any]:
    values = pma(accuracy, rho)
    return {
        "method": name,
        "personalised_accuracy_mean": float(accuracy.mean()),
        "personalised_accuracy_std": float(accuracy.std()),
        "pma_mean": float(values.mean()),
        "opt_out_rate": float(opt_outs(values).mean()),
        "opt_out_percent": 100.0 * float(opt_outs(values).mean()),
    }

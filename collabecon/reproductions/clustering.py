r"""The synthetic experiments of the clustering paper, reproduced.

Werner et al. 2023, §4.1 and §4.3: Fig. 2, Fig. 3 and Fig. 4; Werner 2024, Figs. 2.2, 2.3
and 2.7.

- Fig. 3: clustered linear regression (``d = 10``, ``n = 9`` examples per client, the loss
  ``||Ax - y||^2 / (2n)``), panels ``(K, n_i) = (4, 4), (4, 16), (16, 4)``; FC, the
  ground-truth oracle (GT), Local, IFCA-M and Global (FedAvg) from the oracle start, every
  method at its own learning rate (:data:`PAPER_LR`, the rates of the authors' published
  code); the error is the mean parameter distance :math:`(1/N)\sum_i \|x_i - \theta^*_{c(i)}\|`.
- Fig. 2: the intra-cluster variance ratio :math:`A^2` and the inter-cluster separation
  :math:`\Delta^2` (eqs. 7-8) of 300 clients (4 clusters of 75) at client 0's model along a
  GT run (lr 1e-4).
- Fig. 4: Threshold-Clustering's mean distance to the cluster centres against the number of
  clipping iterations ``l``, for ``sigma = 0.5, 1, 2, 4``, and the curves' elbows.

:func:`reproduce` reports every claim the paper makes about these figures (its text in §4.1
and §4.3, the captions), measured on ``seeds`` data seeds; the paper prints only figures,
so the published side of each claim is its statement.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from econ.claims import Claim, ClaimSpec, Reproduction, evaluate
from econ.validation import choice, positive_int

__all__ = [
    "CLAIMS",
    "CLIPPING_SIGMAS",
    "PANELS",
    "PAPER_LR",
    "SCALES",
    "claims",
    "clipping_curve",
    "errors",
    "fig2_diagnostics",
    "panel",
    "regression",
    "reproduce",
    "setup",
    "trajectory",
]

SOURCE = "Werner et al. 2023"
PANELS = ((4, 4), (4, 16), (16, 4))
#: Fig. 3's methods: GT, FC, Local, IFCA-M, Global
FIG3_METHODS = ("oracle", "fc", "local", "ifca", "fedavg")
NAMES = {"oracle": "GT", "fc": "FC", "local": "Local", "ifca": "IFCA-M", "fedavg": "Global"}
CLIPPING_SIGMAS = (0.5, 1.0, 2.0, 4.0)

# The paper's synthetic runs (§4.1, Fig. 3; learning rates per panel from the authors'
# published code); every method but IFCA-M uses the EMA momentum u <- 0.9 u + 0.1 g at step
# eta, which for a buffer started at zero is the heavy ball u <- 0.9 u + g at step eta / 10.
PAPER_LR = {
    (4, 4): {"oracle": 0.1, "fc": 0.1, "local": 0.1, "ifca": 0.01, "fedavg": 0.1},
    (4, 16): {"oracle": 0.1, "fc": 0.1, "local": 0.1, "ifca": 0.01, "fedavg": 0.1},
    (16, 4): {"oracle": 0.01, "fc": 0.01, "local": 0.01, "ifca": 5e-4, "fedavg": 0.001},
}  # IFCA-M: stable lrs, K correctly initialised models (the code: `models[::K]`)


@dataclasses.dataclass(frozen=True, slots=True)
class SyntheticScale:
    """Epochs of each Fig. 3 panel, GT epochs of Fig. 2, default number of seeds."""

    epochs: dict[tuple[int, int], int]
    fig2_epochs: int
    seeds: int


SCALES = {
    "small": SyntheticScale({(4, 4): 200, (4, 16): 100, (16, 4): 200}, 25, 3),
    "paper": SyntheticScale({(4, 4): 800, (4, 16): 800, (16, 4): 800}, 100, 3),
}


def regression(n_clusters: int, per_cluster: int, seed: int = 0) -> tuple[Any, ...]:
    """The clustered regression of §4.1 at ``seed``: (truth, oracle start, clusters, train)."""
    from learning.data import clustered_regression
    from learning.engine import ShardedData

    rng = np.random.default_rng(seed)
    data = clustered_regression(seed=rng, n_clusters=n_clusters, clients_per_cluster=per_cluster)
    assert data.truth is not None  # the generator records the cluster centres
    start = data.truth + rng.normal(0, 0.1, size=data.truth.shape)  # the oracle start
    n = n_clusters * per_cluster
    xs = [data.x[data.group == i] for i in range(n)]
    ys = [data.y[data.group == i] for i in range(n)]
    train = ShardedData.from_arrays(xs, ys, "cpu")
    clusters = np.repeat(np.arange(n_clusters), per_cluster)
    return data.truth, start, clusters, train


def setup(
    name: str,
    truth: np.ndarray,
    start: np.ndarray,
    clusters: np.ndarray,
    train: Any,
    lr: float,
    oracle_start: bool = True,
    *,
    sgd_momentum: float = 0.0,
    dtype: Any = None,
    **params: Any,
) -> tuple[Any, Any]:
    """The algorithm ``name`` on the regression clients and its stacked initial models.

    Full-batch GD, step ``lr`` on the paper's loss, heavy ball ``sgd_momentum`` in local
    training; computed in ``dtype`` (float32 when None; the data are the float32 values).
    """
    import torch

    from learning.algorithms import Context, LocalTraining, build_algorithm
    from learning.engine import BatchedEngine, Task, broadcast
    from learning.optim import SGDConfig

    dtype = torch.float32 if dtype is None else dtype
    n, dim = clusters.size, truth.shape[1]
    model = torch.nn.Linear(dim, 1, bias=False).to(dtype)
    train = dataclasses.replace(train, x=train.x.to(dtype), y=train.y.to(dtype))
    # the data loss ||Ax - y||^2 / n is twice the paper's ||Ax - y||^2 / (2n): halve the lr
    ctx = Context(
        engine=BatchedEngine(model, Task(classification=False), torch.device("cpu")),
        train=train,
        test=train,
        local=LocalTraining(1, 9, SGDConfig(lr / 2, momentum=sgd_momentum)),
        clusters=clusters,
    )
    rows = start[clusters] if oracle_start else np.zeros((n, dim))
    models = {"weight": torch.tensor(rows, dtype=dtype)[:, None, :]}
    if name == "fedavg":
        models = broadcast({"weight": models["weight"][0]}, n)
    return build_algorithm(name, ctx, **params), models


def errors(
    algorithm: Any,
    models: Any,
    truth: np.ndarray,
    clusters: np.ndarray,
    rounds: int,
    log: set[int] | tuple[int, ...],
    prepare: Any = None,
) -> dict[int, float]:
    r"""Mean parameter error :math:`(1/N)\sum_i \|x_i - \theta^*_{c(i)}\|` after each round.

    The rounds are those in ``log`` (0 for the start), with the streams of
    :func:`learning.loop.run_rounds` at seed 0; ``prepare`` edits the initial state.
    """
    from learning.rng import draw_entropy, init_rng, round_rng

    n = clusters.size
    entropy = draw_entropy(np.random.default_rng(0))
    state = algorithm.init(models, init_rng(entropy))
    if prepare is not None:
        state = prepare(state)

    def error() -> float:
        w = algorithm.client_models(state)["weight"][:, 0].double().numpy()
        return float(np.linalg.norm(w - truth[clusters], axis=1).mean())

    out = {0: error()} if 0 in log else {}
    for r in range(rounds):
        state, _ = algorithm.round(state, np.arange(n), round_rng(entropy, r))
        if r + 1 in log:
            out[r + 1] = error()
    return out


def trajectory(
    method: str,
    grid: tuple[int, int],
    rounds: int,
    log: set[int] | tuple[int, ...],
    dtype: Any = None,
    seed: int = 0,
) -> dict[int, float]:
    """Error trajectory of ``method`` as run in the paper's synthetic panel ``grid = (K, n_i)``.

    ``method`` is ``oracle`` = GT, ``fc``, ``local``, ``ifca`` = IFCA-M or ``fedavg`` =
    Global, run from the oracle start: GT and Global keep one momentum buffer per group
    across rounds (GD with momentum on the pooled data), Local one per client, FC momentum on
    its cluster estimate (q = 1/K, 10 Threshold-Clustering iterations); IFCA-M is option II
    with one plain GD step, its K models started at the oracle centres (a correct
    initialisation).
    """
    import torch

    choice("method", method, FIG3_METHODS)
    dtype = torch.float32 if dtype is None else dtype
    truth, start, clusters, train = regression(*grid, seed=seed)
    lr = PAPER_LR[grid][method]
    if method == "ifca":
        algorithm, models = setup(
            "ifca", truth, start, clusters, train, lr, dtype=dtype, option="model", init="same"
        )

        def prepare(state: Any) -> Any:
            oracle = {"weight": torch.tensor(start, dtype=dtype)[:, None, :]}
            return {"clusters": oracle, "assignment": torch.as_tensor(clusters)}

        return errors(algorithm, models, truth, clusters, rounds, log, prepare)
    params: dict[str, Any]
    if method == "fc":
        name, params = "federated-clustering", {"quantile": 1 / grid[0], "momentum": 0.9}
    else:
        name = method
        params = {"keep_momentum": "client" if method == "local" else "group"}
    algorithm, models = setup(
        name, truth, start, clusters, train, lr / 10, sgd_momentum=0.9, dtype=dtype, **params
    )
    return errors(algorithm, models, truth, clusters, rounds, log)


@functools.cache
def panel(
    grid: tuple[int, int],
    rounds: int,
    log: tuple[int, ...] = (100, 200, 400, 800),
    dtype: Any = None,
    seed: int = 0,
) -> dict[str, dict[int, float]]:
    """Every Fig. 3 method's trajectory in ``grid``, logged at ``log`` and at ``rounds``.

    Cached: several readers share one run.
    """
    steps = {e for e in log if e <= rounds} | {rounds}
    return {m: trajectory(m, grid, rounds, steps, dtype, seed) for m in PAPER_LR[grid]}


def fig2_diagnostics(epochs: int, seed: int = 0) -> tuple[Any, Any]:
    r""":math:`A^2_i` and :math:`\Delta^2_i` of all 300 clients at client 0's model, per GT epoch.

    Eqs. 7-8 with D = 0 (the paper's loss scale), before each of ``epochs`` GT epochs (lr 1e-4
    with the EMA momentum 0.9: the heavy ball at 1e-5 with one buffer per cluster kept across
    rounds; oracle start); each ``(epochs, 300)``.
    """
    import torch

    from learning.algorithms.federated_clustering import separation_diagnostics
    from learning.all_pairs import client_batches, flatten
    from learning.engine import select
    from learning.rng import draw_entropy, init_rng, round_rng

    truth, start, clusters, train = regression(4, 75, seed=seed)
    algorithm, models = setup(
        "oracle", truth, start, clusters, train, 1e-5, sgd_momentum=0.9, keep_momentum="group"
    )
    engine, n = algorithm.ctx.engine, clusters.size
    x, y = client_batches(train, np.arange(n), 9, np.random.default_rng(0))  # full batches
    labels = torch.as_tensor(clusters)
    entropy = draw_entropy(np.random.default_rng(0))
    state = algorithm.init(models, init_rng(entropy))
    a2, d2 = [], []
    for epoch in range(epochs):
        at_client_0 = select(algorithm.client_models(state), np.zeros(n, dtype=np.int64))
        grads, _ = engine.gradients(at_client_0, x, y)
        # the engine's ||Ax - y||^2/n is twice the paper's loss
        a, d = separation_diagnostics(flatten(grads).double() / 2, labels)
        a2.append(a)
        d2.append(d)
        state, _ = algorithm.round(state, np.arange(n), round_rng(entropy, epoch))
    return torch.stack(a2), torch.stack(d2)


@functools.cache
def clipping_curve(std: float) -> np.ndarray:
    """Fig. 4's mean curve for spread ``std``.

    10 clusters x 10 repetitions, 50 iterations, radius at the 10 % quantile (§4.3).
    """
    import torch

    from learning.algorithms.threshold_clustering import clipping_study
    from learning.data import clipping_blobs

    data = clipping_blobs(std)
    points = torch.as_tensor(data.x, dtype=torch.float64)
    return clipping_study(points, torch.as_tensor(data.y), 50, 0.1, 10, seed=0).numpy()


def _stats(values: list[float]) -> dict[str, Any]:
    arr = np.asarray(values, dtype=np.float64)
    std = float(arr.std(ddof=1)) if arr.size > 1 else float("nan")
    return {"per_seed": [float(v) for v in arr], "mean": float(arr.mean()), "std": std}


def measure(scale: SyntheticScale, seeds: list[int]) -> dict[str, Any]:
    """Fig. 3's final errors, Fig. 2's diagnostics and Fig. 4's curves and elbows.

    Fig. 3's errors are per panel, method and seed; Fig. 2's diagnostics per seed.
    """
    import torch

    from learning.algorithms.threshold_clustering import elbow

    if not seeds:
        raise ValueError("seeds must name at least one seed, got none")
    fig3: dict[str, Any] = {}
    for grid in PANELS:
        end = scale.epochs[grid]
        runs = [panel(grid, end, (100,), None, seed) for seed in seeds]
        fig3[f"{grid[0]}x{grid[1]}"] = {
            "epochs": end,
            "final": {m: _stats([r[m][end] for r in runs]) for m in FIG3_METHODS},
            "epoch100": {m: _stats([r[m][100] for r in runs]) for m in FIG3_METHODS},
        }
    fig2 = []
    for seed in seeds:
        a2, d2 = fig2_diagnostics(scale.fig2_epochs, seed)
        per_epoch_max = a2.max(1).values
        fig2.append(
            {
                "max_a2": float(a2.max()),
                "a2_growth": float(per_epoch_max[-1] / per_epoch_max[0]),
                "min_delta2": float(d2.min()),
                "finite": bool(torch.isfinite(a2).all() and torch.isfinite(d2).all()),
            }
        )
    curves = {str(s): clipping_curve(s) for s in CLIPPING_SIGMAS}
    fig4 = {
        s: {
            "curve": [float(v) for v in c],
            "floor": float(c.min()),
            "elbow": float(elbow(c)),
            "monotone": bool(all(a >= b for a, b in itertools.pairwise(c))),
            "largest_rise": float(max(0.0, *(b - a for a, b in itertools.pairwise(c)))),
        }
        for s, c in curves.items()
    }
    return {"seeds": list(seeds), "fig3": fig3, "fig2": fig2, "fig4": fig4}


def _spread_note(m: dict[str, Any], key: str, a: str, b: str) -> str:
    """A note when Fig. 3's margin of ``b`` over ``a`` in panel ``key`` is within the spread."""
    final = m["fig3"][key]["final"]
    margin = final[b]["mean"] - final[a]["mean"]
    diff = np.asarray(final[b]["per_seed"]) - np.asarray(final[a]["per_seed"])
    if diff.size < 2:
        return "one seed: no spread"
    spread = float(diff.std(ddof=1))
    if abs(margin) <= spread:
        n = len(m["seeds"])
        return f"margin {margin:.3g} within the seed-to-seed spread (std {spread:.3g}, {n} seeds)"
    return ""


def _mean(m: dict[str, Any], key: str, method: str) -> float:
    return float(m["fig3"][key]["final"][method]["mean"])


def _ratio(m: dict[str, Any], key: str) -> float:
    """FC's mean final error over GT's in panel ``key``."""
    return _mean(m, key, "fc") / _mean(m, key, "oracle")


def _beats(key: str, base: str) -> ClaimSpec:
    """FC below the non-oracle baseline ``base`` in the Fig. 3 panel ``key``."""
    return ClaimSpec(
        id=f"fig3.{key}.fc<{base}",
        statement=f"FC outperforms the non-oracle baseline {NAMES[base]} in panel "
        f"(K, n_i) = ({key.replace('x', ', ')}): lower final error",
        where=f"{SOURCE}, §4.1 (Performance) and Fig. 3",
        measured=lambda m: {
            "FC": _mean(m, key, "fc"),
            NAMES[base]: _mean(m, key, base),
            "epoch": m["fig3"][key]["epochs"],
        },
        holds=lambda m: _mean(m, key, "fc") < _mean(m, key, base),
        note=lambda m: _spread_note(m, key, "fc", base),
        applies=lambda m: key in m["fig3"],
    )


def _ground_truth_ahead(key: str, reading: str, place: str) -> ClaimSpec:
    """GT below FC in the Fig. 3 panel ``key``, a panel with small ``n_i``."""
    return ClaimSpec(
        id=f"fig3.{key}.gt<fc",
        statement="when n_i is small, ground truth outperforms FC ((K, n_i) = "
        f"({key.replace('x', ', ')}): {reading})",
        where=f"{SOURCE}, {place}",
        measured=lambda m: {"GT": _mean(m, key, "oracle"), "FC": _mean(m, key, "fc")},
        holds=lambda m: _mean(m, key, "oracle") < _mean(m, key, "fc"),
        note=lambda m: _spread_note(m, key, "oracle", "fc"),
        applies=lambda m: key in m["fig3"],
    )


def _decreasing(sigma: str) -> ClaimSpec:
    """Fig. 4's curve for ``sigma`` decreases with the clipping iterations."""
    return ClaimSpec(
        id=f"fig4.sigma{sigma}.decreasing",
        statement="the average distance to the cluster centres decreases with the clipping "
        f"iterations l and approaches convergence (sigma = {sigma})",
        where=f"{SOURCE}, §4.3 and Fig. 4 (printed after §5)",
        measured=lambda m: {
            "floor": m["fig4"][sigma]["floor"],
            "largest rise": m["fig4"][sigma]["largest_rise"],
        },
        holds=lambda m: m["fig4"][sigma]["monotone"],
        applies=lambda m: sigma in m["fig4"],
    )


#: The paper's claims about Figs. 2-4 (its text in §4.1 and §4.3, the captions), on
#: :func:`measure`'s result; Fig. 3's judged on the mean final error over seeds. The paper
#: prints only figures: no published numbers.
CLAIMS: tuple[ClaimSpec, ...] = (
    *(_beats(f"{k}x{n}", base) for k, n in PANELS for base in ("local", "ifca", "fedavg")),
    _ground_truth_ahead(
        "4x4", "FC slightly worse than GT", "§4.1 (Performance) and Fig. 3 caption"
    ),
    _ground_truth_ahead("16x4", "n_i = 4 as at (4, 4)", "Fig. 3 caption"),
    ClaimSpec(
        id="fig3.gap-vanishes-with-n_i",
        statement="the difference between FC and ground truth vanishes with increasing n_i: "
        "FC/GT closer to 1 at (4, 16) than at (4, 4)",
        where=f"{SOURCE}, §4.1 (Performance) and Fig. 3 caption",
        measured=lambda m: {
            "FC/GT at (4, 4)": _ratio(m, "4x4"),
            "FC/GT at (4, 16)": _ratio(m, "4x16"),
        },
        holds=lambda m: abs(math.log(_ratio(m, "4x16"))) < abs(math.log(_ratio(m, "4x4"))),
    ),
    ClaimSpec(
        id="fig3.4x16.fc~gt",
        statement="FC's and ground truth's performances are almost identical for n_i = 16",
        where=f"{SOURCE}, §4.1 (Performance) and Fig. 3",
        measured=lambda m: {
            "FC": _mean(m, "4x16", "fc"),
            "GT": _mean(m, "4x16", "oracle"),
            "FC/GT": _ratio(m, "4x16"),
        },
        holds=lambda m: 0.8 <= _ratio(m, "4x16") <= 1.25,
        note="'almost identical' read as FC/GT within [0.8, 1.25] (the paper gives no number)",
    ),
    ClaimSpec(
        id="fig2.a2-bounded",
        statement="the intra-cluster variance ratio (7) does not grow with time and is bounded "
        "by a constant A^2",
        where=f"{SOURCE}, §4.1 (Estimating constants in Assumptions 4 and 5) and Fig. 2",
        measured=lambda m: {
            "max A^2": max(f["max_a2"] for f in m["fig2"]),
            "last/first epoch max": max(f["a2_growth"] for f in m["fig2"]),
        },
        holds=lambda m: all(f["finite"] and f["a2_growth"] <= 1.0 + 1e-2 for f in m["fig2"]),
        note="'does not grow' read as the last epoch's maximum within 1 % of the first's",
    ),
    ClaimSpec(
        id="fig2.delta2-positive",
        statement="the inter-cluster separation (8) is bounded below by a positive constant "
        "Delta^2",
        where=f"{SOURCE}, §4.1 (Estimating constants in Assumptions 4 and 5) and Fig. 2",
        measured=lambda m: {"min Delta^2": min(f["min_delta2"] for f in m["fig2"])},
        holds=lambda m: all(f["min_delta2"] > 0 for f in m["fig2"]),
    ),
    *(_decreasing(str(sigma)) for sigma in CLIPPING_SIGMAS),
    ClaimSpec(
        id="fig4.elbow-grows-with-sigma",
        statement="the elbow of the curve (the iterations l needed) grows with sigma",
        where=f"{SOURCE}, §4.3 and Fig. 4 (printed after §5)",
        measured=lambda m: {f"sigma {s}": m["fig4"][s]["elbow"] for s in m["fig4"]},
        holds=lambda m: all(
            a < b for a, b in itertools.pairwise(m["fig4"][s]["elbow"] for s in m["fig4"])
        ),
    ),
)


def claims(measured: dict[str, Any]) -> list[Claim]:
    """The paper's claims about Figs. 2-4 (:data:`CLAIMS`) on ``measured``."""
    return evaluate(CLAIMS, measured)


def _body(scale: str, measured: dict[str, Any]) -> str:
    lines = [
        f"Scale `{scale}`, data seeds {measured['seeds']}; Fig. 3 final errors "
        "(mean ± std over seeds):",
        "",
        "| panel | epochs | " + " | ".join(NAMES[m] for m in FIG3_METHODS) + " |",
        "|---|---|" + "---|" * len(FIG3_METHODS),
    ]
    for key, data in measured["fig3"].items():
        cells = [
            f"{data['final'][m]['mean']:.3g} ± {data['final'][m]['std']:.2g}" for m in FIG3_METHODS
        ]
        lines.append(f"| {key} | {data['epochs']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def reproduce(scale: str, out: Path | None, seeds: int | None = None) -> Reproduction:
    """Figs. 2-4 at ``scale`` on data seeds ``0 .. seeds - 1``.

    ``seeds`` is the scale's default when None; writes ``clustering.json`` and
    ``clustering.md`` into ``out`` when given.

    Raises
    ------
    ValueError
        Unknown scale, ``seeds`` not a positive integer.
    """
    choice("scale", scale, tuple(SCALES))
    sizes = SCALES[scale]
    n = sizes.seeds if seeds is None else positive_int("seeds", seeds)
    measured = measure(sizes, list(range(n)))
    rep = Reproduction(
        name="clustering",
        title=f"{SOURCE}, synthetic experiments: Figs. 2, 3 and 4",
        claims=tuple(claims(measured)),
        body=_body(scale, measured),
        data={"scale": scale, **measured},
    )
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "clustering.json").write_text(json.dumps(rep.to_dict(), indent=1, allow_nan=False))
        (out / "clustering.md").write_text(rep.markdown())
    return rep

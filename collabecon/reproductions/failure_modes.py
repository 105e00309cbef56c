r"""Figure 1 of the clustering paper, reproduced: existing clustering methods fail on built examples.

The three constructed examples of Werner et al. (2023), §2.1 "Failure Modes of Existing
Methods" and §3.1.3 (Werner 2024, §2.2 and Fig. 2.1), with their printed losses, and the
methods the text runs on them:

1. :math:`N = 3, K = 2`, :math:`f_1(x) = x^2/(6\eta)`, :math:`f_2(x) = 4(x-1)^3 + 3(x-1)^4 + 1`
   for :math:`x < 1` and :math:`(x-1)^2/(2\eta) + 1` for :math:`x \ge 1`,
   :math:`f_3(x) = (x-2)^2/(2\eta)`, every client from :math:`x_0 = 1.5`, :math:`\eta = 0.5`
   (Fig. 1a): Myopic-Clustering (Algorithm 1; the server's clustering is 2-means of the
   gradients, :func:`learning.algorithms.federated_clustering.myopic_directions`) against
   Federated-Clustering (Algorithm 2).
2. :math:`N = 2, K = 2`, :math:`f_1(x) = (x + 0.5)^2`, :math:`f_2(x) = (x - 0.5)^2`, cluster
   models started at :math:`x_{1,0} = -1.5, x_{2,0} = 0` (Fig. 1b): IFCA option I (gradient
   averaging), option II (:data:`LOCAL_STEPS` local gradient steps, then model averaging) and
   HypCluster (the server's gradient steps on each cluster's pooled loss), each client choosing
   the cluster model of least loss every round; FC from :math:`x = 0`.
3. :math:`N = 3, K = 2`, :math:`g_1(x) = x`, :math:`g_2(x) = x - 1/2`, :math:`g_3(x) = x` or
   :math:`x - 1` with probability 1/2 each (Fig. 1c): Clustered FL (Sattler et al.), which runs
   FedAvg to its stationary point, splits the clients in two by the complete-linkage
   bipartition of the cosine similarities of their gradients there
   (:func:`learning.algorithms.cfl.cosine_bipartition`), and runs FedAvg within each part
   (two parts are :math:`K`: no further split); FC from :math:`x = 0`. Both over
   ``draws`` independent draws of the stochastic gradients.

Federated-Clustering is Algorithm 2 without momentum, :math:`x_i \leftarrow x_i - \eta v_i`,
:math:`v_i` the one-centre Threshold-Clustering (Algorithm 3, :data:`TC_ITERS` iterations,
the fixed radius of each example, inclusive) of :math:`\{g_j(x_i)\}_j` started at
:math:`g_i(x_i)` (:func:`learning.algorithms.federated_clustering.fc_directions`). The text
gives neither a radius nor, in examples 2 and 3, a step size; the ones used are the module's
constants, each explained where it is defined. Example 1 is also run with FC at
:data:`ETA1_SMALL`, below the step size at which FC's update is stable near :math:`x = 0`.

:func:`reproduce` reports every claim of the text about these examples
(:mod:`collabecon.reproductions.failure_modes_claims`) and draws Fig. 1: the client losses with
the methods' final iterates (top) and the iterates over the rounds (bottom).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from collabecon.reproductions.failure_modes_claims import CLAIMS, SOURCE, claims
from econ.claims import Reproduction
from econ.validation import choice, positive_int

__all__ = [
    "CLAIMS",
    "DRAWS",
    "ETA1",
    "ETA1_SMALL",
    "ETA2",
    "ETA3",
    "FIGURE",
    "INIT2",
    "LOCAL_STEPS",
    "ROUNDS",
    "TAU2",
    "TAU3",
    "TC_ITERS",
    "X0",
    "cfl_run",
    "example1_gradients",
    "example1_losses",
    "example2_gradients",
    "example3_gradients",
    "fc_run",
    "figure",
    "ifca_run",
    "measure",
    "myopic_run",
    "report",
    "reproduce",
    "tau1",
]

#: Fig. 1a: the step size of the caption, and the common start
ETA1 = 0.5
X0 = 1.5
#: a smaller step size for FC on example 1: near x = 0 clients 1 and 2 average curvatures
#: f_1'' = 1/(3 eta) and f_2''(0) = 12, which gradient descent at step eta follows only for
#: eta (12 + 1/(3 eta)) / 2 < 2, i.e. eta < 0.31
ETA1_SMALL = 0.1
#: example 2 and 3: the text gives no step size; 0.1 is below 1/L for every printed loss
ETA2 = 0.1
ETA3 = 0.1
#: IFCA option II and HypCluster: local (or per-cluster) gradient steps per round
LOCAL_STEPS = 10
#: example 2: the initial cluster models x_{1,0}, x_{2,0}
INIT2 = (-1.5, 0.0)
#: Threshold-Clustering iterations of FC (the paper's synthetic experiments)
TC_ITERS = 10
#: example 2: the two clients' gradients differ by 2 at every x, so any radius below 2 keeps
#: each client's ball to itself; the midpoint of (0, 2)
TAU2 = 1.0
#: example 3: at client 2's optimum the gradients of client 1 and of client 3 (half the time)
#: lie 1/2 from client 2's; a radius below that gap
TAU3 = 0.4
#: rounds of every run, and draws of the stochastic gradients of example 3, per scale
ROUNDS = {"small": 300, "paper": 2000}
DRAWS = {"small": 200, "paper": 2000}
FIGURE = "failure_modes.png"

FloatArray = np.ndarray


def tau1(eta: float) -> float:
    r"""FC's radius on example 1, :math:`1/(2\eta)`.

    At client 1's parameter :math:`x = 1` the gradients are :math:`1/(3\eta), 0, -1/\eta`
    (§3.1.3); a radius in :math:`[1/(3\eta), 1/\eta)` puts client 2's in client 1's ball and
    client 3's outside; :math:`1/(2\eta)` lies inside that interval.

    References
    ----------
    Werner et al. (2023), "Provably Personalized and Robust Federated Learning", §3.1.3.
    """
    return 1.0 / (2.0 * eta)


def example1_losses(x: FloatArray, eta: float) -> FloatArray:
    """The three client losses of example 1 at ``x`` (``(..., 3)``, one column per client).

    References
    ----------
    Werner et al. (2023), "Provably Personalized and Robust Federated Learning", §2.1, Fig. 1a.
    """
    x = np.asarray(x, dtype=float)
    f2 = np.where(x < 1, 4 * (x - 1) ** 3 + 3 * (x - 1) ** 4 + 1, (x - 1) ** 2 / (2 * eta) + 1)
    return np.stack([x**2 / (6 * eta), f2, (x - 2) ** 2 / (2 * eta)], axis=-1)


def example1_gradients(x: FloatArray, eta: float) -> FloatArray:
    r"""The gradients of example 1's losses at ``x`` (``(..., 3)``).

    :math:`g_1 = x/(3\eta)`, :math:`g_2 = 12 x (x-1)^2` for :math:`x < 1` and
    :math:`(x-1)/\eta` for :math:`x \ge 1`, :math:`g_3 = (x-2)/\eta`.

    References
    ----------
    Werner et al. (2023), "Provably Personalized and Robust Federated Learning", §2.1, Fig. 1a.
    """
    x = np.asarray(x, dtype=float)
    g2 = np.where(x < 1, 12 * x * (x - 1) ** 2, (x - 1) / eta)
    return np.stack([x / (3 * eta), g2, (x - 2) / eta], axis=-1)


def example2_gradients(x: FloatArray) -> FloatArray:
    r"""The gradients of example 2's losses :math:`(x \pm 0.5)^2` at ``x`` (``(..., 2)``).

    References
    ----------
    Werner et al. (2023), "Provably Personalized and Robust Federated Learning", §2.1, Fig. 1b.
    """
    x = np.asarray(x, dtype=float)
    return np.stack([2 * (x + 0.5), 2 * (x - 0.5)], axis=-1)


def example3_gradients(x: FloatArray, rng: np.random.Generator) -> FloatArray:
    """One draw of example 3's stochastic gradients at ``x`` (``(..., 3)``).

    Client 3's is :math:`x` or :math:`x - 1` with probability 1/2, drawn anew at every entry.

    References
    ----------
    Werner et al. (2023), "Provably Personalized and Robust Federated Learning", §2.1, Fig. 1c.
    """
    x = np.asarray(x, dtype=float)
    coin = rng.random(x.shape) < 0.5
    return np.stack([x, x - 0.5, np.where(coin, x, x - 1.0)], axis=-1)


def myopic_run(eta: float, rounds: int, rng: np.random.Generator) -> dict[str, FloatArray]:
    """Myopic-Clustering (Algorithm 1) on example 1 from :data:`X0`, 2-means of the gradients.

    Returns the iterates ``x`` ``(rounds + 1, 3)``, the gradients sent ``(rounds, 3)`` and the
    cluster of each client ``(rounds, 3)`` (relabelled so that client 1's is 0).

    References
    ----------
    Werner et al. (2023), "Provably Personalized and Robust Federated Learning", Algorithm 1
    and §2.1.
    """
    import torch

    from learning.algorithms.federated_clustering import myopic_directions

    x = np.full(3, X0)
    xs, grads, labels = [x.copy()], [], []
    for _ in range(rounds):
        g = np.diagonal(example1_gradients(x, eta)).copy()  # g_i(x_i)
        label, step = myopic_directions(torch.tensor(g[:, None]), 2, rng)
        label_np = label.numpy()
        x = x - eta * step[:, 0].numpy()
        xs.append(x.copy())
        grads.append(g)
        labels.append((label_np != label_np[0]).astype(int))
    return {"x": np.array(xs), "gradients": np.array(grads), "labels": np.array(labels)}


PointsFn = Callable[[FloatArray], FloatArray]


def fc_run(
    points: PointsFn, x0: FloatArray, eta: float, tau: float, rounds: int
) -> dict[str, FloatArray]:
    """Federated-Clustering (Algorithm 2) from ``x0`` (``(..., N)``, leading axes batched).

    ``points(x)`` gives ``(..., N, N)`` with entry ``[..., i, j]`` the gradient of client ``j``
    at receiver ``i``'s parameter ``x[..., i]`` (each example's gradient function applied to
    ``x`` ``(..., N)``). Returns the iterates ``x`` ``(rounds + 1, ...,
    N)``, the points ``(rounds, ..., N, N)`` and ``inside`` ``(rounds, ..., N, N)``: whether
    client ``j``'s gradient lies in receiver ``i``'s final ball (radius ``tau``).

    References
    ----------
    Werner et al. (2023), "Provably Personalized and Robust Federated Learning", Algorithms 2
    and 3.
    """
    import torch

    from learning.algorithms.federated_clustering import fc_directions
    from learning.algorithms.threshold_clustering import FixedRadius

    x = np.asarray(x0, dtype=float).copy()
    xs, pts, inside = [x.copy()], [], []
    for _ in range(rounds):
        p = points(x)
        v = fc_directions(torch.tensor(p[..., None]), TC_ITERS, FixedRadius(tau), inclusive=True)
        v_np = v[..., 0].numpy()
        x = x - eta * v_np
        xs.append(x.copy())
        pts.append(p)
        inside.append(np.abs(p - v_np[..., None]) <= tau)
    return {"x": np.array(xs), "points": np.array(pts), "inside": np.array(inside)}


def ifca_run(method: str, rounds: int) -> dict[str, FloatArray]:
    """IFCA option I or II, or HypCluster, on example 2 from the cluster models :data:`INIT2`.

    ``method`` is ``"ifca-I"`` (cluster models step with their clients' mean gradient),
    ``"ifca-II"`` (each client takes :data:`LOCAL_STEPS` gradient steps from its cluster's
    model; the model becomes their mean) or ``"hypcluster"`` (the server takes
    :data:`LOCAL_STEPS` gradient steps on each cluster's pooled loss); every round each client
    first picks the model of least loss. Step size :data:`ETA2`. Returns the cluster models
    ``(rounds + 1, 2)`` and each client's cluster (0-based) ``(rounds, 2)``.

    References
    ----------
    Werner et al. (2023), "Provably Personalized and Robust Federated Learning", §2.1 (IFCA,
    Ghosh et al. 2020; HypCluster, Mansour et al. 2020).
    """
    choice("method", method, ("ifca-I", "ifca-II", "hypcluster"))
    models = np.array(INIT2, dtype=float)
    history, picks = [models.copy()], []
    for _ in range(rounds):
        losses = (models[:, None] + np.array([0.5, -0.5])[None, :]) ** 2  # [k, client]
        pick = losses.argmin(axis=0)
        new = models.copy()
        for k in range(models.size):
            members = np.flatnonzero(pick == k)
            if members.size == 0:
                continue
            if method == "ifca-I":
                new[k] = models[k] - ETA2 * example2_gradients(models[k])[members].mean()
            elif method == "ifca-II":
                local = np.full(members.size, models[k])
                for _ in range(LOCAL_STEPS):
                    local = (
                        local - ETA2 * example2_gradients(local)[np.arange(members.size), members]
                    )
                new[k] = local.mean()
            else:
                model = models[k]
                for _ in range(LOCAL_STEPS):
                    model = model - ETA2 * example2_gradients(model)[members].mean()
                new[k] = model
        models = new
        history.append(models.copy())
        picks.append(pick)
    return {"models": np.array(history), "clusters": np.array(picks)}


def _fedavg(
    x: FloatArray, weights: FloatArray, rounds: int, rng: np.random.Generator
) -> FloatArray:
    """FedAvg on example 3: ``rounds`` steps of :data:`ETA3` along a weighted mean gradient.

    ``x`` ``(...)`` and ``weights`` ``(..., 3)`` (each row the clients' shares of one model,
    summing to 1); returns the iterates ``(rounds + 1, ...)``.
    """
    xs = [x]
    for _ in range(rounds):
        x = x - ETA3 * (example3_gradients(x, rng) * weights).sum(axis=-1)
        xs.append(x)
    return np.array(xs)


def cfl_run(draws: int, rounds: int, rng: np.random.Generator) -> dict[str, FloatArray]:
    """Clustered FL on example 3, ``draws`` independent runs from ``x = 0``.

    FedAvg of all three clients for ``rounds`` rounds; at its last iterate each client sends
    one stochastic gradient, split in two by
    :func:`learning.algorithms.cfl.cosine_bipartition`; FedAvg within each part for
    ``rounds`` more rounds. Returns the FedAvg iterates ``(rounds + 1, draws)``, the gradients
    at the split ``(draws, 3)``, the parts (client 1's is 0) ``(draws, 3)`` and every
    client's final model ``(draws, 3)``.

    References
    ----------
    Sattler, Müller and Samek (2021), "Clustered Federated Learning"; Werner et al. (2023),
    "Provably Personalized and Robust Federated Learning", §2.1, Fig. 1c.
    """
    import torch

    from learning.algorithms.cfl import cosine_bipartition

    fedavg = _fedavg(np.zeros(draws), np.full(3, 1 / 3), rounds, rng)
    at = fedavg[-1]
    grads = example3_gradients(at, rng)
    parts = np.empty((draws, 3), dtype=int)
    for d in range(draws):
        labels = cosine_bipartition(torch.tensor(grads[d][:, None]))
        parts[d] = (labels != labels[0]).astype(int)
    members = (parts[:, None, :] == np.arange(2)[None, :, None]).astype(float)  # (draws, 2, 3)
    part_models = _fedavg(
        np.repeat(at[:, None], 2, axis=1), members / members.sum(-1, keepdims=True), rounds, rng
    )[-1]
    final = np.take_along_axis(part_models, parts, axis=1)
    return {"fedavg": fedavg, "gradients": grads, "parts": parts, "final": final}


def _fc_example1(eta: float, rounds: int) -> dict[str, FloatArray]:
    """FC on example 1 at step size ``eta`` from :data:`X0`, radius :func:`tau1`."""
    return fc_run(lambda x: example1_gradients(x, eta), np.full(3, X0), eta, tau1(eta), rounds)


def measure(rounds: int, draws: int, seed: int = 0) -> dict[str, Any]:
    """Every method on every example: the runs the claims are judged on.

    Returns ``{"example1": {"eta", "myopic", "fc", "fc_small"}, "example2": {"ifca-I",
    "ifca-II", "hypcluster", "fc"}, "example3": {"cfl", "fc", "exact_fedavg"}, "rounds",
    "draws"}`` with the arrays of :func:`myopic_run`, :func:`fc_run`, :func:`ifca_run` and
    :func:`cfl_run`.
    """
    rng = np.random.default_rng(seed)
    myopic_rng, cfl_rng, fc_rng = rng.spawn(3)
    ex1 = {
        "eta": ETA1,
        "eta_small": ETA1_SMALL,
        "myopic": myopic_run(ETA1, rounds, myopic_rng),
        "fc": _fc_example1(ETA1, rounds),
        "fc_small": _fc_example1(ETA1_SMALL, rounds),
    }
    ex2: dict[str, Any] = {m: ifca_run(m, rounds) for m in ("ifca-I", "ifca-II", "hypcluster")}
    ex2["fc"] = fc_run(example2_gradients, np.full(2, INIT2[1]), ETA2, TAU2, rounds)
    ex2["init_losses"] = (np.array(INIT2)[:, None] + np.array([0.5, -0.5])[None, :]) ** 2
    ex3 = {
        "cfl": cfl_run(draws, rounds, cfl_rng),
        "fc": fc_run(
            lambda x: example3_gradients(x, fc_rng), np.zeros((draws, 3)), ETA3, TAU3, rounds
        ),
        "at_quarter": example3_gradients(np.full(draws, 0.25), fc_rng),
        # the FedAvg optimum: the root of the mean expected gradient x - (0 + 1/2 + 1/2)/3
        "exact_fedavg": 1.0 / 3.0,
        "optima": np.array([0.0, 0.5, 0.5]),
    }
    return {"example1": ex1, "example2": ex2, "example3": ex3, "rounds": rounds, "draws": draws}


_COLORS = ("tab:blue", "tab:orange", "tab:green")


def figure(measured: dict[str, Any], path: Path) -> None:
    """Fig. 1: the client losses with the final iterates (top), the iterates over rounds (bottom).

    (a) example 1, Myopic-Clustering and FC; (b) example 2, IFCA/HypCluster's cluster models
    and FC's client models; (c) example 3, how often Clustered FL ends with each partition
    (top) and FC's client models, mean over the draws (bottom).

    References
    ----------
    Werner et al. (2023), "Provably Personalized and Robust Federated Learning", Fig. 1.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from collabecon.reproductions.failure_modes_claims import partition

    ex1, ex2, ex3 = measured["example1"], measured["example2"], measured["example3"]
    fig, axes = plt.subplots(2, 3, figsize=(15, 8))
    steps = np.arange(measured["rounds"] + 1)

    grid = np.linspace(-0.5, 2.5, 400)
    ax = axes[0, 0]
    losses = example1_losses(grid, ex1["eta"])
    for i in range(3):
        ax.plot(grid, losses[:, i], color=_COLORS[i], label=f"f_{i + 1}")
        for run, marker, name in ((ex1["myopic"], "o", "Myopic"), (ex1["fc"], "x", "FC")):
            x = run["x"][-1][i]
            ax.plot(x, example1_losses(x, ex1["eta"])[i], marker, color=_COLORS[i], ms=9,
                    label=f"{name}, client {i + 1} final")  # fmt: skip
    ax.set_xlim(-0.5, 2.5)
    ax.set_ylim(-0.3, 3.0)
    ax.set_title(f"(a) Myopic-Clustering vs FC, η = {ex1['eta']}")
    ax.set_xlabel("x")
    ax.set_ylabel("client loss f_i(x)")
    ax.legend(fontsize=6, ncol=3)

    ax = axes[1, 0]
    for i in range(3):
        ax.plot(steps, ex1["myopic"]["x"][:, i], "-", color=_COLORS[i],
                label=f"Myopic, client {i + 1}")  # fmt: skip
        ax.plot(steps, ex1["fc"]["x"][:, i], "--", color=_COLORS[i],
                label=f"FC η = {ex1['eta']}, client {i + 1}")  # fmt: skip
        ax.plot(steps, ex1["fc_small"]["x"][:, i], ":", color=_COLORS[i],
                label=f"FC η = {ex1['eta_small']}, client {i + 1}")  # fmt: skip
    ax.set_xscale("symlog", linthresh=10)
    ax.set_xlabel("step t")
    ax.set_ylabel("parameter x_{i,t}")
    ax.legend(fontsize=6, ncol=3)

    grid = np.linspace(-2.0, 1.5, 400)
    ax = axes[0, 1]
    for i, sign in enumerate((1, -1)):
        ax.plot(grid, (grid + sign * 0.5) ** 2, color=_COLORS[i], label=f"f_{i + 1}")
        x = ex2["fc"]["x"][-1][i]
        ax.plot(x, (x + sign * 0.5) ** 2, "x", color=_COLORS[i], ms=9,
                label=f"FC, client {i + 1} final")  # fmt: skip
    for k, theta in enumerate(ex2["ifca-I"]["models"][-1]):
        ax.axvline(theta, color="gray", ls="--" if k else ":",
                   label=f"IFCA/HypCluster model {k + 1} (final)")  # fmt: skip
    ax.set_title("(b) IFCA and HypCluster vs FC")
    ax.set_xlabel("x")
    ax.set_ylabel("client loss f_i(x)")
    ax.legend(fontsize=7)

    ax = axes[1, 1]
    for method, style in (("ifca-I", "-"), ("ifca-II", "--"), ("hypcluster", ":")):
        for k in range(2):
            ax.plot(steps, ex2[method]["models"][:, k], style, color="gray",
                    label=f"{method} model {k + 1}" if k == 0 else None)  # fmt: skip
    for i in range(2):
        ax.plot(steps, ex2["fc"]["x"][:, i], color=_COLORS[i], label=f"FC, client {i + 1}")
    ax.set_xscale("symlog", linthresh=10)
    ax.set_xlabel("round t")
    ax.set_ylabel("model parameter")
    ax.legend(fontsize=7)

    ax = axes[0, 2]
    found = [partition(p) for p in ex3["cfl"]["parts"]]
    names = ["{1,2},{3}", "{1,3},{2}", "{1},{2,3}"]
    ax.bar(names, [found.count(n) / len(found) for n in names],
           color=["tab:gray", "tab:red", "tab:green"])  # fmt: skip
    ax.axhline(0.5, color="black", ls=":", label="1/2")
    ax.set_title(f"(c) Clustered FL's split, {len(found)} draws (correct: {{1}},{{2,3}})")
    ax.set_xlabel("partition after the split")
    ax.set_ylabel("frequency")
    ax.legend(fontsize=7)

    ax = axes[1, 2]
    for i in range(3):
        ax.plot(steps, ex3["fc"]["x"][..., i].mean(axis=1), color=_COLORS[i],
                label=f"FC, client {i + 1} (mean over draws)")  # fmt: skip
        ax.axhline(ex3["optima"][i], color=_COLORS[i], ls=":", lw=0.8)
    ax.plot(steps, ex3["cfl"]["fedavg"].mean(axis=1), color="gray", ls="--",
            label="Clustered FL's FedAvg before the split")  # fmt: skip
    ax.set_xscale("symlog", linthresh=10)
    ax.set_xlabel("round t")
    ax.set_ylabel("model parameter")
    ax.legend(fontsize=7)

    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _summary(measured: dict[str, Any]) -> dict[str, Any]:
    """The JSON data of the report: the runs' iterates, example 3's as means over the draws."""
    ex1, ex2, ex3 = measured["example1"], measured["example2"], measured["example3"]
    return {
        "rounds": measured["rounds"],
        "draws": measured["draws"],
        "example1": {
            "eta": ex1["eta"],
            "eta_small": ex1["eta_small"],
            "myopic_x": ex1["myopic"]["x"],
            "myopic_clusters": ex1["myopic"]["labels"],
            "fc_x": ex1["fc"]["x"],
            "fc_small_x": ex1["fc_small"]["x"],
        },
        "example2": {
            **{f"{m}_models": ex2[m]["models"] for m in ("ifca-I", "ifca-II", "hypcluster")},
            "fc_x": ex2["fc"]["x"],
        },
        "example3": {
            "cfl_parts": ex3["cfl"]["parts"],
            "cfl_final": ex3["cfl"]["final"],
            "fc_final": ex3["fc"]["x"][-1],
            "fc_mean_x": ex3["fc"]["x"].mean(axis=1),
        },
    }


def report(scale: str, measured: dict[str, Any], out: Path | None = None) -> Reproduction:
    """The :class:`econ.claims.Reproduction` of ``measured``, :func:`measure`'s result at ``scale``.

    Its figure, JSON and markdown are written into ``out`` when given.
    """
    body = (
        f"Scale `{scale}`: {measured['rounds']} steps of every method; example 3 over "
        f"{measured['draws']} independent draws of the stochastic gradients. Example 1 at the "
        f"caption's η = {ETA1} (FC also at η = {ETA1_SMALL}), FC's radius 1/(2η); example 2 "
        f"at step {ETA2}, {LOCAL_STEPS} local steps (IFCA option II, HypCluster), FC's radius "
        f"{TAU2}; example 3 at step {ETA3}, FC's radius {TAU3}; {TC_ITERS} "
        "Threshold-Clustering iterations."
    )
    rep = Reproduction(
        name="failure_modes",
        title=f"{SOURCE}, Fig. 1: failure modes of existing clustering methods",
        claims=tuple(claims(measured)),
        body=body,
        figures=(FIGURE,) if out is not None else (),
        data={"scale": scale, **_summary(measured)},
    )
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        figure(measured, out / FIGURE)
        (out / "failure_modes.json").write_text(
            json.dumps(rep.to_dict(), indent=1, allow_nan=False)
        )
        (out / "failure_modes.md").write_text(rep.markdown())
    return rep


def reproduce(scale: str, out: Path | None, seeds: int | None = None) -> Reproduction:
    """Fig. 1 at ``scale``: :data:`ROUNDS` steps, ``seeds`` x :data:`DRAWS` draws of example 3.

    Writes ``failure_modes.png``, ``failure_modes.json`` and ``failure_modes.md`` into ``out``
    when given. Examples 1 and 2 are deterministic (but for the k-means++ seeding of
    Myopic-Clustering, which does not change its clusters there); the repetitions are example
    3's independent draws of the stochastic gradients, :data:`DRAWS` per seed (1 seed when
    None), all from the one root seed 0.

    Raises
    ------
    ValueError
        Unknown scale, or ``seeds`` not a positive integer.
    """
    choice("scale", scale, tuple(ROUNDS))
    n_seeds = 1 if seeds is None else positive_int("seeds", seeds)
    return report(scale, measure(ROUNDS[scale], n_seeds * DRAWS[scale]), out)

"""The claims of Werner et al. 2023 about Figure 1 (failure modes on constructed examples).

The table (:data:`CLAIMS`) is judged on the result of
:func:`collabecon.reproductions.failure_modes.measure`: every step of the text of §2.1 about
Myopic-Clustering (example 1), IFCA options I and II and HypCluster (example 2) and Clustered
FL (example 3), and §3.1.3's account of Federated-Clustering on each example. Exact
statements (printed gradients, iterates, cluster assignments) are compared exactly (to
:data:`EXACT`); convergence is read as a final distance to the optimum of at most
:data:`TOL`; "with probability 1/2" as a frequency over the draws within :data:`Z` binomial
standard errors of 1/2.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from econ.claims import Claim, ClaimSpec, evaluate

__all__ = ["CLAIMS", "EXACT", "SOURCE", "TOL", "Z", "claims", "partition"]

SOURCE = "Werner et al. 2023"
#: tolerance of exact (printed) values
EXACT = 1e-9
#: convergence: final distance to the optimum at most this
TOL = 1e-4
#: "with probability 1/2": the frequency within Z binomial standard errors of 1/2
Z = 3.0

_A = f"{SOURCE}, §2.1 and Fig. 1a"
_A_FC = f"{SOURCE}, §3.1.3 (Example 1)"
_B = f"{SOURCE}, §2.1 and Fig. 1b"
_B_FC = f"{SOURCE}, §3.1.3 (Example 2)"
_C = f"{SOURCE}, §2.1 and Fig. 1c"
_C_FC = f"{SOURCE}, §3.1.3 (Example 3)"


def partition(labels: Any) -> str:
    """The clusters of ``labels`` (one per client) as ``"{1,2},{3}"`` (clients 1-based)."""
    labels = np.asarray(labels)
    groups = [np.flatnonzero(labels == k) + 1 for k in dict.fromkeys(labels.tolist())]
    return ",".join("{" + ",".join(str(int(i)) for i in g) + "}" for g in groups)


def _close(a: Any, b: Any, tol: float = EXACT) -> bool:
    return bool(np.allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), atol=tol))


def _count(flags: np.ndarray) -> str:
    """``"k of n"``: how many of ``flags`` are true."""
    return f"{int(np.sum(flags))} of {np.size(flags)}"


def _ball(inside: np.ndarray) -> str:
    """The clients (1-based) whose gradients lie in one receiver's ball, as ``"{1,2}"``."""
    return "{" + ",".join(str(int(i) + 1) for i in np.flatnonzero(inside)) + "}"


def _values(a: Any) -> list[float]:
    return [round(float(v), 6) for v in np.asarray(a, dtype=float).ravel()]


def _half(freq: float, n: int) -> bool:
    return abs(freq - 0.5) <= Z * math.sqrt(0.25 / n)


# --------------------------------------------------------------------------- example 1


def _my(m: dict[str, Any]) -> dict[str, Any]:
    return m["example1"]["myopic"]


def _eta(m: dict[str, Any]) -> float:
    return float(m["example1"]["eta"])


def _myopic_final_gradients(m: dict[str, Any]) -> np.ndarray:
    from collabecon.reproductions.failure_modes import example1_gradients

    return np.diagonal(example1_gradients(_my(m)["x"][-1], _eta(m)))


def _fc_converges(run: dict[str, Any]) -> bool:
    return _close(run["x"][-1], [0.0, 0.0, 2.0], TOL)


def _example1() -> tuple[ClaimSpec, ...]:
    return (
        ClaimSpec(
            id="fig1a.myopic.step1-gradients",
            statement="Myopic-Clustering from x_0 = 1.5: the gradients at step 1 are 1/(2η), "
            "1/(2η) and -1/(2η)",
            where=_A,
            published=lambda m: _values(np.array([1, 1, -1]) / (2 * _eta(m))),
            measured=lambda m: _values(_my(m)["gradients"][0]),
            holds=lambda m: _close(_my(m)["gradients"][0], np.array([1, 1, -1]) / (2 * _eta(m))),
            note=lambda m: f"η = {_eta(m)}",
        ),
        ClaimSpec(
            id="fig1a.myopic.step1-clusters",
            statement="at step 1 clients {1,2} are clustered together and client {3} alone "
            "(correct)",
            where=_A,
            published="{1,2},{3}",
            measured=lambda m: partition(_my(m)["labels"][0]),
            holds=lambda m: partition(_my(m)["labels"][0]) == "{1,2},{3}",
        ),
        ClaimSpec(
            id="fig1a.myopic.step1-iterates",
            statement="after step 1 the parameters are x_1 = 1, x_2 = 1, x_3 = 2",
            where=_A,
            published=[1.0, 1.0, 2.0],
            measured=lambda m: _values(_my(m)["x"][1]),
            holds=lambda m: _close(_my(m)["x"][1], [1.0, 1.0, 2.0]),
        ),
        ClaimSpec(
            id="fig1a.myopic.step2-clusters",
            statement="at step 2 clients {2,3} are clustered together (their gradients are 0) "
            "and client {1} alone (wrong)",
            where=_A,
            published="{1},{2,3}",
            measured=lambda m: partition(_my(m)["labels"][1]),
            holds=lambda m: partition(_my(m)["labels"][1]) == "{1},{2,3}",
        ),
        ClaimSpec(
            id="fig1a.myopic.stuck",
            statement="from then on clients {2,3} are always clustered together and remain at "
            "x = 1 and x = 2",
            where=_A,
            published="{2,3} together at every step; x_2 = 1, x_3 = 2",
            measured=lambda m: {
                "steps with {2,3} together": _count(
                    _my(m)["labels"][1:, 1] == _my(m)["labels"][1:, 2]
                ),
                "x_2 range": _values([_my(m)["x"][1:, 1].min(), _my(m)["x"][1:, 1].max()]),
                "x_3 range": _values([_my(m)["x"][1:, 2].min(), _my(m)["x"][1:, 2].max()]),
            },
            holds=lambda m: bool(
                (_my(m)["labels"][1:, 1] == _my(m)["labels"][1:, 2]).all()
                and _close(_my(m)["x"][1:, 1], 1.0)
                and _close(_my(m)["x"][1:, 2], 2.0)
            ),
        ),
        ClaimSpec(
            id="fig1a.myopic.clients13-converge",
            statement="client {1} converges to its optimum x = 0 (and client {3} sits at its "
            "optimum x = 2)",
            where=_A,
            published=[0.0, 2.0],
            measured=lambda m: _values(_my(m)["x"][-1][[0, 2]]),
            holds=lambda m: _close(_my(m)["x"][-1][[0, 2]], [0.0, 2.0], TOL),
            note=lambda m: f"after {m['rounds']} steps; convergence read as within {TOL:g}",
        ),
        ClaimSpec(
            id="fig1a.myopic.saddle",
            statement="client {2} gets stuck at the saddle point x = 1 (f_2 = 1), not reaching "
            "its optimum x = 0 (f_2 = 0)",
            where=_A,
            published={"x_2": 1.0, "f_2": 1.0},
            measured=lambda m: {"x_2": float(_my(m)["x"][-1][1]), "f_2": _f2_final(m)},
            holds=lambda m: _close(_my(m)["x"][-1][1], 1.0) and _f2_final(m) > TOL,
        ),
        ClaimSpec(
            id="fig1a.myopic.collapse",
            statement="all gradients converge to 0, so at the end of the algorithm all clients "
            "are clustered together: {1,2,3}",
            where=_A,
            published="max |g_i| -> 0; {1,2,3}",
            measured=lambda m: {
                "max |g_i(x_i)|": float(np.abs(_myopic_final_gradients(m)).max()),
                "2-means clusters": partition(_my(m)["labels"][-1]),
            },
            holds=lambda m: bool(np.abs(_myopic_final_gradients(m)).max() <= TOL),
            note="the gradients are read as clustered together once all are within the "
            "tolerance of 0 (no gradient-distance clustering can then tell them apart); exact "
            "2-means keeps client 1 apart while its gradient is not exactly 0",
        ),
        ClaimSpec(
            id="fig1a.fc.gradients-at-client1",
            statement="at t = 1 Federated-Clustering computes the gradients of all clients at "
            "client {1}'s parameter x = 1: 1/(3η), 0 and -1/η",
            where=_A_FC,
            published=lambda m: _values(np.array([1 / 3, 0, -1]) / _eta(m)),
            measured=lambda m: {
                "x_1": float(m["example1"]["fc"]["x"][1][0]),
                "gradients": _values(m["example1"]["fc"]["points"][1][0]),
            },
            holds=lambda m: (
                _close(m["example1"]["fc"]["x"][1][0], 1.0)
                and _close(m["example1"]["fc"]["points"][1][0], np.array([1 / 3, 0, -1]) / _eta(m))
            ),
        ),
        ClaimSpec(
            id="fig1a.fc.clusters-12",
            statement="there FC correctly clusters {1,2} together (client 1's ball holds "
            "clients 1 and 2, not 3)",
            where=_A_FC,
            published="{1,2}",
            measured=lambda m: _ball(m["example1"]["fc"]["inside"][1][0]),
            holds=lambda m: m["example1"]["fc"]["inside"][1][0].tolist() == [True, True, False],
            note=lambda m: f"fixed radius 1/(2η) = {1 / (2 * _eta(m)):g}",
        ),
        ClaimSpec(
            id="fig1a.fc.leaves-saddle",
            statement="client {2}'s parameters update beyond the saddle point x = 1",
            where=_A_FC,
            published="x_2 < 1 after the step",
            measured=lambda m: float(m["example1"]["fc"]["x"][2][1]),
            holds=lambda m: float(m["example1"]["fc"]["x"][2][1]) < 1.0,
        ),
        ClaimSpec(
            id="fig1a.fc.converges",
            statement="with FC, client {2} converges to the global minimum x = 0 (clients 1 and "
            "3 to 0 and 2), at the figure's η",
            where=_A_FC,
            published=[0.0, 0.0, 2.0],
            measured=lambda m: _values(m["example1"]["fc"]["x"][-1]),
            holds=lambda m: _fc_converges(m["example1"]["fc"]),
            note=lambda m: (
                f"η = {_eta(m)}, after {m['rounds']} steps; near x = 0 clients 1 and 2 average "
                "curvatures 1/(3η) and f_2''(0) = 12, which gradient steps of size η follow "
                "only for η < 0.31: at η = 0.5 FC's iterates do not settle"
            ),
        ),
        ClaimSpec(
            id="fig1a.fc.converges-small-eta",
            statement="with FC, client {2} converges to the global minimum x = 0 (clients 1 and "
            "3 to 0 and 2), at a smaller η",
            where=_A_FC,
            published=[0.0, 0.0, 2.0],
            measured=lambda m: _values(m["example1"]["fc_small"]["x"][-1]),
            holds=lambda m: _fc_converges(m["example1"]["fc_small"]),
            note=lambda m: f"η = {m['example1']['eta_small']}, after {m['rounds']} steps",
        ),
    )


def _f2_final(m: dict[str, Any]) -> float:
    from collabecon.reproductions.failure_modes import example1_losses

    return float(example1_losses(_my(m)["x"][-1][1], _eta(m))[1])


# --------------------------------------------------------------------------- example 2


def _stuck(method: str, name: str) -> ClaimSpec:
    def run(m: dict[str, Any]) -> dict[str, Any]:
        return m["example2"][method]

    return ClaimSpec(
        id=f"fig1b.{method}.stuck",
        statement=f"{name}: the models never update and both clients stay (wrongly) assigned "
        "to cluster 2",
        where=_B,
        published={"models": [-1.5, 0.0], "clusters": "{1,2} in cluster 2"},
        measured=lambda m: {
            "final models": _values(run(m)["models"][-1]),
            "rounds with both in cluster 2": _count((run(m)["clusters"] == 1).all(axis=1)),
        },
        holds=lambda m: (
            _close(run(m)["models"], np.array([-1.5, 0.0]))
            and bool((run(m)["clusters"] == 1).all())
        ),
    )


def _example2() -> tuple[ClaimSpec, ...]:
    return (
        ClaimSpec(
            id="fig1b.initial-choice",
            statement="from x_{1,0} = -1.5 and x_{2,0} = 0 both clients first select cluster 2, "
            "their losses being smaller there",
            where=_B,
            published="both in cluster 2",
            measured=lambda m: {
                "f_1(-1.5), f_1(0)": _values(m["example2"]["init_losses"][:, 0]),
                "f_2(-1.5), f_2(0)": _values(m["example2"]["init_losses"][:, 1]),
            },
            holds=lambda m: bool((m["example2"]["init_losses"].argmin(axis=0) == 1).all()),
        ),
        _stuck("ifca-I", "IFCA option I"),
        _stuck("ifca-II", "IFCA option II"),
        _stuck("hypcluster", "HypCluster"),
        ClaimSpec(
            id="fig1b.fc.gradients",
            statement="Federated-Clustering first computes the clients' gradients +1 and -1 at "
            "x_{2,0} = 0",
            where=_B_FC,
            published=[1.0, -1.0],
            measured=lambda m: _values(m["example2"]["fc"]["points"][0][0]),
            holds=lambda m: _close(m["example2"]["fc"]["points"][0], [[1.0, -1.0], [1.0, -1.0]]),
        ),
        ClaimSpec(
            id="fig1b.fc.separates",
            statement="FC correctly identifies that the two clients belong to different "
            "clusters (each ball holds only its own client, every step) and they converge to "
            "their optima -0.5 and 0.5",
            where=_B_FC,
            published={"clusters": "{1},{2}", "x": [-0.5, 0.5]},
            measured=lambda m: {
                "steps with each ball to itself": _count(_own_balls(m["example2"]["fc"]["inside"])),
                "x": _values(m["example2"]["fc"]["x"][-1]),
            },
            holds=lambda m: (
                bool(_own_balls(m["example2"]["fc"]["inside"]).all())
                and _close(m["example2"]["fc"]["x"][-1], [-0.5, 0.5], TOL)
            ),
        ),
    )


def _own_balls(inside: np.ndarray) -> np.ndarray:
    """Per round (axis 0): whether every receiver's ball holds only its own client."""
    eye = np.eye(inside.shape[-1], dtype=bool)
    return (inside == eye).reshape(inside.shape[0], -1).all(axis=1)


# --------------------------------------------------------------------------- example 3


def _ex3(m: dict[str, Any]) -> dict[str, Any]:
    return m["example3"]


def _cfl_parts(m: dict[str, Any]) -> np.ndarray:
    return _ex3(m)["cfl"]["parts"]


def _split23(m: dict[str, Any]) -> float:
    parts = _cfl_parts(m)
    return float((parts[:, 1] != parts[:, 2]).mean())


def _printed_partition(m: dict[str, Any]) -> float:
    return float((_cfl_parts(m) == np.array([0, 0, 1])).all(axis=1).mean())


def _error(final: np.ndarray, optima: np.ndarray) -> float:
    """Mean over draws of the largest distance of a client's final model to its optimum."""
    return float(np.abs(final - optima).max(axis=-1).mean())


def _example3() -> tuple[ClaimSpec, ...]:
    return (
        ClaimSpec(
            id="fig1c.fedavg-optimum",
            statement="the FedAvg optimum is x* = 1/4",
            where=_C,
            published=0.25,
            measured=lambda m: {
                "root of the mean expected gradient": round(_ex3(m)["exact_fedavg"], 6),
                "FedAvg runs (mean final iterate)": round(
                    float(_ex3(m)["cfl"]["fedavg"][-1].mean()), 4
                ),
            },
            holds=lambda m: abs(_ex3(m)["exact_fedavg"] - 0.25) <= EXACT,
            note="the mean expected gradient is x - 1/3; 1/4 is the optimum of clients 1 and 2 "
            "alone",
        ),
        ClaimSpec(
            id="fig1c.gradients-at-quarter",
            statement="at x = 1/4 the gradients are g_1 = 1/4, g_2 = -1/4 and g_3 = 1/4 with "
            "probability 1/2",
            where=_C,
            published={"g_1": 0.25, "g_2": -0.25, "P(g_3 = 1/4)": 0.5},
            measured=lambda m: {
                "g_1": float(_ex3(m)["at_quarter"][0, 0]),
                "g_2": float(_ex3(m)["at_quarter"][0, 1]),
                "P(g_3 = 1/4)": round(_quarter_freq(m), 4),
            },
            holds=lambda m: (
                _close(_ex3(m)["at_quarter"][:, :2], [0.25, -0.25])
                and _half(_quarter_freq(m), len(_ex3(m)["at_quarter"]))
            ),
            note=lambda m: f"{len(_ex3(m)['at_quarter'])} draws",
        ),
        ClaimSpec(
            id="fig1c.cfl.partition",
            statement="Clustered FL partitions the clients into {1,2} and {3} with probability 1/2",
            where=_C,
            published=0.5,
            measured=lambda m: {
                "P({1,2},{3})": round(_printed_partition(m), 4),
                **{
                    f"P({p})": round(q, 4)
                    for p, q in _partition_freqs(m).items()
                    if p != "{1,2},{3}"
                },
            },
            holds=lambda m: _half(_printed_partition(m), len(_cfl_parts(m))),
            note="CFL's cosine-similarity bipartition at the FedAvg point, where g_1 > 0 > g_2: "
            "client 3 joins client 1 when g_3 > 0 and client 2 when g_3 < 0",
        ),
        ClaimSpec(
            id="fig1c.cfl.separates-2-3",
            statement="with probability 1/2 Clustered FL separates clients 2 and 3 (one "
            "cluster) and never corrects this initial error",
            where=_C,
            published=0.5,
            measured=lambda m: {
                "P(2, 3 apart)": round(_split23(m), 4),
                "mean final error when apart": _apart_error(m),
            },
            holds=lambda m: _half(_split23(m), len(_cfl_parts(m))),
            note=lambda m: f"{len(_cfl_parts(m))} draws; with K = 2 parts no further split",
        ),
        ClaimSpec(
            id="fig1c.fc.avoids",
            statement="Federated-Clustering avoids this mistake by considering all clients at "
            "every step (read: its clients end nearer their clusters' optima than Clustered "
            "FL's)",
            where=_C_FC,
            published="FC < CFL",
            measured=lambda m: {
                "FC": round(_error(_ex3(m)["fc"]["x"][-1], _ex3(m)["optima"]), 4),
                "CFL": round(_error(_ex3(m)["cfl"]["final"], _ex3(m)["optima"]), 4),
            },
            holds=lambda m: (
                _error(_ex3(m)["fc"]["x"][-1], _ex3(m)["optima"])
                < _error(_ex3(m)["cfl"]["final"], _ex3(m)["optima"])
            ),
            note=lambda m: (
                "mean over draws of the largest distance of a client's final model to its "
                "cluster's optimum (client 3's stochastic gradient keeps it at a noise floor); "
                f"FC's balls held only the client's own gradient in {_alone(m):.0%} of the "
                "receiver-steps; the gap 1/2 between the clusters' expected gradients equals "
                "client 3's noise, outside Theorem 1's separation condition"
            ),
        ),
    )


def _quarter_freq(m: dict[str, Any]) -> float:
    return float(np.isclose(_ex3(m)["at_quarter"][:, 2], 0.25).mean())


def _partition_freqs(m: dict[str, Any]) -> dict[str, float]:
    found = [partition(p) for p in _cfl_parts(m)]
    return {p: found.count(p) / len(found) for p in sorted(set(found))}


def _apart_error(m: dict[str, Any]) -> float | None:
    parts = _cfl_parts(m)
    apart = parts[:, 1] != parts[:, 2]
    if not apart.any():
        return None
    return _error(_ex3(m)["cfl"]["final"][apart], _ex3(m)["optima"])


def _alone(m: dict[str, Any]) -> float:
    inside = _ex3(m)["fc"]["inside"]
    eye = np.eye(inside.shape[-1], dtype=bool)
    return float((inside == eye).all(axis=-1).mean())


#: The paper's claims about Fig. 1 and §3.1.3 on
#: :func:`collabecon.reproductions.failure_modes.measure`'s result.
CLAIMS: tuple[ClaimSpec, ...] = (*_example1(), *_example2(), *_example3())


def claims(measured: dict[str, Any]) -> list[Claim]:
    """The paper's claims about Fig. 1 (:data:`CLAIMS`) on ``measured``."""
    return evaluate(CLAIMS, measured)

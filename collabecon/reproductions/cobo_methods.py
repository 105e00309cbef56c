"""The methods and federations of CoBo's cross-silo and cross-device experiments.

Hashemi, He and Jaggi 2024, "CoBo: Collaborative Learning via Bilevel Optimization",
Sections 4.1-4.2: every method's registered algorithm and parameters (:data:`METHODS`,
:func:`method_parameters`), the official code's momentum (:data:`CODE_MOMENTUM`), the paper's
learning rates and the grid searched on validation data, the two settings (:data:`SETTINGS`)
and the cross-silo federations of the ablation of Figure 3 (:data:`ABLATION_SETTINGS`).
:mod:`collabecon.reproductions.cobo` trains them.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from econ.validation import choice
from learning.algorithms import ALGORITHMS
from learning.optim import SGDConfig

__all__ = [
    "ABLATIONS",
    "ABLATION_SETTINGS",
    "BATCH",
    "CODE_MOMENTUM",
    "CODE_PARAMETERS",
    "DITTO_K",
    "LEARNING_RATES",
    "LR_GRID",
    "METHODS",
    "MODEL",
    "MOMENTUM_MODES",
    "SETTINGS",
    "VALIDATION_SHARE",
    "Setting",
    "ablation_setting",
    "check_methods",
    "finetune_steps",
    "method_parameters",
]

#: Method key -> (registered algorithm, parameters); ``fedavg-ft``'s fine-tuning steps and
#: CoBo's ``switch_at`` are filled per run from the number of rounds.
METHODS: dict[str, tuple[str, dict[str, Any]]] = {
    "cobo": (
        "cobo",
        {
            "rho": 0.05,
            "gamma": 0.1,
            "schedule": "mixed",
            "decay": "1/sqrt(t)",
            "pair_batch_size": 128,
        },
    ),
    "oracle": ("oracle", {}),
    "ditto": ("ditto", {"lam": 1.0}),
    "local": ("local", {}),
    "fedavg": ("fedavg", {}),
    "fedavg-ft": ("fedavg", {}),
    "ifca": ("ifca", {}),
    "fc": ("federated-clustering", {}),
}

MOMENTUM_MODES = ("none", "code")

#: ``momentum="code"``: the official code's EMA momentum, and what each method
#: needs to keep it across rounds (``fc`` keeps raw gradients, as in the code).
CODE_MOMENTUM = SGDConfig(1.0, momentum=0.9, dampening=0.1)  # lr replaced per method
_OWN_BUFFER = {"momentum": CODE_MOMENTUM.momentum, "dampening": CODE_MOMENTUM.dampening}
CODE_PARAMETERS: dict[str, dict[str, Any]] = {
    "cobo": {},
    "oracle": {"keep_momentum": "group"},
    "ditto": {"variant": "as-run", **_OWN_BUFFER},
    "local": {"keep_momentum": "client"},
    "fedavg": {"keep_momentum": "client"},
    "fedavg-ft": {"keep_momentum": "client"},
    "ifca": _OWN_BUFFER,
}
DITTO_K = 2  # clients per round of the official code's Ditto

#: The paper's learning rates, tuned per method (appendix "Experimental Details").
LEARNING_RATES: dict[str, float] = {
    "cobo": 0.01,
    "oracle": 0.01,
    "ditto": 0.1,
    "local": 0.01,
    "fedavg": 0.01,
    "fedavg-ft": 0.01,
    "ifca": 0.01,
    "fc": 0.05,
}

#: The learning rates every method chooses from on validation data: the three rates the paper
#: settled on (appendix "Experimental Details").
LR_GRID: tuple[float, ...] = (0.01, 0.05, 0.1)

#: Share of every client's training examples held out as validation data.
VALIDATION_SHARE = 0.2

#: Fine-tuning steps of fedavg-ft, as a share of the rounds (the paper gives none).
_FINETUNE_SHARE = 0.1
_SWITCH_SHARE = 0.02  # constant pair sampling of CoBo's mixed schedule (code: 800 of 40k)
#: The model of every method (784-200-10) and its minibatch size.
MODEL = "mlp"
BATCH = 128


@dataclass(frozen=True, slots=True)
class Setting:
    """A federation of ``mnist5k``.

    The partition, its parameters, the methods run by default, the modulus of the labels
    (None: kept) and IFCA's share of clients per round.
    """

    partition: str
    clients: int
    partition_params: dict[str, Any]
    methods: tuple[str, ...]
    label_modulus: int | None = None
    ifca_share: float = 1.0


SETTINGS: dict[str, Setting] = {
    "cross-silo": Setting("private-label", 8, {"n_clusters": 4, "replicate": True}, tuple(METHODS)),
    # Federated-Clustering's O(n^2) gradients per round leave it out, as in the paper's Table 2
    "cross-device": Setting(
        "pathological",
        20,
        {"classes_per_client": 2, "sizes": (6, 5, 4, 3, 2)},
        tuple(m for m in METHODS if m != "fc"),
        label_modulus=2,
        ifca_share=0.1,
    ),
}


#: Figure 3's sweeps of the cross-silo federation (Section 4.1; the figure prints no values):
#: the share of the data set each cluster gets (4 clusters of 2), the number of clusters of 2
#: clients, and the clients per cluster (4 clusters, each cluster's data split among them).
ABLATIONS: dict[str, tuple[float, ...]] = {
    "fraction": (0.125, 0.25, 0.5, 1.0),
    "clusters": (2, 4, 6, 8),
    "cluster-size": (2, 3, 4, 6),
}


def ablation_setting(factor: str, value: float) -> Setting:
    """The cross-silo federation with one factor of Figure 3 set to ``value``, CoBo only."""
    choice("factor", factor, tuple(ABLATIONS))
    clusters, size, fraction = 4, 2, 1.0
    if factor == "fraction":
        fraction = float(value)
    elif factor == "clusters":
        clusters = int(value)
    else:
        size = int(value)
    params = {"n_clusters": clusters, "replicate": True, "fraction": fraction}
    return Setting("private-label", clusters * size, params, ("cobo",))


#: Every federation of Figure 3, by name (``cross-silo/<factor>=<value>``).
ABLATION_SETTINGS: dict[str, Setting] = {
    f"cross-silo/{factor}={value:g}": ablation_setting(factor, value)
    for factor, values in ABLATIONS.items()
    for value in values
}


def check_methods(names: Sequence[str]) -> list[str]:
    """``names`` when every one is a key of :data:`METHODS`, else ValueError naming them."""
    unknown = sorted(set(names) - set(METHODS))
    if unknown:
        raise ValueError(f"methods must be among {', '.join(METHODS)}, got {', '.join(unknown)}")
    for key in names:
        _ensure_registered(METHODS[key][0])
    return list(names)


def _ensure_registered(algorithm: str) -> None:
    """Import the module of a registered name when the package has not yet.

    ``federated-clustering`` -> ``learning.algorithms.federated_clustering``.
    """
    if algorithm not in ALGORITHMS:
        try:
            importlib.import_module(f"learning.algorithms.{algorithm.replace('-', '_')}")
        except ModuleNotFoundError as exc:
            raise ValueError(f"algorithm {algorithm!r} is not available: {exc}") from exc


def finetune_steps(rounds: int) -> int:
    """Local fine-tuning steps of ``fedavg-ft``: the last 10% of the rounds.

    None in a one-round run. The steps take those rounds' place, so that the budget of
    ``fedavg-ft`` is every other method's.
    """
    return 0 if rounds < 2 else max(1, round(_FINETUNE_SHARE * rounds))


def method_parameters(key: str, rounds: int, schedule: str, momentum: str) -> dict[str, Any]:
    """The parameters of method ``key`` for a run of ``rounds`` rounds."""
    params = dict(METHODS[key][1])
    if momentum == "code":
        params.update(CODE_PARAMETERS.get(key, {}))
    if key == "fedavg-ft":
        params["finetune_steps"] = finetune_steps(rounds)
    if key == "cobo":
        params.update(schedule=schedule, switch_at=max(1, round(_SWITCH_SHARE * rounds)))
    return params

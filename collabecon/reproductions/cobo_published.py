"""The numbers and names the CoBo paper prints for its experiments (Tables 1 and 2).

Hashemi, He and Jaggi 2024 ("CoBo: Collaborative Learning via Bilevel Optimization",
NeurIPS 2024): Table 2's accuracies, their spread, the share of clients improved over Local
and the losses, per setting and method, and Table 1's accuracy and loss per pair-sampling
strategy (Section 4.1), with the methods' and strategies' names as printed. The claims about
them are :mod:`collabecon.reproductions.cobo_claims` and
:mod:`collabecon.reproductions.cobo_sampling_claims`.
"""

from __future__ import annotations

__all__ = [
    "NAMES",
    "PAPER",
    "PAPER_IMPROVED",
    "PAPER_LOSS",
    "PAPER_REF",
    "PAPER_SAMPLING",
    "PAPER_STD",
    "SAMPLING_NAMES",
]

PAPER_REF = "Hashemi, He and Jaggi 2024 (CoBo)"

#: Method key -> its name in the paper.
NAMES = {
    "cobo": "CoBo",
    "oracle": "Oracle",
    "ditto": "Ditto",
    "local": "Local",
    "fedavg": "FedAvg",
    "fedavg-ft": "Fine-tuning FedAvg",
    "ifca": "IFCA",
    "fc": "FC",
}

#: Table 2 of the paper (mean accuracy, CIFAR-100 with ResNet-9); FC was not run
#: cross-device.
PAPER: dict[str, dict[str, float]] = {
    "cross-silo": {
        "cobo": 0.746,
        "oracle": 0.754,
        "ditto": 0.735,
        "local": 0.649,
        "fedavg": 0.188,
        "fedavg-ft": 0.702,
        "ifca": 0.186,
        "fc": 0.551,
    },
    "cross-device": {
        "cobo": 0.796,
        "oracle": 0.836,
        "ditto": 0.703,
        "local": 0.549,
        "fedavg": 0.539,
        "fedavg-ft": 0.589,
        "ifca": 0.456,
    },
}

#: Table 2's "±" (standard deviation over the paper's runs).
PAPER_STD: dict[str, dict[str, float]] = {
    "cross-silo": {
        "cobo": 0.002,
        "oracle": 0.002,
        "ditto": 0.003,
        "local": 0.001,
        "fedavg": 0.001,
        "fedavg-ft": 0.002,
        "ifca": 0.001,
        "fc": 0.004,
    },
    "cross-device": {
        "cobo": 0.004,
        "oracle": 0.003,
        "ditto": 0.001,
        "local": 0.001,
        "fedavg": 0.001,
        "fedavg-ft": 0.001,
        "ifca": 0.008,
    },
}

#: Table 2's "Imp.(%)": the share of clients whose model beats Local's (FC not run
#: cross-device; Local itself has none).
PAPER_IMPROVED: dict[str, dict[str, float]] = {
    "cross-silo": {
        "fedavg": 0.0,
        "fedavg-ft": 0.0,
        "ditto": 100.0,
        "ifca": 0.0,
        "fc": 0.0,
        "cobo": 100.0,
        "oracle": 100.0,
    },
    "cross-device": {
        "fedavg": 29.0,
        "fedavg-ft": 94.0,
        "ditto": 100.0,
        "ifca": 4.0,
        "cobo": 100.0,
        "oracle": 100.0,
    },
}


#: Table 2's "Loss" columns (mean test loss; no spread printed).
PAPER_LOSS: dict[str, dict[str, float]] = {
    "cross-silo": {
        "local": 1.67,
        "fedavg": 2.66,
        "fedavg-ft": 1.77,
        "ditto": 1.55,
        "ifca": 2.75,
        "fc": 1.79,
        "cobo": 1.08,
        "oracle": 1.07,
    },
    "cross-device": {
        "local": 1.40,
        "fedavg": 1.79,
        "fedavg-ft": 1.88,
        "ditto": 1.21,
        "ifca": 2.15,
        "cobo": 0.97,
        "oracle": 0.70,
    },
}

#: Table 1 (Section 4.1): CoBo's cross-silo accuracy (%) and loss under each pair-sampling
#: strategy (:class:`learning.algorithms.cobo_steps.PairSchedule` names).
PAPER_SAMPLING: dict[str, tuple[float, float]] = {
    "constant": (73.05, 1.104),
    "time": (73.18, 1.226),
    "mixed": (74.77, 1.081),
    "all": (74.93, 1.278),
}
#: The rows of Table 1 as printed.
SAMPLING_NAMES = {
    "constant": "Constant (O(1/n))",
    "time": "Time-dependent (O(1/t))",
    "mixed": "Mixed",
    "all": "No Sampling (Oracle)",
}

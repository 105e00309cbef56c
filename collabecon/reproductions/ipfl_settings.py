r"""IP-FL's comparisons beyond 10:90 and the paper's tables printed for them.

IP-FL is Khan et al., "IP-FL: Incentivized and Personalized Federated Learning". Each entry of
:data:`COMPARISONS` is one run of :func:`collabecon.reproductions.ipfl_comparison.compare`
(every method the same budget, each its own learning rate chosen on validation data) in a
setting of the paper, as an analogue on the digits at hand:

- ``rotation`` and ``labels``: the 10:90 mixtures of :mod:`collabecon.reproductions.ipfl`;
- ``30:70``, ``linear``, ``random``: the other mixtures of §6.1 (rotation), behind the
  convergence curves (Fig. 2, 10:90 and 30:70; Fig. 9, linear and random) and the PMA CDFs
  (Fig. 3);
  and Table 4's accuracies at the four mixtures;
- ``40:60``: the slightly non-IID mixture of App. D.5 (Table 11);
- ``pathological``: 2 classes per client, 5 class groups and 5 clusters (App. D.4, Fig. 8;
  the analogue of App. D.3's 4 of 52 EMNIST classes per client, Table 10, whose 4 does not
  divide the 10 digit classes);
- ``synthetic-*``: the Synthetic CIFAR10 setting of §6.1 at each mixture, every client's test
  data drawn from the reverse of its training mixture (Tables 2, 7, 8, 9; Fig. 4).

:data:`EMNIST_COMPARISONS` are the paper's EMNIST settings themselves, run on the user's copy
of EMNIST: the 52 letter classes of the ``byclass`` split (§6.1: "26 lowercase and 26
uppercase letters"), :math:`D_B` the images rotated by 90 degrees (feature-shift EMNIST,
§6.4), at the four mixtures of §6.1 (Table 4, Fig. 6; 10:90 is Table 5's), at 40:60
(Table 11) and with 4 classes per client in 13 class groups (Table 10). Their claims are
:data:`~collabecon.reproductions.ipfl_settings_claims.EMNIST_SPECS`.

The claims about them are :mod:`collabecon.reproductions.ipfl_settings_claims`.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "COMPARISONS",
    "CONVERGENCE",
    "EMNIST_COMPARISONS",
    "MIXTURES",
    "TABLE2",
    "TABLE4",
    "TABLE7",
    "TARGET_SHARE",
]

#: The mixtures of the synthetic tables and the convergence figures (§6.1).
MIXTURES = ("10:90", "30:70", "linear", "random")

#: Name -> the fields of the base run (:data:`collabecon.reproductions.ipfl.SCALE_RUNS`)
#: each comparison replaces.
COMPARISONS: dict[str, dict[str, Any]] = {
    "rotation": {"shift": "rotation", "partition": "10:90"},
    "labels": {"shift": "labels", "partition": "10:90"},
    "30:70": {"partition": "30:70"},
    "linear": {"partition": "linear"},
    "random": {"partition": "random"},
    "40:60": {"partition": "40:60"},
    "pathological": {"partition": "pathological", "classes_per_client": 2, "clusters": 5},
    **{f"synthetic-{m}": {"partition": m, "flip_test_view": True} for m in MIXTURES},
}

#: The EMNIST comparisons: name -> the fields of the EMNIST base run
#: (:data:`collabecon.reproductions.ipfl.EMNIST_RUNS`) each replaces.
EMNIST_COMPARISONS: dict[str, dict[str, Any]] = {
    **{f"emnist-{m}": {"partition": m} for m in MIXTURES},
    "emnist-40:60": {"partition": "40:60"},
    "emnist-pathological": {"partition": "pathological", "classes_per_client": 4, "clusters": 13},
}

#: The comparison behind each mixture of the convergence figures, with its figure and place.
CONVERGENCE = {
    "10:90": ("rotation", "Fig. 2(a) and §6.3 (Convergence speed)"),
    "30:70": ("30:70", "Fig. 2(b) and §6.3 (Convergence speed)"),
    "linear": ("linear", "Fig. 9(a) and App. E"),
    "random": ("random", "Fig. 9(b) and App. E"),
}
#: Table 4 (EMNIST): personalised test accuracy (%) of IP-FL and of the methods the toolkit
#: implements, per mixture (the comparison names of :data:`CONVERGENCE`).
TABLE4: dict[str, dict[str, float]] = {
    "10:90": {"ip-fl": 87.5, "ditto": 85.8, "fedprox": 75.2, "per-fedavg": 87.5},
    "30:70": {"ip-fl": 85.1, "ditto": 76.0, "fedprox": 79.7, "per-fedavg": 76.6},
    "linear": {"ip-fl": 83.4, "ditto": 75.3, "fedprox": 82.8, "per-fedavg": 80.8},
    "random": {"ip-fl": 86.2, "ditto": 77.8, "fedprox": 80.9, "per-fedavg": 83.3},
}
#: The share of a method's final accuracy that its curve must reach to have converged.
TARGET_SHARE = 0.9

#: Table 2 (Synthetic CIFAR10): each cluster model's printed accuracy (%) and, in
#: parentheses, the distribution it is best on, per method and mixture.
TABLE2: dict[str, dict[str, tuple[tuple[float, int], tuple[float, int]]]] = {
    "ip-fl": {
        "10:90": ((62.7, 0), (71.0, 1)),
        "30:70": ((53.3, 0), (61.9, 1)),
        "linear": ((61.7, 0), (59.4, 1)),
        "random": ((66.9, 0), (58.4, 1)),
    },
    "fedsoft": {
        "10:90": ((32.5, 0), (38.6, 1)),
        "30:70": ((20.3, 0), (23.6, 0)),
        "linear": ((34.42, 1), (49.6, 1)),
        "random": ((21.6, 1), (33.12, 1)),
    },
    "ifca": {
        "10:90": ((30.5, 0), (36.2, 0)),
        "30:70": ((18.8, 0), (20.4, 0)),
        "linear": ((31.2, 1), (46.3, 1)),
        "random": ((18.7, 1), (31.24, 1)),
    },
    "fedem": {
        "10:90": ((29.7, 0), (37.6, 0)),
        "30:70": ((17.3, 0), (20.6, 0)),
        "linear": ((30.6, 1), (45.8, 1)),
        "random": ((18.4, 1), (30.4, 1)),
    },
}
#: Table 7 (IP-FL, Synthetic CIFAR10): accuracy (%) of c0, c1 (rows) on θ0, θ1 (columns).
TABLE7: dict[str, tuple[tuple[float, float], tuple[float, float]]] = {
    "10:90": ((62.78, 1.5), (2.56, 70.96)),
    "30:70": ((53.28, 30.38), (34.32, 61.94)),
    "linear": ((61.66, 30.94), (12.08, 59.44)),
    "random": ((66.9, 19.12), (19.48, 58.42)),
}

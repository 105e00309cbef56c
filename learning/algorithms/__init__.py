"""Federated algorithms on one round loop, registered by name in :data:`ALGORITHMS`.

See :mod:`learning.algorithms.base` for the protocol. Importing this package registers
every algorithm module listed here.
"""

from learning.algorithms import (  # noqa: F401  (importing registers each method)
    averaging,
    cfl,
    cobo,
    ditto,
    fedem,
    federated_clustering,
    fedprox,
    fedsoft,
    hypcluster,
    ifca,
    knn_per,
    perfedavg,
    robust_fedavg,
)
from learning.algorithms.base import (
    ALGORITHMS,
    Algorithm,
    Context,
    FederatedAlgorithm,
    LocalTraining,
    SplitAlgorithm,
    build_algorithm,
    check_algorithm,
    register,
)
from learning.algorithms.exchanges import Dispatch, State

__all__ = [
    "ALGORITHMS",
    "Algorithm",
    "Context",
    "Dispatch",
    "FederatedAlgorithm",
    "LocalTraining",
    "SplitAlgorithm",
    "State",
    "averaging",
    "build_algorithm",
    "check_algorithm",
    "register",
]

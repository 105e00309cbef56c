"""Federated algorithms on one round loop, registered by name in :data:`ALGORITHMS`.

See :mod:`learning.algorithms.base` for the protocol. Importing this package registers
every algorithm module listed here.
"""

from learning.algorithms import averaging
from learning.algorithms import (  # noqa: F401  (registers the clustering methods)
    cfl,
    ditto,
    federated_clustering,
    hypcluster,
    ifca,
    knn_per,
)
from learning.algorithms.base import (
    ALGORITHMS,
    Algorithm,
    Context,
    FederatedAlgorithm,
    LocalTraining,
    State,
    build_algorithm,
    check_algorithm,
    register,
)

__all__ = [
    "ALGORITHMS",
    "Algorithm",
    "Context",
    "FederatedAlgorithm",
    "LocalTraining",
    "State",
    "averaging",
    "build_algorithm",
    "check_algorithm",
    "register",
]

"""Federated algorithms on one round loop, registered by name in :data:`ALGORITHMS`.

See :mod:`learning.algorithms.base` for the protocol. Importing this package imports every
module in it, so that each registers its algorithms: a new algorithm is one module here, or
one class in another distribution that names it in the entry-point group
``collabecon.algorithms`` (a plugin, read when :data:`ALGORITHMS` is first consulted; see
:class:`econ.plugins.PluginRegistry`).
"""

import importlib
import pkgutil

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

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

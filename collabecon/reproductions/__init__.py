"""The papers' experiments, reproduced: one module per experiment.

The modules are called by the command line, the notebooks and the tests alike.

Each module in :data:`REPRODUCTIONS` defines ``reproduce(scale, out, seeds=None)`` returning an
:class:`econ.claims.Reproduction`: every claim the paper makes about that experiment, held or
not, measured next to published, with its tables and the figures it wrote into ``out``.
``scale`` is ``"small"`` (CPU, minutes) or ``"paper"`` (the paper's sizes); ``seeds`` is the
number of seeds (each module has its default). ``collabecon reproduce`` runs them all.
"""

from __future__ import annotations

#: name -> module holding ``reproduce(scale, out, seeds=None)``.
REPRODUCTIONS: dict[str, str] = {
    "table1": "collabecon.reproductions.clustered_mnist",
    "clustering": "collabecon.reproductions.clustering",
    "cobo": "collabecon.reproductions.cobo",
    "ipfl": "collabecon.reproductions.ipfl",
    "defection_free": "collabecon.reproductions.defection_free",
    "pricing": "collabecon.reproductions.price_discrimination",
    "privacy": "collabecon.reproductions.privacy",
    "byzantine": "collabecon.reproductions.byzantine_mnist",
    "failure_modes": "collabecon.reproductions.failure_modes",
    "cifar_clustering": "collabecon.reproductions.cifar_clustering",
}

SCALES = ("small", "paper")

"""The papers' experiments, reproduced: one module per experiment.

The modules are called by the command line, the notebooks and the tests alike.

Each module in :data:`REPRODUCTIONS` defines ``reproduce(scale, out, seeds=None)`` returning an
:class:`econ.claims.Reproduction`: every claim the paper makes about that experiment, held or
not, measured next to published, with its tables and the figures it wrote into ``out``.
``scale`` is ``"small"`` (CPU, minutes) or ``"paper"`` (the paper's sizes); ``seeds`` is the
number of seeds (each module has its default). ``collabecon reproduce`` runs them all.
Installed distributions add reproductions of their own: a module named in the entry-point
group ``collabecon.reproductions`` (:class:`econ.plugins.PluginRegistry`).
"""

from __future__ import annotations

from types import ModuleType

from econ.claims import ClaimSpec
from econ.plugins import PluginRegistry


def _plugin_reproduction(name: str, loaded: object) -> str:
    """The module name of the entry point ``name`` of ``collabecon.reproductions``.

    The entry point names a module (``name = "package.module"``, no ``:attribute``) that
    defines ``reproduce`` and its table of claims ``CLAIMS``.

    Raises
    ------
    TypeError
        If ``loaded`` is not such a module.
    """
    if not isinstance(loaded, ModuleType):
        raise TypeError(f"{loaded!r} is not a module (name the module, without ':attribute')")
    if not callable(getattr(loaded, "reproduce", None)):
        raise TypeError(f"module {loaded.__name__} defines no reproduce(scale, out, seeds=None)")
    claims = getattr(loaded, "CLAIMS", None)
    if not (isinstance(claims, tuple) and all(isinstance(c, ClaimSpec) for c in claims)):
        raise TypeError(f"module {loaded.__name__} defines no CLAIMS tuple of ClaimSpec")
    return loaded.__name__


#: name -> module holding ``reproduce(scale, out, seeds=None)``: the built-ins, then the
#: modules of the entry-point group ``collabecon.reproductions``, read on first consultation.
REPRODUCTIONS: PluginRegistry[str] = PluginRegistry(
    "collabecon.reproductions",
    "reproduction",
    _plugin_reproduction,
    entries={
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
    },
)

SCALES = ("small", "paper")

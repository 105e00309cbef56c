"""Games, dynamics and mechanisms of collaborative learning.

``games`` builds on ``econ`` with numpy; it never imports torch or ``learning``
(``tests/test_layering.py``).

Public modules (each names its own public API in ``__all__``):

- ``price_discrimination``: the price-discrimination game of Werner (2024), ch. 4: the one-shot
  equilibrium (Theorem 6), commitment, and repeated play of learning sellers against
  belief-consistent buyers (Algorithm 6);
- ``defection_free``: collaboration between two competing firms as decision rules over model
  qualities (Werner 2024, ch. 3, Algorithm 5), its propositions and figures;
- ``quadratic_firms``: Algorithm 5 on two firms with convex quadratic losses, no torch;
- ``ipfl``: IP-FL's token economy, scheduler and contributions (Khan et al.), and its
  statements registered as propositions (``games.ipfl.propositions``).

Submodules load on first use: ``games.price_discrimination`` works after ``import games``.
"""

from __future__ import annotations

import importlib
from typing import Any

#: The public modules, loaded on first attribute access.
MODULES = ("defection_free", "ipfl", "price_discrimination", "quadratic_firms")

__all__ = ["defection_free", "ipfl", "price_discrimination", "quadratic_firms"]


def __getattr__(name: str) -> Any:
    if name in MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

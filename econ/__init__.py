"""Closed forms and optimisation for the economics of collaborative learning.

``econ`` is the bottom layer of collabecon: numpy, scipy, sympy and cvxpy only. It never
imports ``games``, ``learning`` or torch (``tests/test_layering.py`` holds it to that).

Public modules (each names its own public API in ``__all__``):

- ``duopoly``: Bertrand competition of two model qualities (Werner 2024, ch. 3, Lemmas 21-23)
  and its Cournot variant;
- ``oligopoly``: the same market with any number of firms;
- ``population``: distributions of consumer types other than :math:`U[0, 1]`;
- ``population_market``: the n-firm market under such a population;
- ``market``: the market that a set of trained models' qualities creates, round by round;
- ``bargaining``: the Nash bargaining solution of the duopoly (ch. 3, §3.4);
- ``nash_bargaining``: the Nash bargaining solution of any two players over a box of parameters;
- ``quality_bargaining``: the Nash bargaining over the qualities of n firms, in any market;
- ``quality_caps``: the low firm's improvement caps of Algorithm 5 (ch. 3, §3.4, p. 64);
- ``privacy``: privacy-accuracy utilities, existence and optimal protocols (Tsoy et al. 2024);
- ``qualities``: :class:`ModelQualities`, the seam through which trained models reach markets;
- ``propositions``: the registry of checked lemmas, propositions and theorems;
- ``claims``: a reproduction's claims, the paper's number next to the measured one;
- ``outputs``: JSON-ready results and tables;
- ``validation``: the input checks.

Submodules load on first use: ``econ.duopoly`` works after ``import econ``.
"""

from __future__ import annotations

import importlib
from typing import Any

from econ.qualities import ModelQualities

#: The public modules, loaded on first attribute access.
MODULES = (
    "bargaining",
    "quality_caps",
    "claims",
    "duopoly",
    "market",
    "nash_bargaining",
    "oligopoly",
    "outputs",
    "population",
    "population_market",
    "privacy",
    "propositions",
    "qualities",
    "quality_bargaining",
    "validation",
)

__all__ = ["ModelQualities", *sorted(MODULES)]


def __getattr__(name: str) -> Any:
    if name in MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

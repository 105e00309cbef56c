"""Closed forms and optimisation for the economics of collaborative learning.

``econ`` is the bottom layer of collabecon: numpy, scipy, sympy and cvxpy only. It never
imports ``games``, ``learning`` or torch (``tests/test_layering.py`` holds it to that).
"""

from econ.qualities import ModelQualities

__all__ = ["ModelQualities"]

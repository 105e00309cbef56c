"""Statements about the learning algorithms, checked without torch.

The theorems and lemmas of the learning papers (CoBo's convergence results, for one) are
registered here as propositions, next to the backend whose algorithms they describe. These
modules import numpy, scipy and sympy only, so that ``collabecon verify`` loads them
without torch (``tests/test_layering.py``).
"""

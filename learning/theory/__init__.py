"""Statements about the learning algorithms, checked without torch.

The theorems and lemmas of the learning papers (Federated-Clustering's and CoBo's, for two)
are registered here as propositions, next to the backend whose algorithms they describe. The
constructions they speak about (quadratic clients and clusters, exact expected trajectories,
the bounds as corrected) live in plain modules such as :mod:`learning.theory.clustering` and
:mod:`learning.theory.quadratic`; the registered statements only in modules named
``propositions`` or ``<name>_propositions``, each beside the module of its construction
(:mod:`learning.theory.clustering_propositions` beside :mod:`learning.theory.clustering`).
These modules import numpy, scipy and sympy only, so that ``collabecon verify`` loads them
without torch (``tests/test_layering.py``).
"""
